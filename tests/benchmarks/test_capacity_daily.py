"""`bench capacity_daily`: per series the held-out RMSE of both models, pooled means and wins by hand."""

from __future__ import annotations

import argparse

import pytest

from benchmarks import capacity_daily
from models.capacity_daily import held_out_errors
from models.capacity_fit import read_series
from models.data import AZURE_CAPACITY

SERIES = [f"{AZURE_CAPACITY / 'capacity_azure2017.csv'}:t1str", f"{AZURE_CAPACITY / 'capacity_azure2019.csv'}:t2str"]


def test_bench_capacity_daily_scores_each_series_and_pools_them() -> None:
    result = capacity_daily.run(argparse.Namespace(series=",".join(SERIES), C=16, fit_rows=168))
    assert [r["series"] for r in result["rows"]] == ["capacity_azure2017.csv:t1str", "capacity_azure2019.csv:t2str"]
    one = held_out_errors(read_series(SERIES[0]).scaled(16, rows=168), 168, capacity_daily.HORIZONS)
    assert result["rows"][0]["rmse"] == one["rmse"]
    for m in ("ar1", "daily"):
        assert result["pooled"]["rmse"][m] == pytest.approx(
            [(a + b) / 2 for a, b in zip(*(r["rmse"][m] for r in result["rows"]), strict=True)])
    assert result["pooled"]["daily_wins"] == [sum(r["rmse"]["daily"][i] < r["rmse"]["ar1"][i] for r in result["rows"])
                                              for i in range(len(capacity_daily.HORIZONS))]
    assert "daily better on" in capacity_daily.table(result)


def test_bench_capacity_daily_refuses_a_series_too_short_to_score() -> None:
    with pytest.raises(ValueError, match="leave no held-out origin after --fit-rows 320 at horizon 24"):
        capacity_daily.run(argparse.Namespace(series=SERIES[0], C=16, fit_rows=320))
