"""`sowsched cuc` and `sowsched cuc-study`: one JSON document on stdout, bad input refused with exit 2."""

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cli.main import main


def tiny_file(tmp_path: Path) -> Path:
    """14 days of a noisy daily season for one VM type (the real files take minutes in the study)."""
    rng = np.random.default_rng(0)
    t = np.arange(336)
    y = np.round(1000 + 80 * np.sin(2 * np.pi * t / 24) + rng.normal(0, 15, t.size))
    lines = ["TimeStamp,Column1,TotalCores"] + [f"h{k:04d},t1,{v:.0f}" for k, v in enumerate(y)]
    path = tmp_path / "cap.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_cuc_prints_one_json_document(tmp_path: Path) -> None:
    path = tiny_file(tmp_path)
    out = subprocess.run([sys.executable, "-m", "cli.main", "cuc", "--capacity", str(path), "--vm-type", "t1",
                          "--p", "0.05", "--bo-steps", "2", "--max-share", "0.2", "--objective", "ucb",
                          "--order", "value", "--refit-every", "24", "--json"],
                         capture_output=True, text=True, check=True)
    doc = json.loads(out.stdout)
    for phase in ("train", "test"):
        assert {"util", "violation", "time_s"} <= set(doc[phase])
    assert doc["jobs"] == "generated" and doc["vm_type"] == "t1"
    assert doc["objective"] == "ucb" and doc["order"] == "value" and set(doc["exceedance"]) == {"train", "test"}


