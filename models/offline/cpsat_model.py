"""CP-SAT model of the hindsight problem (docs/model.md section 8): optional intervals, a cumulative of C, step values.

Math (J = jobs that can earn value; job j has arrival a_j, duration d_j, concurrency c_j, birth b_j and reachable
value steps (k_ji, v_ji), i = 1..m_j, with v_j(m_j+1) = 0):

    maximise   sum_j sum_i (v_ji - v_j(i+1)) * meet[j,i]
    subject to a_j <= start[j] <= b_j + k_jm - d_j                        (domain: every start earns value)
               interval[j] = [start[j], start[j] + d_j) present iff run[j]
               cumulative(interval, c, C)                                  (load <= C_t in every round t)
               meet[j,i] => start[j] + d_j - b_j <= k_ji,  meet[j,i] => run[j],  meet[j,m_j] = run[j]
  time-indexed channel (redundant; on by default, it gives CP-SAT's LP the time-indexed relaxation):
               sum_s at[j,s] = run[j],   start[j] = a_j + sum_s (s - a_j) at[j,s]
               meet[j,i] = sum_{s <= b_j + k_ji - d_j} at[j,s]
               sum_j c_j sum_{s = t-d_j+1}^{t} at[j,s] <= C_t              for every round t
  left-shift dominance (optional, on the at[j,s] of the channel or the indexed model; valid by dominance.py):
               at[j,s] => end[s] for s > a_j where C_s <= C_{s-1},
               end[s] => OR_{k: s - d_k a start of k} at[k, s - d_k]

The `indexed` model is the time-indexed formulation alone (the MILP's, models/offline/milp.py), without
intervals, start or meet variables: CP-SAT's LP is then small enough to reach the LP bound at 400 jobs:
    maximise   sum_{j,s} V_j(s + d_j) at[j,s]
    subject to sum_s at[j,s] <= 1,   sum_j c_j sum_{s = t-d_j+1}^{t} at[j,s] <= C   for every round t

With `rc_fixing` (two_phase only), the second phase first drops the starts that reduced-cost fixing at the plain
phase's value L rules out (models/offline/rcfix.py): at[j,s] = 0 (or 1) where B(y) - |r_js| < L, so the
fixed model keeps every schedule worth more than L, and the optimum is max(L, its optimum). With `lns_share`
(two_phase only), window LNS (models/offline/lns.py) improves the plain phase's schedule before the second phase.

The telescoped sum equals V_j(start + d_j) = v_ji for the first met deadline. Values are scaled to integers
(`value_scale`, by default the smallest power of ten up to 1e6 that makes every value an integer, lowered where
the objective could overflow CP-SAT's integers), each step's
coefficient being the difference of the rounded values, so a job's scaled value is its rounded value in both
models; the worst rounding error of each job is added to the reported bound, and the reported value is recomputed
from the schedule in floating point.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from ortools.sat import cp_model_pb2
from ortools.sat.python import cp_model

from models.offline.hindsight import HindsightInstance, HindsightJob, OfflineResult, Status, relative_gap

SOLVER_NAME = "cpsat"
Strategy = Literal["plain", "channel", "two_phase"]
STRATEGIES: tuple[Strategy, ...] = ("plain", "channel", "two_phase")
BoundModel = Literal["channel", "indexed"]
BOUND_MODELS: tuple[BoundModel, ...] = ("channel", "indexed")
Model = Literal["plain", "channel", "indexed"]


@dataclass(frozen=True)
class CpSatParams:
    """Time limit (s), CP-SAT worker count, an optional hint (job id -> start or None), objective scale."""

    time_limit: float = 60.0
    workers: int = 2
    hint: Mapping[str, int | None] | None = None
    value_scale: float | None = None
    log: bool = False
    strategy: Strategy = "two_phase"
    plain_share: float = 0.3  # two_phase: the share of the time limit given to the plain model
    deterministic: bool = False  # read time_limit as CP-SAT deterministic time: same model, same answer
    left_shift: bool = False  # add the left-shift dominance to the time-indexed variables (not with plain)
    bound_model: BoundModel = "channel"  # two_phase: the model of the second phase
    rc_fixing: bool = False  # two_phase: reduced-cost fixing (rcfix.py) of the second phase at the plain value
    lns_share: float = 0.0  # two_phase: the share of the time limit for window LNS (lns.py) after the plain phase

    def __post_init__(self) -> None:
        if not self.time_limit > 0:
            raise ValueError(f"time_limit={self.time_limit} must be above 0 seconds")
        if self.workers < 1:
            raise ValueError(f"workers={self.workers} is below the bound 1")
        if self.value_scale is not None and not self.value_scale >= 1:
            raise ValueError(f"value_scale={self.value_scale} is below the bound 1")
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy={self.strategy!r} is not one of {', '.join(STRATEGIES)}")
        if not 0 < self.plain_share < 1:
            raise ValueError(f"plain_share={self.plain_share} must lie strictly between 0 and 1")
        if self.left_shift and self.strategy == "plain":
            raise ValueError("left_shift=True needs the time-indexed channel, which strategy='plain' leaves out")
        if self.bound_model not in BOUND_MODELS:
            raise ValueError(f"bound_model={self.bound_model!r} is not one of {', '.join(BOUND_MODELS)}")
        if not 0 <= self.lns_share < 1 or (self.lns_share > 0 and self.plain_share + self.lns_share >= 1):
            raise ValueError(f"lns_share={self.lns_share} must be at least 0 and leave part of the limit: "
                             f"plain_share + lns_share = {self.plain_share + self.lns_share} is not below 1")
        if self.lns_share > 0 and self.strategy != "two_phase":
            raise ValueError(f"lns_share={self.lns_share} needs strategy='two_phase' (it improves the plain phase's "
                             f"schedule), not {self.strategy!r}")
        if self.rc_fixing and self.strategy != "two_phase":
            raise ValueError(f"rc_fixing=True needs strategy='two_phase' (its plain phase gives the incumbent), "
                             f"not {self.strategy!r}")


@dataclass
class CpSatModel:
    """The built model and the variables `extract` reads back."""

    instance: HindsightInstance
    model: cp_model.CpModel
    start: dict[str, cp_model.IntVar]
    run: dict[str, cp_model.IntVar]
    meet: dict[str, list[cp_model.IntVar]]
    at: dict[str, dict[int, cp_model.IntVar]]
    scale: float
    rounding_slack: float


def build(instance: HindsightInstance, value_scale: float | None = None, time_indexed: bool = True,
          left_shift: bool = False) -> CpSatModel:
    """Variables, the cumulative and the objective; jobs that cannot earn value are left out.

    With `time_indexed`, a redundant channel at[j,s] (job j starts at s) with per-round capacity rows is added:
    the same feasible set, but CP-SAT's LP relaxation becomes the (much tighter) time-indexed one. `left_shift`
    (only with the channel) keeps just the schedules whose run jobs start at arrival or when another run job ends:
    fewer schedules, the same optimum (models/offline/dominance.py).
    """
    if left_shift and not time_indexed:
        raise ValueError("left_shift=True needs time_indexed=True: the dominance is stated on the at[j,s] channel")
    model = cp_model.CpModel()
    scale = value_scale if value_scale is not None else auto_scale(instance)
    built = CpSatModel(instance, model, {}, {}, {}, {}, scale, 0.0)
    intervals: list[cp_model.IntervalVar] = []
    demands: list[int] = []
    terms: list[tuple[cp_model.IntVar, int]] = []
    for job in instance.jobs:
        if not job.can_earn:
            continue
        intervals.append(_add_job(built, job))
        demands.append(job.concurrency)
        terms.extend(_add_value_steps(built, job))
    # Capacity: sum_j c_j [start[j] <= t < start[j] + d_j] run[j] <= C_t for every round t (a round below C
    # holds a fixed interval of demand C - C_t; past the series, C_t is its last value up to the horizon).
    rows = instance.capacity_row(max(instance.horizon, len(instance.capacities)))
    for t, c_t in enumerate(rows.tolist()):
        if c_t < instance.capacity:
            intervals.append(model.new_fixed_size_interval_var(t, 1, f"shortfall[{t}]"))
            demands.append(instance.capacity - c_t)
    model.add_cumulative(intervals, demands, instance.capacity)
    if time_indexed:
        _add_time_indexed_channel(built)
        if left_shift:
            _add_left_shift_dominance(built)
    # Objective: sum of telescoped step increments of the met deadlines.
    model.maximize(sum(coef * var for var, coef in terms))
    return built


def build_indexed(instance: HindsightInstance, value_scale: float | None = None,
                  left_shift: bool = False) -> CpSatModel:
    """The time-indexed model alone: at[j,s] per valuable start, one start per job, capacity per round."""
    model = cp_model.CpModel()
    scale = value_scale if value_scale is not None else auto_scale(instance)
    built = CpSatModel(instance, model, {}, {}, {}, {}, scale, 0.0)
    covering: dict[int, list[tuple[cp_model.IntVar, int]]] = {}
    terms: list[tuple[cp_model.IntVar, int]] = []
    for job in instance.jobs:
        if not job.can_earn:
            continue
        at = {s: model.new_bool_var(f"at[{job.id},{s}]") for s in job.starts()}
        built.at[job.id] = at
        # At most one start: sum_s at[j,s] <= 1.
        model.add_at_most_one(at.values())
        for s, var in at.items():
            for t in range(s, s + job.duration):
                covering.setdefault(t, []).append((var, job.concurrency))
        terms.extend(_indexed_values(built, job))
    _add_capacity_rows(built, covering)
    if left_shift:
        _add_left_shift_dominance(built)
    # Objective: sum_{j,s} V_j(s + d_j) at[j,s].
    model.maximize(sum(coef * var for var, coef in terms))
    return built


def _indexed_values(built: CpSatModel, job: HindsightJob) -> list[tuple[cp_model.IntVar, int]]:
    """The scaled value of each start; the worst rounding error of the job's steps goes into the slack."""
    steps = job.reachable_steps()
    built.rounding_slack += max(abs(round(v * built.scale) - v * built.scale) for _, v in steps) / built.scale
    return [(var, round(job.value(s) * built.scale)) for s, var in built.at[job.id].items()]


