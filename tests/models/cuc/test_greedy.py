"""Alg. 3 against a hand trace, a line-by-line pure-Python reading of the seed, and brute force."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.cuc.exact import solve_exact
from models.cuc.greedy import greedy_order, greedy_schedule
from models.cuc.problem import UNSCHEDULED, Jobs, load, utility


def reference_greedy(jobs: Jobs, cap: list[float], by_value: bool = False) -> list[int]:
    """Alg. 3 as printed (1-based lines 1-13), in plain Python lists; by_value sorts line 1 by c_i d_i."""
    n, T = len(jobs), jobs.T
    order = sorted(range(n), key=lambda i: (-(jobs.c[i] * jobs.d[i] if by_value else jobs.c[i] / jobs.d[i]), i))
    x = [UNSCHEDULED] * n
    for i in order:
        gaps = {}
        for t in range(int(jobs.e[i]), min(int(jobs.l[i]), T - int(jobs.d[i])) + 1):
            used = [sum(jobs.c[j] for j in range(n) if x[j] != UNSCHEDULED and x[j] <= u < x[j] + jobs.d[j])
                    for u in range(T)]
            gaps[t] = min(cap[u] - jobs.c[i] - used[u] for u in range(t, t + int(jobs.d[i])))
        if gaps:
            t_star = max(gaps, key=lambda t: (gaps[t], -t))
            if gaps[t_star] > 0:
                x[i] = t_star
    return x


def brute_force_optimum(jobs: Jobs, cap: np.ndarray) -> float:
    """max utility over every assignment (each job: skip or any feasible start) with load <= cap."""
    choices = [[UNSCHEDULED, *range(int(e), int(s) + 1)] for e, s in zip(jobs.e, jobs.last_start, strict=True)]
    best = 0.0
    for start in itertools.product(*choices):
        if np.all(load(jobs, start) <= cap + 1e-9):
            best = max(best, utility(jobs, start))
    return best


def test_greedy_takes_jobs_by_c_over_d_each_at_its_widest_gap_earliest_on_ties() -> None:
    # order by c/d: job 1 (4/1), job 0 (6/2), job 2 (1/1)
    jobs = Jobs.of(c=[6, 4, 1], d=[2, 1, 1], e=[0, 0, 0], l=[2, 2, 2], T=3)
    assert greedy_order(jobs).tolist() == [1, 0, 2]
    cap = [10, 8, 12]
    # job 1: gaps 10-4=6, 8-4=4, 12-4=8 -> hour 2; job 0: t=0 min(10-6, 8-6)=2, t=1 min(8-6, 12-4-6)=2 -> t=0
    # (earliest on ties); job 2: used [6, 6, 4] -> gaps 3, 1, 7 -> hour 2
    assert greedy_schedule(jobs, cap).tolist() == [0, 2, 2]


def test_the_value_order_takes_jobs_by_c_times_d() -> None:
    # A = (c 3, d 1), B = (c 2, d 2) under 3.5 cores: by c/d A goes first and blocks B (u = 3); by c d B goes
    # first (u = 4, the optimum) and A no longer fits
    jobs = Jobs.of(c=[3, 2], d=[1, 2], e=[0, 0], l=[1, 1], T=2)
    cap = np.array([3.5, 3.5])
    assert greedy_order(jobs, "value").tolist() == [1, 0]
    assert greedy_schedule(jobs, cap).tolist() == [0, UNSCHEDULED]
    assert greedy_schedule(jobs, cap, "value").tolist() == [UNSCHEDULED, 0]
    assert utility(jobs, greedy_schedule(jobs, cap, "value")) == brute_force_optimum(jobs, cap) == 4
    with pytest.raises(ValueError, match="order='size'"):
        greedy_schedule(jobs, cap, "size")


def test_no_strictly_positive_gap_skips_the_job() -> None:
    jobs = Jobs.of(c=[5], d=[1], e=[0], l=[1], T=2)
    assert greedy_schedule(jobs, [5, 5]).tolist() == [UNSCHEDULED]  # gap 0 is not > 0
    assert greedy_schedule(jobs, [5, 5.5]).tolist() == [1]


@st.composite
def instances(draw: st.DrawFn) -> tuple[Jobs, np.ndarray]:
    T = draw(st.integers(2, 5))
    n = draw(st.integers(1, 5))
    d = [draw(st.integers(1, T)) for _ in range(n)]
    e = [draw(st.integers(0, T - di)) for di in d]
    l = [draw(st.integers(ei, T - 1)) for ei in e]  # noqa: E741
    c = [draw(st.integers(1, 6)) for _ in range(n)]
    cap = np.array([draw(st.integers(0, 12)) for _ in range(T)], dtype=float)
    return Jobs.of(c=c, d=d, e=e, l=l, T=T), cap


@settings(max_examples=150, deadline=None)
@given(instances())
def test_greedy_matches_the_seed_and_never_beats_brute_force(instance: tuple[Jobs, np.ndarray]) -> None:
    jobs, cap = instance
    start = greedy_schedule(jobs, cap)
    assert start.tolist() == reference_greedy(jobs, cap.tolist())
    assert np.all(load(jobs, start) < cap + 1e-9) or np.all(start == UNSCHEDULED)
    assert utility(jobs, start) <= brute_force_optimum(jobs, cap) + 1e-9
    by_value = greedy_schedule(jobs, cap, "value")
    assert by_value.tolist() == reference_greedy(jobs, cap.tolist(), by_value=True)
    assert utility(jobs, by_value) <= brute_force_optimum(jobs, cap) + 1e-9


@settings(max_examples=60, deadline=None)
@given(instances())
def test_exact_solver_equals_brute_force(instance: tuple[Jobs, np.ndarray]) -> None:
    jobs, cap = instance
    opt = brute_force_optimum(jobs, cap)
    result = solve_exact(jobs, cap, time_limit=None)  # in this process: a child per example would cost 0.1 s
    assert result.optimal
    assert result.utility == opt
    assert np.all(load(jobs, result.start) <= cap + 1e-9)
    assert solve_exact(jobs, cap, time_limit=None, relax=True).bound >= opt - 1e-6
