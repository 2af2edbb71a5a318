"""bench capacity and the forecast-capacity case of bench core run end to end on small settings (numbers are
not asserted, only their shape and the realization both models share)."""

from __future__ import annotations

import argparse

import pytest

from benchmarks import capacity, core
from models.data import AZURE_CAPACITY


def test_bench_capacity_compares_both_models_on_the_same_realizations() -> None:
    args = argparse.Namespace(workloads="overload", series=f"{AZURE_CAPACITY / 'capacity_azure2019.csv'}:t7str",
                              seeds=2, rounds=3, stride=13, offline_seeds=1, offline_time_limit=1.0, quantile=0.5)
    r = capacity.run(args)
    fixed, forecast = r["rows"]
    assert (fixed["model"], forecast["model"]) == ("fixed", "forecast") and fixed["runs"] == forecast["runs"] == 2
    assert fixed["ratio"] is not None and {p["model"] for p in r["pooled"]} == {"fixed", "forecast"}
    assert r["fit_rows"] == capacity.FIT_ROWS  # held out by default
    # paired differences: seed by seed, forecast - fixed of the same job realization
    assert forecast["d_welfare"] == [b - a for a, b in zip(fixed["welfares"], forecast["welfares"], strict=True)]
    pooled = r["pooled"][1]
    assert pooled["d_welfare"] == pytest.approx(forecast["welfare"] - fixed["welfare"])
    assert pooled["d_parts"]["welfare"][0] == pytest.approx(pooled["d_welfare"])
    assert pooled["d_failed"] == pytest.approx(forecast["evicted_cancelled"] - fixed["evicted_cancelled"])
    text = capacity.table(r)
    assert "| overload | capacity_azure2019.csv:t7str | forecast |" in text and "gap (se)" in text
    assert "forecast - fixed per run (se over seeds)" in text


def test_bench_capacity_first_seed_runs_the_later_seeds_of_a_longer_run() -> None:
    common = {"workloads": "overload", "series": f"{AZURE_CAPACITY / 'capacity_azure2017.csv'}:t7str", "rounds": 3,
              "stride": 13, "offline_seeds": 0, "offline_time_limit": 1.0, "quantile": 0.3}
    longer = capacity.run(argparse.Namespace(**common, seeds=3))
    later = capacity.run(argparse.Namespace(**common, seeds=2, first_seed=1))
    assert (longer["first_seed"], later["first_seed"]) == (0, 1)
    for whole, tail in zip(longer["rows"], later["rows"], strict=True):
        assert tail["welfares"] == whole["welfares"][1:] and tail["failed"] == whole["failed"][1:]


def test_bench_core_times_quotes_with_a_forecast_capacity_model() -> None:
    args = argparse.Namespace(jobs="20", quotes=3, literal_jobs=5, literal_candidates=1, samples=300, seed=1,
                              no_capacity=False)
    r = core.run(args)
    assert r["capacity_run"]["active_jobs"] == 20 and r["capacity_p50_ratio"] > 0
    assert "forecast capacity" in core.table(r)
    assert core.forecast_capacity(core.bench_platform(0, None)).capacity is not None


def test_bench_capacity_with_a_level_weight_changes_only_the_forecast_runs() -> None:
    common = {"workloads": "overload", "series": f"{AZURE_CAPACITY / 'capacity_azure2017.csv'}:t7str", "seeds": 2,
              "rounds": 3, "stride": 13, "offline_seeds": 0, "offline_time_limit": 1.0, "quantile": 0.3}
    base = capacity.run(argparse.Namespace(**common, level_weight=0.0))
    levelled = capacity.run(argparse.Namespace(**common))  # the default fits the level
    assert levelled["level_weight"] == "fit" and base["level_weight"] == 0.0
    assert levelled["rows"][0]["welfares"] == base["rows"][0]["welfares"]  # fixed C: the same runs
    assert levelled["rows"][1]["d_welfare"] == [
        b - a for a, b in zip(levelled["rows"][0]["welfares"], levelled["rows"][1]["welfares"], strict=True)]


