"""The LP bound on aggregated job classes: the same value as problem (1)'s LP relaxation over the jobs themselves; a
time limit holds whatever HiGHS does."""

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.cuc import exact
from models.cuc.exact import GRACE_S, aggregate, lp_bound, solve_exact
from models.cuc.jobs import JobConfig, generate_jobs
from models.cuc.problem import UNSCHEDULED, Jobs


def test_jobs_sharing_duration_and_window_form_one_class_summing_their_demand() -> None:
    # jobs 0 and 2 share (d, e, ST) = (2, 0, 2) although l differs (3 and 2: ST = min(l, T - d) = 2); job 1 does not
    jobs = Jobs.of(c=[3, 5, 4], d=[2, 2, 2], e=[0, 1, 0], l=[3, 2, 2], T=4)
    agg = aggregate(jobs)
    classes = sorted(zip(agg.c.tolist(), agg.d.tolist(), agg.e.tolist(), agg.last_start.tolist(), strict=True))
    assert classes == [(5.0, 2, 1, 2), (7.0, 2, 0, 2)]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), capacity=st.floats(20.0, 400.0), share=st.sampled_from([0.02, 0.1, 0.5]))
def test_lp_bound_equals_the_relaxation_over_every_job(seed: int, capacity: float, share: float) -> None:
    rng = np.random.default_rng(seed)
    jobs = generate_jobs(capacity, 24, JobConfig(max_share=share), rng)
    a = capacity * rng.uniform(0.5, 1.2, 24)
    full = solve_exact(jobs, a, time_limit=None, relax=True).bound
    assert lp_bound(jobs, a) == pytest.approx(full, rel=1e-7, abs=1e-6)


def test_lp_bound_of_no_jobs_is_zero() -> None:
    empty = Jobs.of(c=[], d=[], e=[], l=[], T=24)
    assert lp_bound(empty, np.ones(24)) == 0.0


def _small() -> tuple[Jobs, np.ndarray]:
    rng = np.random.default_rng(3)
    return generate_jobs(10.0, 8, JobConfig(max_share=0.2, max_duration=3), rng), 10.0 * rng.uniform(0.5, 1.2, 8)


def test_a_time_limited_solve_in_a_child_process_equals_the_solve_in_this_process() -> None:
    jobs, a = _small()
    for relax in (False, True):
        here = solve_exact(jobs, a, time_limit=None, relax=relax)
        child = solve_exact(jobs, a, time_limit=30.0, relax=relax)
        assert child.start.tolist() == here.start.tolist()
        assert (child.utility, child.bound, child.optimal, child.limit_hit) == (
            here.utility, here.bound, here.optimal, False)
    assert here.optimal and solve_exact(jobs, a, time_limit=None).utility > 0


def _overrun(*args: object) -> None:
    """A solve that ignores its limit (as HiGHS does inside presolve on a large instance): the child runs it."""
    time.sleep(60)


def test_a_solve_that_overruns_its_limit_is_killed_and_says_the_limit_was_hit(monkeypatch: pytest.MonkeyPatch) -> None:
    jobs, a = _small()
    solve_exact(jobs, a, time_limit=30.0)  # the fork server started, so the time below is the solve's
    monkeypatch.setattr(exact, "_solve", _overrun)  # pickled by name: the child runs this module's _overrun
    tick = time.perf_counter()
    result = solve_exact(jobs, a, time_limit=0.2)
    assert time.perf_counter() - tick < 0.2 + GRACE_S + 1.0  # the kill, then the LP bound on job classes
    assert result.limit_hit and not result.optimal
    assert np.all(result.start == UNSCHEDULED) and result.utility == 0.0
    assert result.bound == pytest.approx(lp_bound(jobs, a))


def test_highs_stopping_at_its_limit_says_the_limit_was_hit() -> None:
    rng = np.random.default_rng(1)
    jobs = generate_jobs(400.0, 24, JobConfig(max_share=0.01), rng)  # 5,440 jobs, 39,824 binaries
    result = solve_exact(jobs, 400.0 * rng.uniform(0.5, 1.2, 24), time_limit=0.05)
    assert result.limit_hit and not result.optimal
