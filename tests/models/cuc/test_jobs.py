"""The job generator: its distributions, its total demand, its windows and its determinism."""

import numpy as np
import pytest
from scipy import stats

from models.cuc.jobs import JobConfig, generate_jobs, job_config


def test_total_demand_reaches_the_multiple_and_stops_there() -> None:
    cfg = JobConfig(demand_multiple=1.5, max_share=0.05)
    jobs = generate_jobs(10_000.0, 24, cfg, np.random.default_rng(1))
    total, target = float(jobs.value().sum()), 1.5 * 24 * 10_000.0
    assert target <= total < target + jobs.value().max()
    assert total - jobs.value()[-1] < target  # the last job is the first to reach the target


def test_generated_durations_and_demands_are_uniform_on_their_ranges() -> None:
    cfg = JobConfig(demand_multiple=40.0, max_share=0.05)
    jobs = generate_jobs(10_000.0, 24, cfg, np.random.default_rng(2))
    assert len(jobs) > 4000
    # durations uniform on 1..6 (chi-square), demands uniform on 1..500 (chi-square on 10 bins)
    counts = np.bincount(jobs.d, minlength=7)[1:]
    assert stats.chisquare(counts).pvalue > 1e-3
    assert jobs.c.min() >= 1 and jobs.c.max() <= 500
    assert stats.chisquare(np.histogram(jobs.c, bins=np.arange(1, 502, 50))[0]).pvalue > 1e-3
    # windows inside the scope, e < l, and a start that finishes inside it
    assert np.all(jobs.e < jobs.l) and np.all(jobs.l <= 23) and np.all(jobs.e <= 24 - jobs.d)
    assert np.all(jobs.last_start >= jobs.e)
    # e uniform on 0..min(T - d, T - 2) for each duration
    for d in range(1, 7):
        e = jobs.e[jobs.d == d]
        hi = min(24 - d, 22)
        assert stats.chisquare(np.bincount(e, minlength=hi + 1)).pvalue > 1e-3


def test_same_seed_same_jobs() -> None:
    a = generate_jobs(5_000.0, 24, JobConfig(), np.random.default_rng(7))
    b = generate_jobs(5_000.0, 24, JobConfig(), np.random.default_rng(7))
    for name in ("c", "d", "e", "l"):
        assert np.array_equal(getattr(a, name), getattr(b, name))


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"demand_multiple": 0.0}, "demand_multiple"),
    ({"max_share": 1.5}, "max_share"),
    ({"min_duration": 3, "max_duration": 2}, "durations"),
])
def test_config_refuses_bad_values(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        JobConfig(**kwargs)


def test_generator_refuses_bad_capacity_and_scope() -> None:
    with pytest.raises(ValueError, match="reference_capacity"):
        generate_jobs(0.0, 24, JobConfig(), np.random.default_rng(0))
    with pytest.raises(ValueError, match="max_duration"):
        generate_jobs(100.0, 4, JobConfig(), np.random.default_rng(0))


def test_job_config_keeps_the_generator_defaults_for_options_not_given() -> None:
    assert job_config() == JobConfig()
    assert job_config(max_share=0.05) == JobConfig(max_share=0.05)
    assert job_config(2.0, 0.01) == JobConfig(demand_multiple=2.0, max_share=0.01)
    with pytest.raises(ValueError, match="max_share=2"):
        job_config(max_share=2.0)
