"""`sowsched bench backfill --configs`: each item is key=value of easy-learned's options; counts are integers."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.backfill import parse_config


def test_a_config_reads_the_portfolio_period_and_the_calibration_window_as_integers() -> None:
    config = parse_config("risk=0.9,reservation_q=0.4,portfolio=24")
    assert config == {"risk": 0.9, "reservation_q": 0.4, "portfolio": 24} and isinstance(config["portfolio"], int)
    assert isinstance(parse_config("calibrate=1000")["calibrate"], int)


def test_a_config_reads_the_portfolio_risks_as_a_colon_separated_tuple() -> None:
    assert parse_config("portfolio=24,portfolio_risks=0.8:0.9:0.95") == {
        "portfolio": 24, "portfolio_risks": (0.8, 0.9, 0.95)}
    with pytest.raises(ValueError, match="could not convert string to float: 'x'"):
        parse_config("portfolio=24,portfolio_risks=0.8:x")


def test_a_config_item_that_is_not_key_value_of_a_known_option_is_refused() -> None:
    with pytest.raises(ValueError, match="--configs item 'period=24' must be key=value with key risk, "
                                         "reservation_q, guard, calibrate, wide_risk, portfolio or portfolio_risks"):
        parse_config("risk=0.9,period=24")
    with pytest.raises(ValueError, match="--configs item 'portfolio' must be key=value"):
        parse_config("portfolio")


def test_months_split_jobs_load_and_mean_bsld_by_30_days_of_submissions() -> None:
    from benchmarks.backfill import MONTH_S, months
    from models.hpc.jobs import Job, Workload

    jobs = (Job(0, 0, 100, 2, 200), Job(1, 10, 1_000, 4, 1_000), Job(2, MONTH_S + 5, 20, 1, 50))
    workload = Workload(jobs, 4)
    starts = np.array([0.0, 100.0, MONTH_S + 5 + 30.0])
    # job 0 waits 0 (BSLD 1), job 1 waits 90 s over 1,000 s (1.09), job 2 waits 30 s over max(20, 10) s (2.5)
    out = months(workload, {"run": starts})
    assert out["jobs"] == [2, 1]
    assert out["load"] == [round((2 * 100 + 4 * 1_000) / (4 * MONTH_S), 4), round(20 / (4 * MONTH_S), 4)]
    assert out["run"] == pytest.approx([(1.0 + 1.09) / 2, 2.5])