MAX_SCALED_WEIGHT = 2.0**53  # CP-SAT refuses an objective whose sum of |coefficients| may overflow int64


def auto_scale(instance: HindsightInstance, max_scale: float = 1e6) -> float:
    """The smallest power of ten (at most `max_scale`) that turns every step value into an integer, lowered while
    the scaled objective could weigh more than MAX_SCALED_WEIGHT (the indexed model: a job's best value per start)."""
    values = [v for job in instance.jobs for _, v in job.value_steps]
    weight = math.fsum(len(job.starts()) * job.value_steps[0][1] for job in instance.jobs if job.can_earn)
    scale = 1.0
    while scale < max_scale and any(abs(v * scale - round(v * scale)) > 1e-9 * max(1.0, v * scale)
                                    for v in values):
        scale *= 10.0
    while weight * scale > MAX_SCALED_WEIGHT:
        scale /= 10.0
    return scale


def _add_job(built: CpSatModel, job: HindsightJob) -> cp_model.IntervalVar:
    j = job.id
    # Domain: a_j <= start[j] <= b_j + k_jm - d_j.
    start = built.model.new_int_var(job.arrival, job.last_start, f"start[{j}]")
    run = built.model.new_bool_var(f"run[{j}]")
    built.start[j], built.run[j] = start, run
    # Interval [start[j], start[j] + d_j), present iff run[j].
    return built.model.new_optional_fixed_size_interval_var(start, job.duration, run, f"interval[{j}]")


