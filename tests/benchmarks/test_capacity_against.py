"""bench capacity --against: this run's forecast runs minus an earlier result's, seed by seed, and the refusals of a
base that does not share the realizations (checked before anything runs)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import capacity, capacity_against
from cli.args import BenchInputError
from cli.main import main
from models.data import AZURE_CAPACITY

SERIES = ",".join(f"{AZURE_CAPACITY / f}:t7str" for f in ("capacity_azure2017.csv", "capacity_azure2019.csv"))
COMMON = {"workloads": "overload", "series": SERIES, "seeds": 3, "rounds": 3, "stride": 13, "offline_seeds": 0,
          "offline_time_limit": 1.0, "processes": 1}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    result = capacity.run(argparse.Namespace(**COMMON, quantile=0.3))
    path = tmp_path_factory.mktemp("against") / "base.json"
    path.write_text(json.dumps(result))
    return str(path), result


def test_against_pairs_the_forecast_runs_seed_by_seed_and_pools_per_seed_first(
        base: tuple[str, dict[str, Any]]) -> None:
    path, old = base
    new = capacity.run(argparse.Namespace(**COMMON, quantile=0.6, against=path))
    pairing = new["against"]
    assert pairing["base"] == {"quantile": 0.3, "level_weight": "fit", "price_floor": False, "offline_seeds": 0}
    by_hand = []
    for i, series in enumerate(("capacity_azure2017.csv:t7str", "capacity_azure2019.csv:t7str")):
        now, then = new["rows"][2 * i + 1], old["rows"][2 * i + 1]
        assert now["series"] == then["series"] == series and now["model"] == "forecast"
        row = pairing["rows"][i]
        assert row["series"] == series and row["fixed_equal"]  # the same realizations: fixed C runs alike
        assert row["d_welfare"] == [a - b for a, b in zip(now["welfares"], then["welfares"], strict=True)]
        assert row["d_failed"] == [a - b for a, b in zip(now["failed"], then["failed"], strict=True)]
        by_hand.append(row["d_welfare"])
    seeds = [(a + b) / 2 for a, b in zip(*by_hand, strict=True)]  # each seed averaged over the series first
    mean = sum(seeds) / 3
    se = (sum((x - mean) ** 2 for x in seeds) / 2) ** 0.5 / 3 ** 0.5
    (pooled,) = pairing["pooled"]
    assert pooled["series"] == 2 and pooled["fixed_equal"]
    assert pooled["d_welfare"] == pytest.approx(mean) and pooled["d_welfare_se"] == pytest.approx(se)
    assert "this - base" in capacity.table(new) and "| overload | all 2 series |" in capacity.table(new)


def test_against_itself_every_difference_is_zero(base: tuple[str, dict[str, Any]]) -> None:
    path, old = base
    pairing = capacity_against.against(old, old, path)
    assert all(set(r["d_welfare"]) == {0.0} and set(r["d_failed"]) == {0.0} for r in pairing["rows"])
    assert pairing["pooled"][0]["d_welfare"] == 0.0


@pytest.mark.parametrize(("change", "match"), [
    ({"seeds": 4}, r"seeds is 3 there and 4 here; the runs must share seeds, first_seed, rounds, load, stride, "
                   r"fit_rows"),
    ({"first_seed": 3}, r"first_seed is 0 there and 3 here"),
    ({"rounds": 4}, r"rounds is 3 there and 4 here"),
    ({"fit_rows": 0}, r"fit_rows is 168 there and 0 here"),
])
def test_a_base_of_other_realizations_is_refused(base: tuple[str, dict[str, Any]], change: dict[str, int],
                                                 match: str) -> None:
    path, _ = base
    settings = {"seeds": 3, "first_seed": 0, "rounds": 3, "load": 1.0, "stride": 13, "fit_rows": 168} | change
    with pytest.raises(BenchInputError, match=match):
        capacity_against.read_base(path, settings, [("overload", "capacity_azure2017.csv:t7str")])


def test_a_base_without_the_series_or_not_a_result_is_refused(base: tuple[str, dict[str, Any]],
                                                               tmp_path: Path) -> None:
    path, _ = base
    settings = {"seeds": 3, "first_seed": 0, "rounds": 3, "load": 1.0, "stride": 13, "fit_rows": 168}
    with pytest.raises(BenchInputError, match=r"no fixed row of 3 runs for overload capacity_azure2017.csv:t1str"):
        capacity_against.read_base(path, settings, [("overload", "capacity_azure2017.csv:t1str")])
    with pytest.raises(BenchInputError, match=r"no fixed row of 3 runs for pipelines capacity_azure2017.csv:t7str"):
        capacity_against.read_base(path, settings, [("pipelines", "capacity_azure2017.csv:t7str")])
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"seeds": 3}))
    with pytest.raises(BenchInputError, match=r"not a `bench capacity --json` result \(no 'rows' list\)"):
        capacity_against.read_base(str(other), settings, [])
    other.write_text("{")
    with pytest.raises(BenchInputError, match=r"cannot read it as JSON"):
        capacity_against.read_base(str(other), settings, [])
    with pytest.raises(BenchInputError, match=r"cannot read it as JSON \(\[Errno 2\]"):
        capacity_against.read_base(str(tmp_path / "missing.json"), settings, [])


def test_the_command_refuses_a_mismatched_base_before_running_with_one_line(
        base: tuple[str, dict[str, Any]], capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = base
    assert main(["bench", "capacity", "--workloads", "overload", "--series", SERIES, "--seeds", "9", "--rounds",
                 "3", "--against", path, "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == (f"sowsched bench capacity: --against {path}: seeds is 3 there and 9 here; "
                                 "the runs must share seeds, first_seed, rounds, load, stride, fit_rows\n")


def test_the_quantile_option_is_a_probability(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["bench", "capacity", "--quantile", "1.5"])
    assert e.value.code == 2 and "argument --quantile: 1.5 must lie strictly between 0 and 1" in capsys.readouterr().err


def test_a_base_written_before_the_price_floor_and_first_seed_reads_as_without_them(
        base: tuple[str, dict[str, Any]]) -> None:
    path, old = base
    older = {k: v for k, v in old.items() if k not in ("price_floor", "first_seed")}
    assert capacity_against.against(old, older, path)["base"]["price_floor"] is False
    older_path = Path(path).with_name("older.json")
    older_path.write_text(json.dumps(older))
    settings = {k: old[k] for k in capacity_against.SAME}
    assert capacity_against.read_base(str(older_path), settings, [("overload", "capacity_azure2017.csv:t7str")])
