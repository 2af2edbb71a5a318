"""Invariants of execution on random problems (hypothesis): the precedence rule, the peak, the capped run."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from models.planning.execution import execute, execute_capped
from models.planning.plan import peak_load
from models.planning.problem import Job, Problem


@st.composite
def cases(draw: st.DrawFn) -> tuple[Problem, tuple[int, ...], np.ndarray, np.ndarray]:
    n = draw(st.integers(1, 6))
    jobs = []
    for j in range(n):
        q = draw(st.integers(0, 10))
        parents = tuple(f"j{i}" for i in range(j) if draw(st.booleans()))
        jobs.append(Job(f"j{j}", q=q, f=draw(st.integers(0, 5)), u=q + 20, D=(1,), J=parents, R=(1,)))
    problem = Problem(tuple(jobs))
    starts = tuple(draw(st.integers(job.q, job.latest_start)) for job in jobs)
    d = np.array([draw(st.integers(1, 6)) for _ in range(n)])
    r = np.array([draw(st.integers(1, 4)) for _ in range(n)])
    return problem, starts, d, r


def stepped_peak(starts: tuple[int, ...], d: np.ndarray, r: np.ndarray) -> int:
    return max(sum(int(r[j]) for j in range(len(starts)) if starts[j] <= t < starts[j] + d[j])
               for t in range(max(starts) + int(d.max()) + 1))


@settings(max_examples=80, deadline=None)
@given(cases(), st.integers(1, 8))
def test_execution_respects_schedule_parents_and_capacity(case: tuple[Problem, tuple[int, ...], np.ndarray,
                                                                      np.ndarray], capacity: int) -> None:
    problem, starts, d, r = case
    for run in (execute(problem, starts, d, r), execute_capped(problem, starts, d, r, capacity)):
        for j, job in enumerate(problem.jobs):
            assert run.starts[j] >= starts[j] and run.ends[j] == run.starts[j] + d[j]
            assert all(run.starts[j] >= run.ends[p] for p in problem.parents[j])
            assert run.lateness[j] == max(0, run.ends[j] - job.u)
        assert run.peak == stepped_peak(run.starts, d, r) == peak_load(run.starts, d, r)
    free = execute(problem, starts, d, r)
    capped = execute_capped(problem, starts, d, r, capacity)
    assert capped.peak <= max(capacity, int(r.max()))
    if free.peak <= capacity:  # nothing has to wait for CPUs: the same run
        assert capped.starts == free.starts