def _add_value_steps(built: CpSatModel, job: HindsightJob) -> list[tuple[cp_model.IntVar, int]]:
    j, model = job.id, built.model
    steps = job.reachable_steps()
    meets: list[cp_model.IntVar] = []
    terms: list[tuple[cp_model.IntVar, int]] = []
    for i, (k, v) in enumerate(steps):
        if i == len(steps) - 1:
            meet = built.run[j]  # meet[j,m] = run[j]: the domain already meets the last deadline.
        else:
            meet = model.new_bool_var(f"meet[{j},{i}]")
            # meet[j,i] => start[j] + d_j - b_j <= k_ji and meet[j,i] => run[j].
            model.add(built.start[j] <= job.last_start_for(k)).only_enforce_if(meet)
            model.add_implication(meet, built.run[j])
        if meets:
            # Meeting an earlier deadline meets every later one: meet[j,i-1] => meet[j,i].
            model.add_implication(meets[-1], meet)
        meets.append(meet)
        # The increments of the rounded values: met deadlines then add up to round(v_i * scale) exactly.
        below = steps[i + 1][1] if i + 1 < len(steps) else 0.0
        terms.append((meet, round(v * built.scale) - round(below * built.scale)))
    built.rounding_slack += max(abs(round(v * built.scale) - v * built.scale) for _, v in steps) / built.scale
    built.meet[j] = meets
    return terms


def _add_time_indexed_channel(built: CpSatModel) -> None:
    model, instance = built.model, built.instance
    covering: dict[int, list[tuple[cp_model.IntVar, int]]] = {}
    for job in instance.jobs:
        if job.id not in built.run:
            continue
        j = job.id
        at = {s: model.new_bool_var(f"at[{j},{s}]") for s in job.starts()}
        built.at[j] = at
        # Channel: sum_s at[j,s] = run[j]; start[j] = a_j + sum_s (s - a_j) at[j,s].
        model.add(sum(at.values()) == built.run[j])
        model.add(built.start[j] == job.arrival + sum((s - job.arrival) * var for s, var in at.items()))
        for s, var in at.items():
            for t in range(s, s + job.duration):
                covering.setdefault(t, []).append((var, job.concurrency))
        # Deadlines: meet[j,i] = sum_{s <= b_j + k_ji - d_j} at[j,s].
        for (k, _), meet in zip(job.reachable_steps(), built.meet[j], strict=True):
            model.add(meet == sum(var for s, var in at.items() if s <= job.last_start_for(k)))
    _add_capacity_rows(built, covering)