def test_cuc_hold_out_online_law_and_hindsight(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tiny_file(tmp_path)
    assert main(["cuc", "--capacity", str(path), "--vm-type", "t1", "--p", "0.05", "--bo-steps", "1",
                 "--max-share", "0.2", "--hours", "264", "--train-hours", "72", "--refit-every", "12",
                 "--errors", "newest", "--hindsight", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    # BO scores the last 48 of the 72 training origins (the default validation split)
    assert doc["hours"] == 264 and doc["train"]["samples"] == 48 and doc["test"]["samples"] == 25
    assert doc["train_hours"] == 72 and doc["validation_hours"] == 48
    assert doc["errors"] == "newest" and doc["refit_every"] == 12
    assert set(doc["hindsight"]) == {"inflation", "util", "violation"}
    assert all(int(h) >= 216 and n >= 1 for h, n in doc["violated_hours"].items())


def test_cuc_study_on_one_type_and_one_level(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tiny_file(tmp_path)
    assert main(["cuc-study", "--capacity", str(path), "--bo-steps", "1", "--p-levels", "0.05",
                 "--max-share", "0.2", "--exact-time-limit", "0.2", "--refit-every", "24", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    methods = doc["results"]["cap"]
    assert {"TSDEC+HiGHS", "AR1+HiGHS", "W/o uncertainty", "W/o BO (p = 0.1 %)", "CUC (p = 5 %)",
            "Alg. 3 with the true capacity"} == set(methods)
    assert methods["Alg. 3 with the true capacity"]["violation"] == 0.0


def test_cuc_errors_select_reports_each_laws_validation_and_the_law_theta_names(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tiny_file(tmp_path)
    assert main(["cuc", "--capacity", str(path), "--vm-type", "t1", "--p", "0.05", "--bo-steps", "2",
                 "--max-share", "0.2", "--refit-every", "24", "--errors", "select", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["errors"] == "select" and set(doc["selection"]) == {"newest", "moments"}
    chosen = doc["selection"][doc["theta"]["errors"]]
    assert (chosen["util"], chosen["violation"]) == (doc["train"]["util"], doc["train"]["violation"])


def test_cuc_and_the_study_run_the_max_law(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tiny_file(tmp_path)
    assert main(["cuc", "--capacity", str(path), "--vm-type", "t1", "--p", "0.05", "--bo-steps", "2",
                 "--max-share", "0.2", "--refit-every", "24", "--errors", "max", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["errors"] == "max" and doc["theta"]["errors"] is None and "selection" not in doc
    assert main(["cuc-study", "--capacity", str(path), "--bo-steps", "1", "--p-levels", "0.05", "--max-share", "0.2",
                 "--refit-every", "24", "--errors", "max", "--json"]) == 0
    study = json.loads(capsys.readouterr().out)
    assert study["errors"] == "max" and "CUC (p = 5 %)" in study["results"]["cap"]


def test_cuc_refuses_an_unknown_error_law(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit, match=r"^2$"):
        main(["cuc", "--capacity", "x", "--vm-type", "t1", "--p", "0.01", "--errors", "maximum"])
    assert "argument --errors: invalid choice: 'maximum'" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "match"), [
    (["cuc", "--capacity", "{file}", "--vm-type", "t1", "--p", "0.01", "--errors", "max", "--validation-hours", "120"],
     "validation_hours=120 leaves fewer than 2 training windows"),
    (["cuc", "--capacity", "missing.csv", "--vm-type", "t1", "--p", "0.01"], "--capacity=missing.csv: no such file"),
    (["cuc", "--capacity", "{file}", "--vm-type", "zz", "--p", "0.01"], "vm-type='zz' is not in the data"),
    (["cuc", "--capacity", "{file}", "--vm-type", "t1", "--p", "0.01", "--hours", "400"],
     "--hours=400 exceeds the series' 336 hours"),
])
def test_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], match: str) -> None:
    path = tiny_file(tmp_path)
    assert main([a.replace("{file}", str(path)) for a in argv]) == 2
    err = capsys.readouterr().err
    assert match in err and err.count("\n") == 1


def test_cuc_study_refuses_a_p_level_outside_0_1(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit, match=r"^2$"):
        main(["cuc-study", "--p-levels", "0.1,2"])
    assert "argument --p-levels: 2.0 must lie strictly between 0 and 1" in capsys.readouterr().err


def test_cuc_study_baselines_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tiny_file(tmp_path)
    assert main(["cuc-study", "--capacity", str(path), "--max-share", "0.2", "--baselines-only", "--json"]) == 0
    methods = json.loads(capsys.readouterr().out)["results"]["cap"]
    assert set(methods) == {"TSDEC+HiGHS", "AR1+HiGHS", "W/o uncertainty", "Alg. 3 with the true capacity"}


@pytest.mark.parametrize(("value", "match"), [("-1", "-1.0 must be >= 0 and finite"), ("x", "'x' is not a number"),
                                              ("inf", "inf must be >= 0 and finite")])
def test_exact_time_limit_below_zero_is_refused(capsys: pytest.CaptureFixture[str], value: str, match: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["cuc-study", "--exact-time-limit", value])
    assert exit_info.value.code == 2
    assert match in capsys.readouterr().err


def test_p_out_of_range_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["cuc", "--capacity", "x", "--vm-type", "t1", "--p", "1.5"])
    assert exit_info.value.code == 2
    assert "1.5 must lie strictly between 0 and 1" in capsys.readouterr().err


def test_cuc_forecaster_option_sets_the_point_forecaster(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tiny_file(tmp_path)
    assert main(["cuc", "--capacity", str(path), "--vm-type", "t1", "--p", "0.05", "--bo-steps", "1",
                 "--max-share", "0.2", "--forecaster", "ar1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["theta"]["forecaster"] == "ar1"


def test_cuc_forecaster_list_lets_bo_choose_among_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tiny_file(tmp_path)
    assert main(["cuc", "--capacity", str(path), "--vm-type", "t1", "--p", "0.05", "--bo-steps", "3",
                 "--max-share", "0.2", "--forecaster", "ar1,tsdec", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["forecasters"] == ["ar1", "tsdec"] and out["theta"]["forecaster"] in {"ar1", "tsdec"}


@pytest.mark.parametrize(("value", "match"), [
    ("x", r"'x': 'x' is not one of tsdec, ar1"),
    ("tsdec,", r"'tsdec,': '' is not one of tsdec, ar1"),
    ("ar1,ar1", r"'ar1,ar1' names a forecaster twice"),
])
def test_cuc_refuses_a_bad_forecaster_list(tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str,
                                           match: str) -> None:
    for verb in (["cuc", "--capacity", str(tiny_file(tmp_path)), "--vm-type", "t1", "--p", "0.05"], ["cuc-study"]):
        with pytest.raises(SystemExit) as exc:
            main([*verb, "--forecaster", value])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and re.search(match, err), err


def test_cuc_choices_are_the_models_names() -> None:
    from cli.main import build_parser
    from models.cuc.names import ERROR_CHOICES, OBJECTIVES, ORDERS

    verbs = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    for verb, names in (("cuc", ("--objective", "--order", "--errors")),
                        ("cuc-study", ("--objective", "--order", "--errors"))):
        choices = {o: set(a.choices) for a in verbs[verb]._actions for o in a.option_strings if a.choices}
        expected = {"--objective": OBJECTIVES, "--order": ORDERS, "--errors": ERROR_CHOICES}
        assert {o: choices[o] for o in names} == {o: set(expected[o]) for o in names}