def test_bench_core_times_quotes_with_an_adaptive_capacity_level() -> None:
    args = argparse.Namespace(jobs="20", quotes=3, literal_jobs=5, literal_candidates=1, samples=300, seed=1,
                              no_capacity=False, capacity_level_weight=0.3)
    r = core.run(args)
    assert r["capacity_level_weight"] == 0.3 and r["capacity_run"]["active_jobs"] == 20
    assert "lam 0.3" in core.table(r)


def test_bench_core_refuses_a_level_weight_to_fit_or_out_of_bounds() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="'fit' needs a capacity series"):
        core.fixed_level_weight("fit")
    with pytest.raises(argparse.ArgumentTypeError, match=r"1.0 must lie in \[0, 1\)"):
        core.fixed_level_weight("1")


def test_bench_capacity_rows_do_not_depend_on_the_number_of_processes() -> None:
    both = ",".join(f"{AZURE_CAPACITY / f}:t7str" for f in ("capacity_azure2017.csv", "capacity_azure2019.csv"))
    common = {"workloads": "overload", "series": both, "seeds": 2, "rounds": 3, "stride": 13, "offline_seeds": 0,
              "offline_time_limit": 1.0, "quantile": 0.3}
    alone = capacity.run(argparse.Namespace(**common, processes=1))
    pooled = capacity.run(argparse.Namespace(**common, processes=2))
    assert [r["series"] for r in pooled["rows"]] == ["capacity_azure2017.csv:t7str"] * 2 + [
        "capacity_azure2019.csv:t7str"] * 2  # in task order, whatever finishes first
    assert pooled == alone


def test_bench_capacity_reports_the_played_level_and_fits_the_welfare_line_by_hand() -> None:
    from models.capacity_fit import read_series

    spec = f"{AZURE_CAPACITY / 'capacity_azure2017.csv'}:t7str"
    args = argparse.Namespace(workloads="overload", series=spec, seeds=1, rounds=2, stride=13, offline_seeds=0,
                              offline_time_limit=1.0, quantile=0.3)
    fixed, forecast = capacity.run(args)["rows"]
    played = read_series(spec).scaled(16, None, capacity.FIT_ROWS)[capacity.FIT_ROWS:]  # the second week at C = 16
    assert fixed["C"] == forecast["C"] == 16 and forecast["played_mean"] == pytest.approx(float(played.mean()))
    rows = [{"played_mean": 16 + x, "C": 16, "d_welfare": [10.0 * x + 2.0, 10.0 * x - 2.0]} for x in (-1, 0, 1)]
    assert capacity._level_fit(rows)["level_fit"] == pytest.approx(
        {"slope": 10.0, "intercept": 0.0, "correlation": 1.0, "series": 3})
    assert capacity._level_fit(rows[:2]) == {}  # fewer than 3 series: no line


def test_bench_capacity_quantile_fit_runs_the_q_its_tuning_chose() -> None:
    common = {"workloads": "overload", "series": f"{AZURE_CAPACITY / 'capacity_azure2017.csv'}:t7str", "seeds": 2,
              "rounds": 3, "stride": 13, "offline_seeds": 0, "offline_time_limit": 1.0}
    tuned = capacity.run(argparse.Namespace(**common, quantile="fit"))
    forecast = tuned["rows"][1]
    assert tuned["quantile"] == "fit" and forecast["quantile"] == forecast["tuning"]["quantile"]
    grid = {g["quantile"]: g["welfare"] for g in forecast["tuning"]["grid"]}
    assert grid[forecast["quantile"]] == max(grid.values())
    given = capacity.run(argparse.Namespace(**common, quantile=forecast["quantile"]))
    assert given["rows"][1]["welfares"] == forecast["welfares"] and given["rows"][1]["tuning"] is None
    assert given["rows"][0]["welfares"] == tuned["rows"][0]["welfares"]  # fixed C does not use q
    assert f"| overload | capacity_azure2017.csv:t7str | {forecast['quantile']:g} | " in capacity.table(tuned)
    assert "q chosen" not in capacity.table(given)
