"""CP-SAT schedulers on tiny instances, checked against brute force over all integer start times."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest

from models.hpc import cp
from models.hpc.cp import Busy, CpScheduler, Objective, Problem, Task
from models.hpc.jobs import Job, Workload
from models.hpc.list_scheduling import Order, conservative
from models.hpc.metrics import af, awf, bsld, psf
from models.hpc.simulator import RoundState, Running, Waiting, simulate

# t_now = 0, R = 3; one running job holds 2 nodes until 4.
ROUND = Problem(
    tasks=(Task(0, 0, 0, 2, 3), Task(1, 0, 0, 1, 5), Task(2, 0, 0, 3, 1), Task(3, 0, 0, 1, 2)),
    busy=(Busy(0, 4, 2),),
    nodes=3,
    horizon=14,
)


def feasible(problem: Problem, plan: dict[int, int]) -> bool:
    for t in range(problem.origin, problem.horizon):
        used = sum(b.size for b in problem.busy if b.start <= t < b.end)
        used += sum(k.size for k in problem.tasks if plan[k.key] <= t < plan[k.key] + k.duration)
        if used > problem.nodes:
            return False
    return all(k.earliest <= plan[k.key] <= problem.horizon - k.duration for k in problem.tasks)


def brute_force(problem: Problem, objective: Objective) -> float:
    ranges = [range(k.earliest, problem.horizon - k.duration + 1) for k in problem.tasks]
    best = float("inf")
    for starts in itertools.product(*ranges):
        plan = {k.key: b for k, b in zip(problem.tasks, starts, strict=True)}
        if feasible(problem, plan):
            best = min(best, cp.local_value(problem, plan, objective))
    return best


@pytest.mark.parametrize("objective", [Objective.AF, Objective.AWF])
def test_linear_objectives_reach_the_brute_force_optimum(objective: Objective) -> None:
    found = cp.optimise(ROUND, objective, time_limit=5.0)
    assert found.plan is not None and feasible(ROUND, found.plan)
    assert cp.local_value(ROUND, found.plan, objective) == pytest.approx(brute_force(ROUND, objective))


def test_bsld_encoding_is_within_one_over_scale_of_the_brute_force_optimum() -> None:
    found = cp.optimise(ROUND, Objective.BSLD, time_limit=5.0)
    assert found.plan is not None and feasible(ROUND, found.plan)
    value = cp.local_value(ROUND, found.plan, Objective.BSLD)
    best = brute_force(ROUND, Objective.BSLD)
    assert best <= value <= best + 1.0 / cp.BSLD_SCALE


# R = 3, one node busy on [0, 2); the P2SF optimum (brute force) starts job 1 at 1 although it fits at 0.
P2SF_CASE = Problem(
    tasks=(Task(0, 0, 0, 2, 3), Task(1, 0, 0, 1, 4), Task(2, 0, 0, 1, 2), Task(3, 0, 0, 3, 2)),
    busy=(Busy(0, 2, 1),),
    nodes=3,
    horizon=9,
)


def test_p2sf_dinkelbach_steps_reach_the_brute_force_optimum() -> None:
    found = cp.optimise(P2SF_CASE, Objective.P2SF, time_limit=5.0, steps=4)
    assert found.plan is not None and feasible(P2SF_CASE, found.plan)
    value = cp.local_value(P2SF_CASE, found.plan, Objective.P2SF)
    assert value == pytest.approx(brute_force(P2SF_CASE, Objective.P2SF))


def test_local_p2sf_can_reward_delaying_a_job_that_fits_now() -> None:
    # the ratio (6) is not monotone in the starts: job 1 at 1 beats job 1 at 0, all else equal
    early = {0: 2, 1: 0, 2: 0, 3: 5}
    late = {0: 2, 1: 1, 2: 0, 3: 5}
    assert feasible(P2SF_CASE, early) and feasible(P2SF_CASE, late)
    assert cp.local_value(P2SF_CASE, late, Objective.P2SF) < cp.local_value(P2SF_CASE, early, Objective.P2SF)


def test_p2sf_plan_is_never_worse_than_its_hint() -> None:
    hint = {0: 4, 1: 0, 2: 9, 3: 5}
    assert feasible(ROUND, hint)
    found = cp.optimise(ROUND, Objective.P2SF, time_limit=2.0, hint=hint)
    assert found.plan is not None
    assert cp.local_value(ROUND, found.plan, Objective.P2SF) <= cp.local_value(ROUND, hint, Objective.P2SF)


def test_buckets_cover_every_delay_exactly_once() -> None:
    for span in (0, 1, 7, 100, 12345):
        bounds = cp._bucket_bounds(span)
        assert bounds[0] == (0, 1)
        assert all(a[1] == b[0] for a, b in itertools.pairwise(bounds))
        assert bounds[-1][1] == span + 1


def test_local_value_uses_the_metric_formulas() -> None:
    plan = {0: 4, 1: 0, 2: 9, 3: 5}
    jobs = [Job(k.key, k.submit, k.duration, k.size, k.duration) for k in ROUND.tasks]
    starts = [plan[k.key] for k in ROUND.tasks]
    for objective, metric in [(Objective.AF, af), (Objective.AWF, awf), (Objective.BSLD, bsld), (Objective.P2SF, psf)]:
        assert cp.local_value(ROUND, plan, objective) == metric(jobs, starts)


def round_state() -> RoundState:
    queue = (Waiting(0, 0, 2, 3), Waiting(1, 0, 1, 5), Waiting(2, 0, 3, 1))
    return RoundState(now=0, nodes=3, free=1, queue=queue, running=(Running(9, 2, 4),))


def test_round_problem_encodes_queue_running_jobs_and_a_horizon_admitting_list_reg() -> None:
    state = round_state()
    problem = cp.round_problem(state)
    assert [t.key for t in problem.tasks] == [0, 1, 2]
    assert problem.busy == (Busy(0, 4, 2),)
    plan = conservative(Order.FCFS).plan(state)
    assert feasible(problem, plan)


def test_round_dispatches_exactly_the_jobs_planned_at_t_now() -> None:
    state = round_state()
    scheduler = CpScheduler(Objective.AF, time_limit=2.0)
    started = scheduler(state)
    problem = cp.round_problem(state)
    best = brute_force(problem, Objective.AF)
    assert scheduler.stats.cp_rounds == 1
    # the only job that fits the one free node now is job 1; an AF-optimal plan starts it at 0
    assert list(started) == [1]
    assert best == pytest.approx(cp.local_value(problem, {0: 4, 1: 0, 2: 7}, Objective.AF))


def test_trivial_rounds_skip_the_solver() -> None:
    scheduler = CpScheduler(Objective.BSLD, time_limit=1.0)
    nothing_fits = RoundState(0, 3, 1, (Waiting(0, 0, 2, 3),), (Running(9, 2, 4),))
    all_fit = RoundState(0, 3, 3, (Waiting(0, 0, 2, 3), Waiting(1, 0, 1, 3)), ())
    assert list(scheduler(nothing_fits)) == []
    assert list(scheduler(all_fit)) == [0, 1]
    assert scheduler.stats.trivial_rounds == 2 and scheduler.stats.cp_rounds == 0


def test_scheduler_rejects_a_non_positive_time_limit() -> None:
    with pytest.raises(ValueError, match=r"time_limit=0 must be > 0"):
        CpScheduler(Objective.AF, time_limit=0)


def tiny_workload() -> Workload:
    rows = [(0, 4, 2), (1, 3, 3), (1, 1, 1), (2, 2, 2), (3, 5, 1)]
    return Workload(tuple(Job(i, s, d, r, d) for i, (s, d, r) in enumerate(rows)), 3)


def check_feasible(w: Workload, starts: Sequence[int]) -> None:
    for t in range(max(b + j.runtime for j, b in zip(w.jobs, starts, strict=True))):
        used = sum(j.size for j, b in zip(w.jobs, starts, strict=True) if b <= t < b + j.runtime)
        assert used <= w.nodes
    assert all(b >= j.submit for j, b in zip(w.jobs, starts, strict=True))


@pytest.mark.parametrize("objective", list(Objective))
@pytest.mark.parametrize("plus", [False, True])
def test_online_cp_schedules_are_feasible(objective: Objective, plus: bool) -> None:
    w = tiny_workload()
    scheduler = CpScheduler(objective, time_limit=0.5, plus=plus)
    check_feasible(w, simulate(w, scheduler).starts)
    assert scheduler.stats.fallbacks == 0


@pytest.mark.parametrize("objective", [Objective.AF, Objective.AWF, Objective.BSLD])
def test_offline_cp_reaches_the_brute_force_optimum(objective: Objective) -> None:
    w = tiny_workload()
    reference = simulate(w, conservative(Order.FCFS)).starts
    result = cp.solve_offline(w, objective, reference, time_limit=5.0)
    check_feasible(w, result.starts)
    problem = cp.offline_problem(w, reference)
    # a regular objective has an optimal active schedule: the best over every start order
    best = min(cp.local_value(problem, plan, objective) for plan in active_plans(problem))
    value = cp.local_value(problem, dict(enumerate(result.starts)), objective)
    assert best <= value <= best + 1.0 / cp.BSLD_SCALE + 1e-9


def active_plans(problem: Problem) -> list[dict[int, int]]:
    """Every start order, each job at its earliest instant after the jobs before it and the busy nodes (no horizon):
    the active schedules."""
    plans = []
    for order in itertools.permutations(problem.tasks):
        placed = [(b.start, b.end, b.size) for b in problem.busy]
        plan: dict[int, int] = {}
        for t in order:
            b = next(b for b in itertools.count(t.earliest)
                     if all(sum(s for x, y, s in placed if x <= u < y) + t.size <= problem.nodes
                            for u in range(b, b + t.duration)))
            placed.append((b, b + t.duration, t.size))
            plan[t.key] = b
        plans.append(plan)
    return plans


def test_offline_p2sf_is_never_worse_than_list_reg() -> None:
    w = tiny_workload()
    reference = simulate(w, conservative(Order.FCFS)).starts
    result = cp.solve_offline(w, Objective.P2SF, reference, time_limit=2.0)
    check_feasible(w, result.starts)
    jobs = list(w.jobs)
    assert psf(jobs, result.starts) <= psf(jobs, reference)


def test_offline_cp_is_not_limited_to_list_reg_makespan() -> None:
    # R = 4. List-REG runs the 12-s full-machine job first and ends at 29; the AF optimum (seed 001: only (1)
    # and (2) constrain the off-line schedule) runs it last, ending at 30, with AF 53/6 instead of 82/6.
    rows = [(0, 12, 4), (1, 4, 4), (4, 4, 1), (7, 2, 3), (7, 2, 4), (10, 7, 4)]
    w = Workload(tuple(Job(i, s, d, r, d) for i, (s, d, r) in enumerate(rows)), 4)
    reference = simulate(w, conservative(Order.FCFS)).starts
    assert max(b + j.runtime for j, b in zip(w.jobs, reference, strict=True)) == 29
    optimum = [18, 1, 5, 7, 9, 11]
    check_feasible(w, optimum)
    assert af(list(w.jobs), optimum) == pytest.approx(53 / 6)
    result = cp.solve_offline(w, Objective.AF, reference, time_limit=5.0)
    check_feasible(w, result.starts)
    assert af(list(w.jobs), result.starts) == pytest.approx(53 / 6)
