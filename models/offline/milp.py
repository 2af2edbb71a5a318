"""Time-indexed MILP of the hindsight problem solved by HiGHS, and its LP relaxation as an upper bound.

Math (x[j,s] = 1 iff job j starts in round s, for s in a_j..b_j + k_jm - d_j, the starts that earn value):

    maximise   sum_{j,s} V_j(s + d_j) x[j,s]
    subject to sum_s x[j,s] <= 1                                    for every job j       (run at most once)
               sum_j c_j sum_{s = t-d_j+1}^{t} x[j,s] <= C_t         for every round t     (capacity)
               x[j,s] in {0, 1}  (in [0, 1] for the LP relaxation)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import highspy
import numpy as np

from models.highs import quiet_highs
from models.offline.hindsight import HindsightInstance, OfflineResult, Status, relative_gap

SOLVER_NAME = "highs-milp"
INF = highspy.kHighsInf


@dataclass(frozen=True)
class MilpParams:
    """Time limit (s), HiGHS thread count, an optional MIP start (job id -> start or None)."""

    time_limit: float = 60.0
    threads: int = 1
    hint: Mapping[str, int | None] | None = None
    log: bool = False

    def __post_init__(self) -> None:
        if not self.time_limit > 0:
            raise ValueError(f"time_limit={self.time_limit} must be above 0 seconds")
        if self.threads < 1:
            raise ValueError(f"threads={self.threads} is below the bound 1")


@dataclass(frozen=True)
class TimeIndexedModel:
    """Columns x[j,s] (job ids and starts), objective, rows (jobs, then rounds t0..t0+T-1) as a CSC matrix."""

    instance: HindsightInstance
    column_job: tuple[str, ...]
    column_start: np.ndarray
    cost: np.ndarray
    col_ptr: np.ndarray
    row_index: np.ndarray
    coef: np.ndarray
    row_upper: np.ndarray
    n_job_rows: int
    first_round: int

    @property
    def n_cols(self) -> int:
        return len(self.column_job)

    @property
    def n_rows(self) -> int:
        return len(self.row_upper)


@dataclass(frozen=True)
class LpBound:
    """The LP relaxation's optimum (an upper bound on the offline optimum), its status and HiGHS's time."""

    bound: float
    status: str
    solve_seconds: float


def build(instance: HindsightInstance) -> TimeIndexedModel:
    """One column per valuable (job, start); one row per job and one per round any such start can occupy."""
    jobs = [j for j in instance.jobs if j.can_earn]
    job_row = {j.id: r for r, j in enumerate(jobs)}
    first_round = min((j.arrival for j in jobs), default=0)
    n_rounds = max(instance.horizon - first_round, 0)
    column_job: list[str] = []
    starts: list[int] = []
    cost: list[float] = []
    col_ptr = [0]
    rows: list[np.ndarray] = []
    coefs: list[np.ndarray] = []
    for job in jobs:
        for s in job.starts():
            column_job.append(job.id)
            starts.append(s)
            cost.append(job.value(s))
            # Column x[j,s]: 1 in its job row; c_j in the capacity rows of rounds s..s+d_j-1.
            round_rows = len(jobs) + np.arange(s, s + job.duration) - first_round
            rows.append(np.concatenate(([job_row[job.id]], round_rows)))
            coefs.append(np.concatenate(([1.0], np.full(job.duration, float(job.concurrency)))))
            col_ptr.append(col_ptr[-1] + 1 + job.duration)
    round_capacity = instance.capacity_row(first_round + n_rounds)[first_round:].astype(np.float64)
    row_upper = np.concatenate((np.ones(len(jobs)), round_capacity))
    return TimeIndexedModel(
        instance=instance, column_job=tuple(column_job), column_start=np.array(starts, dtype=np.int64),
        cost=np.array(cost, dtype=np.float64), col_ptr=np.array(col_ptr, dtype=np.int32),
        row_index=np.concatenate(rows).astype(np.int32) if rows else np.zeros(0, dtype=np.int32),
        coef=np.concatenate(coefs) if coefs else np.zeros(0), row_upper=row_upper,
        n_job_rows=len(jobs), first_round=first_round)


def load(model: TimeIndexedModel, integral: bool, time_limit: float, threads: int, log: bool) -> highspy.Highs:
    """A HiGHS instance holding the model (maximise; binaries when `integral`) with exact-optimality gaps."""
    h = quiet_highs(int(threads))
    h.setOptionValue("output_flag", log)
    h.setOptionValue("time_limit", float(time_limit))
    # Prove optimality, not HiGHS's default 1e-4 relative gap.
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("mip_abs_gap", 1e-7)
    h.addRows(model.n_rows, np.full(model.n_rows, -INF), model.row_upper, 0,
              np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0))
    h.addCols(model.n_cols, model.cost, np.zeros(model.n_cols), np.ones(model.n_cols), len(model.coef),
              model.col_ptr[:-1], model.row_index, model.coef)
    h.changeObjectiveSense(highspy.ObjSense.kMaximize)
    if integral and model.n_cols:
        h.changeColsIntegrality(model.n_cols, np.arange(model.n_cols, dtype=np.int32),
                                np.full(model.n_cols, highspy.HighsVarType.kInteger.value, dtype=np.uint8))
    return h


def set_hint(h: highspy.Highs, model: TimeIndexedModel, hint: Mapping[str, int | None]) -> None:
    """A MIP start: x[j,s] = 1 for each hinted (job, start) that is a column, every other x 0."""
    chosen = np.array([i for i, (j, s) in enumerate(zip(model.column_job, model.column_start, strict=True))
                       if hint.get(j) == int(s)], dtype=np.int32)
    values = np.zeros(model.n_cols)
    values[chosen] = 1.0
    h.setSolution(model.n_cols, np.arange(model.n_cols, dtype=np.int32), values)


def solve(model: TimeIndexedModel, params: MilpParams) -> highspy.Highs:
    """Load the MILP, give it the hint, run HiGHS."""
    h = load(model, True, params.time_limit, params.threads, params.log)
    if params.hint is not None and model.n_cols:
        set_hint(h, model, params.hint)
    if model.n_cols:
        h.run()
    return h


def extract(model: TimeIndexedModel, h: highspy.Highs) -> OfflineResult:
    """The schedule (x > 0.5), its exact value, HiGHS's dual bound, the gap and an honest status."""
    instance = model.instance
    if model.n_cols == 0:
        starts: dict[str, int | None] = {j.id: None for j in instance.jobs}
        return OfflineResult(0.0, 0.0, 0.0, "optimal", 0.0, starts, SOLVER_NAME)
    model_status = h.getModelStatus()
    info = h.getInfo()
    has_solution = info.primal_solution_status == 2  # kSolutionStatusFeasible
    starts = {j.id: None for j in instance.jobs}
    if has_solution:
        x = np.asarray(h.getSolution().col_value)
        for i in np.flatnonzero(x > 0.5):
            starts[model.column_job[i]] = int(model.column_start[i])
    if model_status == highspy.HighsModelStatus.kOptimal:
        state: Status = "optimal"
    elif has_solution:
        state = "feasible"
    else:
        state = "unknown"
    value = instance.schedule_value(starts)
    dual = info.mip_dual_bound
    bound = _trivial(model)
    if np.isfinite(dual) and abs(dual) < INF:
        bound = min(bound, float(dual))
    bound = max(bound, value)
    return OfflineResult(value=value, bound=bound, gap=relative_gap(value, bound), status=state,
                         solve_seconds=float(h.getRunTime()), starts=starts, solver=SOLVER_NAME)


def _trivial(model: TimeIndexedModel) -> float:
    best: dict[str, float] = {}
    for j, c in zip(model.column_job, model.cost.tolist(), strict=True):
        best[j] = max(best.get(j, 0.0), c)
    return math.fsum(best.values())


def solve_milp(instance: HindsightInstance, params: MilpParams | None = None) -> OfflineResult:
    """Build, solve and extract in one call."""
    params = params or MilpParams()
    model = build(instance)
    return extract(model, solve(model, params))


def lp_bound(instance: HindsightInstance, time_limit: float = 60.0, threads: int = 1) -> LpBound:
    """The LP relaxation's optimum: an upper bound on the offline optimum; "time_limit" status if not closed."""
    model = build(instance)
    if model.n_cols == 0:
        return LpBound(0.0, "optimal", 0.0)
    h = load(model, False, time_limit, threads, False)
    h.run()
    status = h.getModelStatus()
    if status == highspy.HighsModelStatus.kOptimal:
        return LpBound(float(h.getInfo().objective_function_value), "optimal", float(h.getRunTime()))
    # Without a proven LP optimum the only safe bound is the trivial one.
    return LpBound(_trivial(model), h.modelStatusToString(status), float(h.getRunTime()))
