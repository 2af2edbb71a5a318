"""The LP bound on aggregated job classes: the same value as problem (1)'s LP relaxation over the jobs themselves."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.cuc.exact import aggregate, lp_bound, solve_exact
from models.cuc.jobs import JobConfig, generate_jobs
from models.cuc.problem import Jobs


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
    full = solve_exact(jobs, a, relax=True).bound
    assert lp_bound(jobs, a) == pytest.approx(full, rel=1e-7, abs=1e-6)


def test_lp_bound_of_no_jobs_is_zero() -> None:
    empty = Jobs.of(c=[], d=[], e=[], l=[], T=24)
    assert lp_bound(empty, np.ones(24)) == 0.0
