"""The generator against Sec. 5.4: ranges, sizes, the uniform laws (chi-square), parents, determinism."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from models.planning.synthetic import FLEXIBILITY, generate


@pytest.mark.parametrize("n", [10, 60])
def test_every_field_in_its_range(n: int) -> None:
    sp = generate(n, 3)
    assert 500 <= sp.makespan <= 3000 and sp.problem.n == n
    for job in sp.problem.jobs:
        assert len(job.D) == len(job.R) == 50
        assert min(job.D) >= 10 and max(job.D) <= 30 and min(job.R) >= 5 and max(job.R) <= 10
        assert 0 <= job.q < sp.makespan and job.f in FLEXIBILITY and job.u == job.q + job.f + max(job.D)
        assert len(job.J) <= 3
        for p in job.J:
            parent = sp.problem.jobs[sp.problem.index[p]]
            assert parent.q + max(parent.D) <= job.q


def test_histories_are_uniform() -> None:
    durations = np.concatenate([np.array(j.D) for s in range(6) for j in generate(60, s).problem.jobs])
    cpus = np.concatenate([np.array(j.R) for s in range(6) for j in generate(60, s).problem.jobs])
    for values, low, high in ((durations, 10, 30), (cpus, 5, 10)):
        counts = np.bincount(values - low, minlength=high - low + 1)
        assert stats.chisquare(counts).pvalue > 1e-3
    flex = [j.f for s in range(20) for j in generate(60, s).problem.jobs]
    assert stats.chisquare([flex.count(f) for f in FLEXIBILITY]).pvalue > 1e-3


def test_parent_counts_reach_three_and_the_manual_schedule_is_feasible() -> None:
    problem = generate(60, 1).problem
    counts = [len(j.J) for j in problem.jobs]
    assert max(counts) == 3 and min(counts) == 0
    problem.check_starts(problem.manual)
    start = dict(zip((j.id for j in problem.jobs), problem.manual, strict=True))
    for job in problem.jobs:  # every past run of the job, and of each parent, fits: deadline and precedence
        assert all(start[job.id] + d <= job.u for d in job.D)
        for p in job.J:
            parent = problem.jobs[problem.index[p]]
            assert all(start[p] + d <= start[job.id] for d in parent.D)


def test_same_seed_same_problem_and_fresh_draws_in_range() -> None:
    assert generate(20, 5) == generate(20, 5) and generate(20, 5) != generate(20, 6)
    d, r = generate(20, 5).fresh(25, np.random.default_rng(0))
    assert d.shape == r.shape == (25, 20) and d.min() >= 10 and d.max() <= 30 and r.min() >= 5 and r.max() <= 10
    with pytest.raises(ValueError, match="jobs n=0 is below the bound 1"):
        generate(0, 1)
