"""`sowsched simulate` and `calibrate` with a capacity series: same JSON keys, and bad options refused (exit 2)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cli.main import main

AZURE = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "azure-capacity" / "capacity_azure2019.csv"
SERIES = f"{AZURE}:t7str"


@pytest.mark.parametrize("model", ["fixed", "forecast"])
def test_simulate_json_keeps_its_keys_and_adds_the_capacity(model: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--workload", "overload", "--load", "0.3", "--no-offline", "--json",
                 "--capacity-series", SERIES, "--capacity-model", model]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    result = json.loads(out)
    assert {"evicted", "cancelled", "welfare", "offline", "revenue"} <= set(result)
    assert result["capacity"]["model"] == model and result["capacity"]["rows"] == 336
    assert (result["capacity"]["fitted"] is None) == (model == "fixed")


def test_simulate_with_held_out_rows_plays_only_the_rows_after_the_fit(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--workload", "overload", "--load", "0.3", "--no-offline", "--json",
                 "--capacity-series", SERIES, "--capacity-model", "forecast", "--capacity-fit-rows", "168"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["capacity"]["rows"] == 336 - 168 and result["capacity"]["fitted"]["high"] >= 1


@pytest.mark.parametrize(("value", "want"), [(None, 0.02), ("fit", 0.02), ("0.3", 0.3), ("0", None)])
def test_simulate_with_a_level_weight_reports_it_in_the_fitted_model(value: str | None, want: float | None,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """2019 t7str's first week fits lam 0.02, the default; lam 0 (the fixed mean) is dumped without the key."""
    option = [] if value is None else ["--capacity-level-weight", value]
    assert main(["simulate", "--workload", "overload", "--load", "0.3", "--no-offline", "--json",
                 "--capacity-series", SERIES, "--capacity-model", "forecast", "--capacity-fit-rows", "168",
                 *option]) == 0
    assert json.loads(capsys.readouterr().out)["capacity"]["fitted"].get("level_weight") == want


def test_simulate_with_a_price_floor_puts_c_in_the_fitted_model(capsys: pytest.CaptureFixture[str]) -> None:
    common = ["simulate", "--workload", "overload", "--load", "0.3", "--no-offline", "--json", "--capacity-series",
              SERIES, "--capacity-model", "forecast", "--capacity-fit-rows", "168"]
    assert main([*common, "--capacity-price-floor"]) == 0
    assert json.loads(capsys.readouterr().out)["capacity"]["fitted"]["price_floor"] == 16.0  # overload's C
    assert main(common) == 0
    assert "price_floor" not in json.loads(capsys.readouterr().out)["capacity"]["fitted"]


