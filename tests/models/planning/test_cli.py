"""`sowsched capacity-plan` and `capacity-study`: one JSON document on stdout, bad input refused with exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cli.main import main
from models.planning.workload import preparation_example

KEYS = {"peak_estimated", "peak_observed_mean", "peak_reduction", "under_estimation", "over_estimation",
        "deadline_violation", "solve_s", "status"}


@pytest.mark.parametrize("method", ["det-p50", "det-p75", "det-p100", "det-mode", "cospis", "milp-p50",
                                    "milp-indexed", "soru-p50", "manual"])
def test_every_method_prints_the_metrics(method: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["capacity-plan", "--synthetic", "--jobs", "6", "--seed", "2", "--method", method, "--samples", "5",
                 "--runs", "5", "--time-limit", "5", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out.keys() >= KEYS and out["status"] in ("optimal", "feasible")
    assert out["method"] == (method if method != "milp-indexed" else "milp-indexed-p50")


def test_same_seed_same_document(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["capacity-plan", "--synthetic", "--jobs", "12", "--seed", "4", "--method", "cospis", "--json"]
    main(argv)
    first = json.loads(capsys.readouterr().out)
    main(argv)
    second = json.loads(capsys.readouterr().out)
    first.pop("solve_s"), second.pop("solve_s")
    assert first == second


def test_stdout_is_one_document_even_with_highs_banner() -> None:
    done = subprocess.run([sys.executable, "-m", "cli.main", "capacity-plan", "--synthetic", "--jobs", "5",
                           "--method", "milp-p50", "--runs", "3", "--json"], capture_output=True, text=True,
                          check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "optimal"


@pytest.mark.parametrize(("argv", "match"), [
    (["--synthetic", "--jobs", "0"], "argument --jobs: 0 is below the bound 1"),
    (["--synthetic", "--alpha", "1.5"], r"argument --alpha: 1.5 must lie in \[0, 1\]"),
    (["--synthetic", "--time-limit", "0"], "argument --time-limit: 0.0 must be positive"),
    (["--synthetic", "--method", "nope"], "argument --method: invalid choice: 'nope'"),
    (["--synthetic", "--jobs", "5000"], "--jobs 5000 is above the bound 2000"),
])
def test_bad_flags_exit_2(argv: list[str], match: str, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(["capacity-plan", *argv, "--json"])
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert pytest.importorskip("re").search(match, captured.err)


def _write(tmp_path: Path, doc: object) -> str:
    path = tmp_path / "w.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return str(path)


def test_workload_file_with_dependencies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "prep.json")
    assert main(["capacity-plan", "--write-example", path]) == 0
    code = main(["capacity-plan", "--workload-file", path, "--samples", "10", "--runs", "5", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["dependencies"] == 12 and out["nodes"] >= 8 and out["status"] == "optimal"
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    for child, parents in doc["dependencies"].items():
        assert out["schedule"][child] >= out["schedule"][parents[0]] + 1


@pytest.mark.parametrize(("deps", "match"), [
    ({"pipe0-prep0": ["pipe0-train0"], "pipe0-train0": ["pipe0-prep0"]},
     "the parents form a cycle: pipe0-prep0 -> pipe0-train0 -> pipe0-prep0"),
    ({"pipe0-train0": ["ghost"]}, "dependencies names job 'ghost', which is not in the workload"),
    ({"pipe0-train0": "pipe0-prep0"}, "is not a list of job ids"),
    ([1], "dependencies must map a job id to a list of parent ids, not list"),
])
def test_bad_dependencies_exit_2(deps: object, match: str, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    doc = preparation_example(pipelines=1, runs=1)
    doc["dependencies"] = deps
    code = main(["capacity-plan", "--workload-file", _write(tmp_path, doc), "--json"])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == "" and match in captured.err


def test_simulate_refuses_the_dependencies_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, preparation_example(pipelines=1, runs=1))
    assert main(["simulate", "--workload-file", path, "--json", "--no-offline"]) == 2
    assert "dependencies" in capsys.readouterr().err


def test_study_writes_figures_and_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "capacity-study",
            "--sizes",
            "4,6",
            "--instances",
            "1",
            "--grid-size",
            "3",
            "--grid-instances",
            "1",
            "--grid-samples",
            "3,5",
            "--grid-alphas",
            "0.2,0.6",
            "--grid-time-limit",
            "1",
            "--runs",
            "3",
            "--samples",
            "5",
            "--out",
            str(tmp_path),
            "--json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and set(out["summary"]) == {"manual", "det-p50", "cospis"}
    written = json.loads((tmp_path / "study.json").read_text(encoding="utf-8"))
    assert all(out[key] == written[key] for key in ("summary", "rows", "grid", "figures"))  # stdout is study.json
    for name in ("fig15_peaks.png", "fig14_errors.png", "fig11_grid.png", "table.md", "study.json"):
        assert (tmp_path / name).stat().st_size > 0
    for bad in (["--sizes", "0"], ["--grid-alphas", "0.5,2"]):
        with pytest.raises(SystemExit):
            main(["capacity-study", *bad])
    capsys.readouterr()
    with pytest.raises(SystemExit, match=r"^2$"):
        main(["capacity-study", "--methods", "manual,nope"])
    assert "argument --methods: 'nope' is not one of det-p50, det-p75" in capsys.readouterr().err
