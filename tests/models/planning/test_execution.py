"""The execution simulator and the metrics of Sec. 5.1, by hand."""

from __future__ import annotations

import numpy as np
import pytest

from models.planning.execution import evaluate, execute
from models.planning.plan import Plan, peak_load
from models.planning.problem import Job, Problem


def problem() -> Problem:
    # a -> c (c waits for a); b independent.
    return Problem((Job("a", q=0, f=10, u=20, D=(5,), J=(), R=(4,)),
                    Job("b", q=0, f=10, u=8, D=(3,), J=(), R=(3,)),
                    Job("c", q=2, f=4, u=12, D=(4,), J=("a",), R=(2,))))


def plan(starts: tuple[int, ...], peak: float) -> Plan:
    return Plan("x", starts, peak, peak, 0.0, "optimal", 0.0, 1.0)


def test_a_child_starts_when_its_parent_really_ends() -> None:
    run = execute(problem(), (0, 6, 5), np.array([7, 3, 4]), np.array([4, 3, 2]))
    # a runs [0, 7); c is scheduled at 5 but waits for a: [7, 11); b runs [6, 9) and misses u=8 by 1.
    assert run.starts == (0, 6, 7) and run.ends == (7, 9, 11)
    assert run.lateness == (0, 1, 0)
    # load: [0,6) 4, [6,7) 4+3, [7,9) 3+2, [9,11) 2 -> peak 7
    assert run.peak == 7


def test_peak_load_frees_cpus_at_the_end_time() -> None:
    assert peak_load([0, 5], [5, 5], [3, 4]) == 4  # [0,5) and [5,10) do not overlap
    assert peak_load([0, 4], [5, 5], [3, 4]) == 7


def test_a_runs_peak_is_its_highest_sum_of_running_cpus() -> None:
    p = problem()
    d = np.array([[5, 3, 4], [7, 3, 4]])
    r = np.array([[4, 3, 2], [4, 3, 2]])
    ev = evaluate(p, plan((0, 5, 5), 5.0), d, r)
    # run 0: a [0,5) 4, b [5,8) 3, c [5,9) 2: peak 5; run 1: a [0,7), b [5,8), c [7,11): peak 4+3 = 7.
    assert ev.peaks == (5, 7)
    # manual (every job at q): run 0: a [0,5) b [0,3) c [5,9): 7; run 1: a [0,7) b [0,3) c [7,11): 7.
    assert ev.manual_peaks == (7, 7)
    assert ev.peak_reduction == pytest.approx(((7 - 5) / 7 + 0) / 2)
    assert ev.under_estimation == pytest.approx((0 + 2 / 5) / 2)
    assert ev.over_estimation == 0.0
    assert ev.deadline_violation == 0.0 and ev.missed == 0.0
    late = evaluate(p, plan((0, 6, 6), 10.0), d, r)
    # b ends at 9 > 8 in both runs: 1 unit late per run, spread over 3 jobs.
    assert late.deadline_violation == pytest.approx(1 / 3) and late.missed == 1.0
    assert late.over_estimation == pytest.approx(np.mean([(10 - x) / 10 for x in late.peaks]))
    with pytest.raises(ValueError, match="do not fit 3 jobs"):
        evaluate(p, plan((0, 5, 5), 5.0), d[:, :2], r[:, :2])


def test_capped_execution_starts_a_job_once_its_cpus_and_parents_are_free() -> None:
    from models.planning.execution import execute_capped

    # Capacity 5: a [0,5) uses 4; b (3 CPUs) scheduled at 1 waits for a: [5,8) and misses u=8? ends 8: on time.
    # c (child of a, 2 CPUs) scheduled at 2 waits for a's end (5); b holds 3, so c fits beside it: [5,9).
    run = execute_capped(problem(), (0, 1, 2), np.array([5, 3, 4]), np.array([4, 3, 2]), 5)
    assert run.starts == (0, 5, 5) and run.ends == (5, 8, 9) and run.peak == 5 and run.lateness == (0, 0, 0)
    # Capacity 4: b waits for a, then c waits for b: c [8,12) on time (u=12); b [5,8).
    run = execute_capped(problem(), (0, 1, 2), np.array([5, 3, 4]), np.array([4, 3, 2]), 4)
    assert run.starts == (0, 5, 8) and run.lateness == (0, 0, 0)
    # Capacity 4 with a longer a (7): b [7,10) is 2 late, c [10,14) is 2 late.
    run = execute_capped(problem(), (0, 1, 2), np.array([7, 3, 4]), np.array([4, 3, 2]), 4)
    assert run.starts == (0, 7, 10) and run.lateness == (0, 2, 2)
    # A job wider than the capacity runs alone rather than never.
    run = execute_capped(problem(), (0, 1, 2), np.array([5, 3, 4]), np.array([4, 3, 2]), 1)
    assert run.starts == (0, 5, 8)