def test_calibrate_json_keeps_its_keys(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", "--workload", "overload", "--seeds", "2", "--rounds", "4", "--json",
                 "--capacity-series", SERIES, "--capacity-model", "forecast", "--capacity-stride", "13"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert {"estimate", "realized", "gap", "gap_se"} <= set(result)


@pytest.mark.parametrize(("command", "flags", "match"), [
    ("simulate", ["--capacity-model", "forecast"], "--capacity-model forecast needs --capacity-series"),
    ("simulate", ["--capacity-scale", "2"], "--capacity-scale 2.0 needs --capacity-series"),
    ("simulate", ["--capacity-series", f"{AZURE}:t9str"], "name a VM type of .* one of t1str"),
    ("simulate", ["--capacity-series", SERIES, "--capacity-quantile", "0.2"],
     "--capacity-quantile 0.2 needs --capacity-model forecast"),
    ("calibrate", ["--capacity-stride", "3"], "--capacity-stride 3 needs --capacity-series"),
    ("simulate", ["--capacity-fit-rows", "100"], "--capacity-fit-rows 100 needs --capacity-series"),
    ("simulate", ["--capacity-series", SERIES, "--capacity-fit-rows", "336"],
     "--capacity-fit-rows 336: .* has 336 rows; fit on 3 to 335 of them"),
    ("calibrate", ["--capacity-series", "/nonexistent.csv:x"], "cannot read"),
    ("simulate", ["--capacity-level-weight", "0.2"], "--capacity-level-weight 0.2 needs --capacity-series"),
    ("simulate", ["--capacity-series", SERIES, "--capacity-level-weight", "fit"],
     "--capacity-level-weight fit needs --capacity-model forecast"),
    ("simulate", ["--capacity-price-floor"], "--capacity-price-floor needs --capacity-series"),
    ("calibrate", ["--capacity-series", SERIES, "--capacity-price-floor"],
     "--capacity-price-floor needs --capacity-model forecast"),
])
def test_bad_capacity_options_exit_2_with_one_line(command: str, flags: list[str], match: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    base = ["simulate", "--workload", "overload", "--no-offline"] if command == "simulate" else ["calibrate"]
    assert main([*base, *flags, "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert re.search(match, err), err


@pytest.mark.parametrize("value", ["0", "1", "1.5", "x", "fitted"])
def test_a_quantile_outside_0_1_is_refused_by_the_parser(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["simulate", "--workload", "toy", "--capacity-quantile", value])
    assert info.value.code == 2 and "--capacity-quantile" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["1", "-0.1", "x"])
def test_a_level_weight_outside_0_1_is_refused_by_the_parser(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["simulate", "--workload", "toy", "--capacity-level-weight", value])
    assert info.value.code == 2 and "--capacity-level-weight" in capsys.readouterr().err


def test_a_written_workload_file_replays_the_capacity_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "w.json"
    assert main(["simulate", "--workload", "overload", "--load", "0.3", "--no-offline", "--json", "--capacity-series",
                 SERIES, "--capacity-model", "forecast", "--write-workload", str(path)]) == 0
    first = json.loads(capsys.readouterr().out)
    assert main(["simulate", "--workload-file", str(path), "--no-offline", "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert {k: again[k] for k in ("welfare", "evicted", "cancelled")} == {k: first[k] for k in
                                                                          ("welfare", "evicted", "cancelled")}
    assert again["capacity"]["model"] == "forecast" and again["capacity"]["rows"] == 336


def test_bench_capacity_on_a_process_pool_prints_what_one_process_prints(capsys: pytest.CaptureFixture[str]) -> None:
    both = f"{AZURE.with_name('capacity_azure2017.csv')}:t7str,{SERIES}"
    common = ["bench", "capacity", "--workloads", "overload", "--series", both, "--seeds", "2", "--rounds", "3",
              "--offline-seeds", "0", "--no-progress", "--json"]
    assert main([*common, "--processes", "2"]) == 0  # the parsed options reach the workers (spawned: pickled)
    pooled = json.loads(capsys.readouterr().out)
    assert main([*common, "--processes", "1"]) == 0
    assert json.loads(capsys.readouterr().out) == pooled
    series = [r["series"] for r in pooled["rows"]][::2]
    assert series == ["capacity_azure2017.csv:t7str", "capacity_azure2019.csv:t7str"]


def test_simulate_quantile_fit_quotes_with_the_q_the_tuning_chooses(monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from cli.commands.simulate import tuned_quantile
    from models import capacity_tune
    from models.workloads import make_workload

    tune = capacity_tune.tune_quantile
    monkeypatch.setattr(capacity_tune, "tune_quantile", lambda *a, **k: tune(*a, **{**k, "seeds": 2}))  # 40 default
    tuned_quantile.cache_clear()
    assert main(["simulate", "--workload", "overload", "--load", "0.3", "--no-offline", "--json", "--capacity-series",
                 SERIES, "--capacity-model", "forecast", "--capacity-fit-rows", "168", "--capacity-quantile",
                 "fit"]) == 0
    tuned_quantile.cache_clear()
    chosen = json.loads(capsys.readouterr().out)["capacity"]["fitted"]["quantile"]
    direct = tune(lambda seed: make_workload("overload", seed=seed, load=0.3), SERIES, 168, seeds=2)
    assert chosen in capacity_tune.QUANTILE_GRID and chosen == direct.quantile


def test_quantile_fit_needs_a_named_workload(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "w.json"
    assert main(["simulate", "--workload", "toy", "--no-offline", "--json", "--write-workload", str(path)]) == 0
    capsys.readouterr()
    assert main(["simulate", "--workload-file", str(path), "--no-offline", "--json", "--capacity-series", SERIES,
                 "--capacity-model", "forecast", "--capacity-quantile", "fit"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and re.search(r"--capacity-quantile fit replays a named workload's job stream .* needs "
                                   r"--workload, not --workload-file .*w\.json", err), err


def test_calibrate_quantile_fit_tunes_once_on_its_own_rounds(monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from cli.commands.simulate import tuned_quantile
    from models import capacity_tune

    calls: list[int] = []

    def tune(make, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(max(job.birth for job in make(10_000).jobs) + 1)
        return capacity_tune.QuantileChoice(0.1)

    monkeypatch.setattr(capacity_tune, "tune_quantile", tune)
    tuned_quantile.cache_clear()
    assert main(["calibrate", "--workload", "overload", "--seeds", "2", "--rounds", "3", "--json", "--capacity-series",
                 SERIES, "--capacity-model", "forecast", "--capacity-quantile", "fit", "--no-progress"]) == 0
    tuned_quantile.cache_clear()
    assert calls == [3] and {"estimate", "gap"} <= set(json.loads(capsys.readouterr().out))
