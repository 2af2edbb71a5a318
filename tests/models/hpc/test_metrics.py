"""Seed-001 metrics (3)-(6), makespan and utilisation against hand calculations."""

from __future__ import annotations

import pytest

from models.hpc import metrics
from models.hpc.jobs import Job

# A: submit 0, runtime 100, 2 nodes, starts at 0  -> Q = 0,  F = 100
# B: submit 10, runtime 5, 1 node, starts at 100  -> Q = 90, F = 95
JOBS = [Job(1, 0, 100, 2, 100), Job(2, 10, 5, 1, 5)]
STARTS = [0, 100]


def test_af_is_the_mean_response_time() -> None:
    assert metrics.af(JOBS, STARTS) == pytest.approx((100 + 95) / 2)


def test_awf_weights_response_times_by_area() -> None:
    assert metrics.awf(JOBS, STARTS) == pytest.approx((200 * 100 + 5 * 95) / (200 + 5))


def test_bsld_bounds_short_runtimes_by_ten_seconds() -> None:
    # A: max(1, 100 / 100) = 1; B: max(1, 95 / max(5, 10)) = 9.5
    assert metrics.bsld(JOBS, STARTS) == pytest.approx((1 + 9.5) / 2)


def test_bsld_is_at_least_one_per_job() -> None:
    assert metrics.bsld([Job(1, 0, 3, 1, 3)], [0]) == 1.0


def test_p2sf_is_formula_six() -> None:
    num = 2 * 100**4 + (95**4 - 90**4)
    den = 2 * 100**3 + (95**3 - 90**3)
    assert metrics.psf(JOBS, STARTS) == pytest.approx(3 / 4 * num / den)


def test_p2sf_of_one_job_without_wait_is_three_quarters_of_its_runtime() -> None:
    assert metrics.psf([Job(1, 0, 40, 3, 40)], [0]) == pytest.approx(30.0)


def test_makespan_and_utilisation() -> None:
    assert metrics.makespan(JOBS, STARTS) == 105
    assert metrics.utilization(JOBS, STARTS, nodes=2) == pytest.approx(205 / (105 * 2))


def test_evaluate_collects_all_metrics() -> None:
    m = metrics.evaluate(JOBS, STARTS, nodes=2)
    assert m.as_dict().keys() == {"AF", "AWF", "BSLD", "P2SF", "utilization", "makespan", "jobs"}
    assert m.jobs == 2
    assert pytest.approx(97.5) == m.AF


def test_start_before_submit_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"job 2: start=5 is before submit=10"):
        metrics.af(JOBS, [0, 5])


def test_length_mismatch_and_empty_are_rejected() -> None:
    with pytest.raises(ValueError, match=r"starts has 1 entries, jobs has 2"):
        metrics.awf(JOBS, [0])
    with pytest.raises(ValueError, match="at least one job"):
        metrics.psf([], [])


def test_utilisation_needs_positive_nodes() -> None:
    with pytest.raises(ValueError, match=r"nodes=0 must be > 0"):
        metrics.utilization(JOBS, STARTS, 0)


def test_utilisation_on_a_single_node_is_busy_time_over_the_makespan() -> None:
    # R = 1: jobs of 4 s and 6 s back to back from t = 0 keep the node busy for the whole makespan of 10
    jobs = [Job(1, 0, 4, 1, 4), Job(2, 0, 6, 1, 6)]
    assert metrics.utilization(jobs, [0, 4], nodes=1) == 1.0
    assert metrics.utilization(jobs, [0, 14], nodes=1) == pytest.approx(10 / 20)