def _add_capacity_rows(built: CpSatModel, covering: dict[int, list[tuple[cp_model.IntVar, int]]]) -> None:
    # Capacity per round: sum_j c_j sum_{s = t-d_j+1}^{t} at[j,s] <= C_t (rows that cannot overflow are left out).
    for t in sorted(covering):
        capacity = built.instance.capacity_at(t)
        if sum(c for _, c in covering[t]) > capacity:
            built.model.add(sum(c * var for var, c in covering[t]) <= capacity)


def _add_left_shift_dominance(built: CpSatModel) -> None:
    model, jobs = built.model, built.instance.by_id()
    # ending[s]: the starts at[k, s - d_k] whose job ends at round s.
    ending: dict[int, list[cp_model.IntVar]] = {}
    for j, at in built.at.items():
        for s, var in at.items():
            ending.setdefault(s + jobs[j].duration, []).append(var)
    end: dict[int, cp_model.IntVar] = {}
    for j, at in built.at.items():
        for s, var in at.items():
            if s == jobs[j].arrival or built.instance.capacity_at(s) > built.instance.capacity_at(s - 1):
                continue  # (a start where capacity rises need not follow an end)
            if s not in end:
                # end[s] => OR_k at[k, s - d_k]: some run job ends at s.
                end[s] = model.new_bool_var(f"end[{s}]")
                model.add_bool_or(ending.get(s, [])).only_enforce_if(end[s])
            # at[j,s] => end[s] for s > a_j: a late start waits for some job to end.
            model.add_implication(var, end[s])


def add_hint(built: CpSatModel, hint: Mapping[str, int | None]) -> None:
    """Hint a schedule; a hinted start outside a job's valuable range is hinted as "not run"."""
    for job in built.instance.jobs:
        if job.id not in built.at and job.id not in built.start:
            continue
        s = hint.get(job.id)
        runs = s is not None and job.arrival <= s <= job.last_start
        for start, var in built.at.get(job.id, {}).items():
            built.model.add_hint(var, int(runs and s == start))
        if job.id not in built.start:
            continue
        built.model.add_hint(built.run[job.id], int(runs))
        built.model.add_hint(built.start[job.id], s if runs and s is not None else job.arrival)
        steps = job.reachable_steps()
        for i, meet in enumerate(built.meet[job.id][:-1]):
            met = runs and s is not None and s <= job.last_start_for(steps[i][0])
            built.model.add_hint(meet, int(met))


def solve(built: CpSatModel, params: CpSatParams) -> tuple[cp_model.CpSolver, cp_model_pb2.CpSolverStatus]:
    """Run CP-SAT with the time limit and worker count; returns the solver and its status code."""
    if params.hint is not None:
        add_hint(built, params.hint)
    solver = cp_model.CpSolver()
    if params.deterministic:
        solver.parameters.max_deterministic_time = params.time_limit
        solver.parameters.interleave_search = params.workers > 1
    else:
        solver.parameters.max_time_in_seconds = params.time_limit
    solver.parameters.num_workers = params.workers
    solver.parameters.log_search_progress = params.log
    status = solver.solve(built.model)
    return solver, status


def extract(built: CpSatModel, solver: cp_model.CpSolver, status: cp_model_pb2.CpSolverStatus) -> OfflineResult:
    """The schedule, its exact value, the solver's bound plus rounding slack, the gap and an honest status."""
    instance = built.instance
    trivial = trivial_bound(instance)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        starts = {j.id: start_of(built, solver, j.id) for j in instance.jobs}
        bound = min(trivial, solver.best_objective_bound / built.scale + built.rounding_slack)
        state: Status = "optimal" if status == cp_model.OPTIMAL else "feasible"
    elif status == cp_model.UNKNOWN:
        starts = {j.id: None for j in instance.jobs}
        bound, state = trivial, "unknown"
    else:
        raise RuntimeError(f"CP-SAT returned {solver.status_name(status)} on the hindsight model, "
                           "which always has the empty schedule as a solution")
    value = instance.schedule_value(starts)
    bound = max(bound, value)
    return OfflineResult(value=value, bound=bound, gap=relative_gap(value, bound), status=state,
                         solve_seconds=solver.wall_time, starts=starts, solver=SOLVER_NAME)


def start_of(built: CpSatModel, solver: cp_model.CpSolver, job_id: str) -> int | None:
    """Job `job_id`'s start in the solver's schedule, None if it does not run (either model)."""
    if job_id not in built.run:  # the indexed model: the start whose at[j,s] is true, if any
        return next((s for s, var in built.at.get(job_id, {}).items() if solver.boolean_value(var)), None)
    if not solver.boolean_value(built.run[job_id]):
        return None
    return int(solver.value(built.start[job_id]))


def trivial_bound(instance: HindsightInstance) -> float:
    """Every job earning its best reachable value: an upper bound that needs no solver."""
    return math.fsum(job.reachable_steps()[0][1] for job in instance.jobs if job.can_earn)
