"""CP-SAT schedulers of seed 001: per-round (7)-(9) for AF, AWF, BSLD, P2SF, the "+" variants, and off-line.

Encodings (times are shifted so the model's origin is the round time, or the first submit off-line):
- AF (4) and AWF (5) are linear in the starts: exact.
- BSLD (3) is a maximum of two linear functions of the start: slow[j] >= SCALE and
  max(E_j, k) * slow[j] >= SCALE * F_j, minimised; slow[j] is then ceil(SCALE * BSLD_j) so the model's
  per-job value exceeds the true one by less than 1 / SCALE (1e-3).
- P2SF (6) is a ratio N / D of two sums of convex quartics and cubics. It is handled by Dinkelbach steps:
  for a fixed lambda (the exact ratio of the best plan known), minimise sum_j N_j - lambda * D_j, which is
  negative exactly when a plan with a lower ratio exists. Each term is a per-job cost table over a
  discretised start domain: the extra delay d_j = b_j - (earliest start) falls in one of the buckets {0},
  [1, 2), [2, 3), ... whose bounds grow geometrically by P2SF_BUCKET_RATIO; the cost of a bucket is the
  term at the bucket's lower end (exact for starting as early as possible, and for any delay it
  under-states Q_j by less than (1 - 1 / P2SF_BUCKET_RATIO) of the delay). Costs are scaled to integers
  (relative rounding error below 1e-9 of the largest term). Every candidate plan is then evaluated with
  the exact formula, so the table only steers the search: the plan kept is the one with the lowest
  exact local objective.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from ortools.sat import cp_model_pb2
from ortools.sat.python import cp_model

from models.hpc import metrics
from models.hpc.jobs import Job, Workload
from models.hpc.list_scheduling import Order, conservative
from models.hpc.simulator import RoundState

BSLD_SCALE = 1000
P2SF_BUCKET_RATIO = 1.25
P2SF_COST_RANGE = 10**9
DEFAULT_TIME_LIMIT = 20.0


class Objective(StrEnum):
    """Local objective of a CP round (and the off-line objective)."""

    AF = "af"
    AWF = "awf"
    BSLD = "bsld"
    P2SF = "p2sf"


METRIC_OF: dict[Objective, Callable[[Sequence[Job], Sequence[int]], float]] = {
    Objective.AF: metrics.af,
    Objective.AWF: metrics.awf,
    Objective.BSLD: metrics.bsld,
    Objective.P2SF: metrics.psf,
}

# Lists whose plans the "+" variants refine (seed 001, Secs. 5.2 and 5.4).
PLUS_ORDERS: dict[Objective, tuple[Order, ...]] = {
    Objective.AF: (Order.FCFS,),
    Objective.AWF: (Order.FCFS,),
    Objective.BSLD: (Order.SPF, Order.SAF, Order.SJF),
    Objective.P2SF: (Order.FCFS,),
}


@dataclass(frozen=True, slots=True)
class Task:
    """A job to place: it may start at `earliest` or later and needs `size` nodes for `duration` seconds."""

    key: int
    submit: int
    earliest: int
    size: int
    duration: int

    def as_job(self) -> Job:
        return Job(id=self.key, submit=self.submit, runtime=self.duration, size=self.size, requested=self.duration)


@dataclass(frozen=True, slots=True)
class Busy:
    """Nodes already taken: `size` nodes on [start, end)."""

    start: int
    end: int
    size: int


@dataclass(frozen=True)
class Problem:
    """One CP instance: tasks, fixed busy intervals, R nodes, and the latest completion allowed."""

    tasks: tuple[Task, ...]
    busy: tuple[Busy, ...]
    nodes: int
    horizon: int

    @property
    def origin(self) -> int:
        return min([t.earliest for t in self.tasks] + [b.start for b in self.busy])

    def admits(self, plan: dict[int, int]) -> bool:
        """Whether `plan` starts every task in its window and never has more than `nodes` nodes busy."""
        if any(not t.earliest <= plan[t.key] <= self.horizon - t.duration for t in self.tasks):
            return False
        changes = [(b.start, b.size) for b in self.busy] + [(b.end, -b.size) for b in self.busy]
        changes += [(plan[t.key], t.size) for t in self.tasks] + [
            (plan[t.key] + t.duration, -t.size) for t in self.tasks
        ]
        used = 0
        for _, delta in sorted(changes):  # at one instant the ends (negative) come before the starts
            used += delta
            if used > self.nodes:
                return False
        return True


@dataclass
class BuiltModel:
    """The CP-SAT model with its start variables (offsets from the problem origin)."""

    model: cp_model.CpModel
    starts: dict[int, cp_model.IntVar]
    origin: int
    tables: bool = False


@dataclass(frozen=True)
class Solution:
    """Absolute planned starts (None when no feasible plan was found), solver status, solver seconds."""

    plan: dict[int, int] | None
    status: str
    seconds: float


def local_value(problem: Problem, plan: dict[int, int], objective: Objective) -> float:
    """The exact objective (3)-(6) of a plan, estimates standing in for runtimes."""
    jobs = [t.as_job() for t in problem.tasks]
    return METRIC_OF[objective](jobs, [plan[t.key] for t in problem.tasks])


def _bucket_bounds(span: int) -> list[tuple[int, int]]:
    """Delay buckets [lo, hi): {0}, then widths growing by P2SF_BUCKET_RATIO until `span` is covered."""
    bounds = [(0, 1)]
    lo = 1
    while lo <= span:
        hi = min(span + 1, max(lo + 1, math.ceil(lo * P2SF_BUCKET_RATIO)))
        bounds.append((lo, hi))
        lo = hi
    return bounds


def _psf_term(task: Task, wait: float, lam: float) -> float:
    """r_j [ (3/4)(F^4 - Q^4) - lambda (F^3 - Q^3) ] at wait Q (alpha = 2)."""
    a = metrics.P2SF_ALPHA
    flow = wait + task.duration
    num = (a + 1) / (a + 2) * (flow ** (a + 2) - wait ** (a + 2))
    den = flow ** (a + 1) - wait ** (a + 1)
    return task.size * (num - lam * den)


def _add_psf_objective(built: BuiltModel, problem: Problem, lam: float) -> None:
    model, origin = built.model, built.origin
    built.tables = True
    tables: list[tuple[Task, list[tuple[int, int]], list[float]]] = []
    for task in problem.tasks:
        latest = problem.horizon - task.duration - task.earliest
        buckets = _bucket_bounds(latest)
        costs = [_psf_term(task, task.earliest - task.submit + lo, lam) for lo, _ in buckets]
        tables.append((task, buckets, costs))
    largest = max((abs(c) for _, _, costs in tables for c in costs), default=1.0) or 1.0
    scale = P2SF_COST_RANGE / largest
    terms: list[cp_model.LinearExprT] = []
    for task, buckets, costs in tables:
        j = task.key
        pick = [model.new_bool_var(f"bucket[{j},{k}]") for k in range(len(buckets))]
        delay = built.starts[j] - (task.earliest - origin)
        # exactly one bucket per job, and the delay d_j lies inside the chosen bucket [lo_k, hi_k)
        model.add_exactly_one(pick)
        model.add(delay >= sum(lo * p for (lo, _), p in zip(buckets, pick, strict=True)))
        model.add(delay <= sum((hi - 1) * p for (_, hi), p in zip(buckets, pick, strict=True)))
        # cost[j] = table_j[bucket]: N_j - lambda D_j at the bucket's lower end, scaled to integers
        terms.extend(round(c * scale) * p for c, p in zip(costs, pick, strict=True))
    model.minimize(sum(terms))


def _add_bsld_objective(built: BuiltModel, problem: Problem) -> None:
    model, origin = built.model, built.origin
    slow = []
    for task in problem.tasks:
        j = task.key
        bound = max(task.duration, int(metrics.BSLD_BOUND))
        flow = built.starts[j] + origin + task.duration - task.submit
        worst = BSLD_SCALE * (problem.horizon - task.submit) // bound + 1
        s = model.new_int_var(BSLD_SCALE, max(BSLD_SCALE, worst), f"slow[{j}]")
        # (3): slow[j] >= SCALE * max(1, F_j / max(E_j, k))
        model.add(bound * s >= BSLD_SCALE * flow)
        slow.append(s)
    model.minimize(sum(slow))


def build_model(problem: Problem, objective: Objective, lam: float = 0.0) -> BuiltModel:
    """Variables start[j] (offset from origin), intervals, the capacity constraint and the objective."""
    model = cp_model.CpModel()
    origin = problem.origin
    starts: dict[int, cp_model.IntVar] = {}
    intervals = []
    demands = []
    for task in problem.tasks:
        j = task.key
        latest = problem.horizon - task.duration - origin
        # (8)/(2): b_j >= t_now (or s_j off-line), and completion within the horizon
        starts[j] = model.new_int_var(task.earliest - origin, latest, f"start[{j}]")
        intervals.append(model.new_fixed_size_interval_var(starts[j], task.duration, f"run[{j}]"))
        demands.append(task.size)
    for n, busy in enumerate(problem.busy):
        intervals.append(model.new_fixed_size_interval_var(busy.start - origin, busy.end - busy.start, f"busy[{n}]"))
        demands.append(busy.size)
    # (7)/(1): sum of pulse_j(t) <= R at every t
    model.add_cumulative(intervals, demands, problem.nodes)
    # search: earliest-start first, which packs a first feasible plan quickly (no effect on optimality)
    strategy = cp_model_pb2.DecisionStrategyProto
    model.add_decision_strategy(list(starts.values()), strategy.CHOOSE_LOWEST_MIN, strategy.SELECT_MIN_VALUE)  # type: ignore[arg-type]  # ortools stubs
    built = BuiltModel(model=model, starts=starts, origin=origin)
    if objective is Objective.AF:
        # (4): sum_j F_j (the 1/|Q| factor is constant)
        model.minimize(sum(starts[t.key] + origin + t.duration - t.submit for t in problem.tasks))
    elif objective is Objective.AWF:
        # (5): sum_j r_j E_j F_j (the denominator is constant)
        model.minimize(
            sum(t.size * t.duration * (starts[t.key] + origin + t.duration - t.submit) for t in problem.tasks)
        )
    elif objective is Objective.BSLD:
        _add_bsld_objective(built, problem)
    else:
        _add_psf_objective(built, problem, lam)
    return built


def solve(
    built: BuiltModel, time_limit: float, workers: int = 1, hint: dict[int, int] | None = None, seed: int = 0
) -> Solution:
    """Run CP-SAT; the plan is None when no feasible plan was found within the time limit."""
    if hint:
        for key, var in built.starts.items():
            built.model.add_hint(var, hint[key] - built.origin)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.01, time_limit)
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    if built.tables:
        # the per-job cost tables make the LP relaxation large and weak; search without it
        solver.parameters.linearization_level = 0
    status = solver.solve(built.model)
    seconds = solver.wall_time
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return Solution(plan=None, status=solver.status_name(status), seconds=seconds)
    plan = {key: solver.value(var) + built.origin for key, var in built.starts.items()}
    return Solution(plan=plan, status=solver.status_name(status), seconds=seconds)


def optimise(
    problem: Problem,
    objective: Objective,
    time_limit: float,
    workers: int = 1,
    hint: dict[int, int] | None = None,
    reference: float | None = None,
    steps: int = 2,
) -> Solution:
    """Build, solve, extract; for P2SF up to `steps` Dinkelbach steps from `reference` (or the hint's ratio), never
    worse than a hint the problem admits (the steps optimise a bucketed linearisation, not P2SF itself)."""
    if objective is not Objective.P2SF:
        return solve(build_model(problem, objective), time_limit, workers, hint)
    lam = reference if reference is not None else (local_value(problem, hint, objective) if hint else 0.0)
    best = Solution(plan=None, status="UNKNOWN", seconds=0.0)
    best_value = math.inf
    if hint and problem.admits(hint):
        best, best_value = (
            Solution(plan=dict(hint), status="FEASIBLE", seconds=0.0),
            local_value(problem, hint, objective),
        )
    seconds = 0.0
    for step in range(steps):
        found = solve(build_model(problem, objective, lam), time_limit / steps, workers, hint)
        seconds += found.seconds
        if found.plan is None:
            break
        value = local_value(problem, found.plan, objective)
        if value < best_value:
            best, best_value = found, value
        if step and value >= lam:
            break
        lam, hint = value, found.plan
    return replace(best, seconds=seconds)


@dataclass
class RoundRecord:
    """One CP round for the benchmark: queue length, total solve seconds, and whether CP's plan was used."""

    queue: int
    seconds: float
    used_cp: bool


@dataclass
class CpStats:
    """Counts over a simulation: rounds decided without CP, CP rounds, fallbacks to List-REG."""

    trivial_rounds: int = 0
    cp_rounds: int = 0
    fallbacks: int = 0
    records: list[RoundRecord] = field(default_factory=list)


def round_problem(state: RoundState) -> Problem:
    """(7)-(8): the queued jobs from t_now, the running jobs as busy nodes until their estimated ends.

    The horizon is the last estimated completion of the List-REG plan plus the longest queued estimate:
    the List-REG plan is always feasible, and plans ending later are not searched.
    """
    tasks = tuple(Task(w.index, w.submit, state.now, w.size, w.estimate) for w in state.queue)
    busy = tuple(Busy(state.now, r.end, r.size) for r in state.running if r.end > state.now)
    reference = conservative(Order.FCFS).plan(state)
    last = max([state.now] + [b.end for b in busy] + [reference[t.key] + t.duration for t in tasks])
    horizon = last + max(t.duration for t in tasks)
    return Problem(tasks=tasks, busy=busy, nodes=state.nodes, horizon=horizon)


class CpScheduler:
    """Per-round CP-SAT scheduler (9): dispatch the jobs whose planned start is t_now.

    Rounds where no queued job fits the free nodes start nothing, and rounds where the whole queue fits
    start everything (the List-REG decision; optimal for the regular objectives AF, AWF, BSLD); CP-SAT
    decides the rest. With `plus`, the plans of PLUS_ORDERS are candidates too, each also refined by
    CP-SAT from its hint, and the plan with the lowest exact local objective wins. When CP-SAT finds no
    plan, the round falls back to List-REG.
    """

    def __init__(
        self, objective: Objective, time_limit: float = DEFAULT_TIME_LIMIT, plus: bool = False, workers: int = 1
    ) -> None:
        if time_limit <= 0:
            raise ValueError(f"time_limit={time_limit} must be > 0")
        self.objective = objective
        self.time_limit = time_limit
        self.plus = plus
        self.workers = workers
        self.stats = CpStats()

    def _trivial(self, state: RoundState) -> list[int] | None:
        if min(w.size for w in state.queue) > state.free:
            return []
        if sum(w.size for w in state.queue) <= state.free:
            return [w.index for w in state.queue]
        return None

    def _candidates(self, state: RoundState, problem: Problem) -> tuple[list[tuple[dict[int, int], bool]], float]:
        """Candidate plans (plan, made by CP-SAT) and the solver seconds spent."""
        references = [conservative(o).plan(state) for o in PLUS_ORDERS[self.objective]] if self.plus else []
        solves = 1 + len(references)
        share = self.time_limit / solves
        candidates: list[tuple[dict[int, int], bool]] = [(plan, False) for plan in references]
        seconds = 0.0
        for hint in [None, *references]:
            found = optimise(problem, self.objective, share, self.workers, hint=hint)
            seconds += found.seconds
            if found.plan is not None:
                candidates.append((found.plan, True))
        return candidates, seconds

    def __call__(self, state: RoundState) -> Sequence[int]:
        trivial = self._trivial(state)
        if trivial is not None:
            self.stats.trivial_rounds += 1
            return trivial
        self.stats.cp_rounds += 1
        problem = round_problem(state)
        candidates, seconds = self._candidates(state, problem)
        if not candidates:
            self.stats.fallbacks += 1
            self.stats.records.append(RoundRecord(len(state.queue), seconds, False))
            return conservative(Order.FCFS)(state)
        plan, used_cp = min(candidates, key=lambda c: local_value(problem, c[0], self.objective))
        self.stats.records.append(RoundRecord(len(state.queue), seconds, used_cp))
        return [key for key, start in plan.items() if start == state.now]


@dataclass(frozen=True)
class OfflineResult:
    """Off-line schedule of a window: starts aligned with the window's jobs, solver status, seconds."""

    starts: tuple[int, ...]
    status: str
    seconds: float


def offline_problem(window: Workload, reference: Sequence[int]) -> Problem:
    """(1)-(2) over a window with runtimes known.

    The horizon admits the reference schedule and every active schedule (no job can start earlier alone),
    among which lie the optima of the regular objectives AF, AWF, BSLD: after the last submission such a
    schedule never leaves the machine empty, so it ends by max s_j + sum D_j.
    """
    tasks = tuple(Task(i, j.submit, j.submit, j.size, j.runtime) for i, j in enumerate(window.jobs))
    last = max(b + j.runtime for j, b in zip(window.jobs, reference, strict=True))
    horizon = max(last, max(j.submit for j in window.jobs) + sum(j.runtime for j in window.jobs))
    return Problem(tasks=tasks, busy=(), nodes=window.nodes, horizon=horizon)


def solve_offline(
    window: Workload, objective: Objective, reference: Sequence[int], time_limit: float, workers: int = 1
) -> OfflineResult:
    """CP-OFF-<metric>: optimise the whole window at once, hinted with (and never worse than) `reference`."""
    problem = offline_problem(window, reference)
    hint = dict(enumerate(reference))
    found = optimise(problem, objective, time_limit, workers, hint=hint)
    if found.plan is None or local_value(problem, found.plan, objective) > local_value(problem, hint, objective):
        return OfflineResult(tuple(reference), "REFERENCE", found.seconds)
    return OfflineResult(tuple(found.plan[i] for i in range(len(window.jobs))), found.status, found.seconds)
