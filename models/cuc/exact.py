"""The exact optimum of problem (1) with a known capacity, as a MILP solved by HiGHS (the seed used Gurobi)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from models.arrays import IntArray
from models.child import TimeUp, call_in_child
from models.cuc.problem import UNSCHEDULED, Jobs
from models.highs import quiet_highs

MIN_LIMIT_S = 0.01  # HiGHS's limit when building the model used up the time (0 would mean none)
GRACE_S = 2.0  # a solve with a time limit is killed this long after it (HiGHS's own limit ends it first if it can)


@dataclass(frozen=True)
class ExactResult:
    """The schedule, its utility, HiGHS's dual bound and status, the wall time of the solve, and whether the time
    limit ended it (HiGHS's status kTimeLimit, or the solve killed at the limit plus GRACE_S)."""

    start: IntArray
    utility: float
    bound: float
    optimal: bool
    time_s: float
    limit_hit: bool = False


@dataclass(frozen=True)
class _Model:
    job: IntArray  # column k is X_{job[k], hour[k]}
    hour: IntArray


def _columns(jobs: Jobs) -> _Model:
    """One binary X_it per job i and feasible start t in [e_i, ST_i] (the windows of constraint 2 of (1))."""
    counts = np.maximum(jobs.last_start - jobs.e + 1, 0)
    job = np.repeat(np.arange(len(jobs), dtype=np.int64), counts)
    first = np.repeat(np.cumsum(counts) - counts, counts)
    hour = jobs.e[job] + (np.arange(job.size, dtype=np.int64) - first)
    return _Model(job=job, hour=hour)


def solve_exact(jobs: Jobs, capacity: ArrayLike, time_limit: float | None = 30.0, mip_rel_gap: float = 1e-6,
                threads: int = 1, hint: ArrayLike | None = None, relax: bool = False) -> ExactResult:
    """max sum c_i d_i X_it s.t. each job starts at most once inside its window and the load <= a_t each hour.

    `hint` (a feasible schedule, e.g. Alg. 3's under a_t) is given to HiGHS as a MIP start. `relax` solves the
    LP relaxation instead: its value bounds u* from above (the schedule is then empty).

    `time_limit` (seconds of wall time, building the model included): the solve runs in a child process with
    HiGHS's limit set to the time left, and is killed GRACE_S after the limit, since HiGHS does not stop inside
    presolve or an LP of a large instance (HiGHS issues #885, #2226). A killed solve returns no schedule, the LP
    bound on job classes (`lp_bound`) as its bound, and limit_hit. None: in this process, until HiGHS ends."""
    if time_limit is not None and not time_limit > 0:
        raise ValueError(f"time_limit={time_limit} must be > 0")
    a = capacity_array(jobs, capacity)
    start = None if hint is None or relax else np.asarray(hint, dtype=np.int64).ravel()
    if time_limit is None:
        return _solve(jobs, a, None, mip_rel_gap, threads, start, relax)
    tick = time.perf_counter()
    deadline = time.monotonic() + time_limit  # the system's clock: the same in the child
    try:
        result: ExactResult = call_in_child(time_limit + GRACE_S, _solve, jobs, a, deadline, mip_rel_gap, threads,
                                            start, relax, preload=("highspy",))
        return result
    except TimeUp:
        return ExactResult(start=np.full(len(jobs), UNSCHEDULED, dtype=np.int64), utility=0.0,
                           bound=lp_bound(jobs, a), optimal=False, time_s=time.perf_counter() - tick, limit_hit=True)


def _solve(jobs: Jobs, a: NDArray[np.float64], deadline: float | None, mip_rel_gap: float, threads: int,
           hint: NDArray[np.int64] | None, relax: bool) -> ExactResult:
    """The solve itself, stopped by HiGHS at `deadline` (time.monotonic()) if it can."""
    import highspy

    h, m = _build(jobs, a, relax, threads)
    if deadline is not None:
        h.setOptionValue("time_limit", max(deadline - time.monotonic(), MIN_LIMIT_S))
    h.setOptionValue("mip_rel_gap", float(mip_rel_gap))
    if hint is not None:
        _set_start(h, m, hint)
    tick = time.perf_counter()
    _run(h)
    elapsed = time.perf_counter() - tick
    limit_hit = h.getModelStatus() == highspy.HighsModelStatus.kTimeLimit
    if relax:
        lp_value = float(h.getInfo().objective_function_value)
        return ExactResult(start=np.full(len(jobs), UNSCHEDULED, dtype=np.int64), utility=0.0, bound=lp_value,
                           optimal=h.getModelStatus() == highspy.HighsModelStatus.kOptimal, time_s=elapsed,
                           limit_hit=limit_hit)
    return _extract(h, jobs, m, elapsed, limit_hit)


@dataclass(frozen=True)
class Relaxation:
    """The LP relaxation of problem (1), solved: column k is X_{job[k], hour[k]} with value x[k]."""

    job: IntArray
    hour: IntArray
    x: NDArray[np.float64]
    value: float


def solve_relaxation(jobs: Jobs, capacity: ArrayLike) -> Relaxation:
    """Problem (1) with 0 <= X_it <= 1 (HiGHS's LP): its columns' values and its value, an upper bound of u*."""
    import highspy

    h, m = _build(jobs, capacity_array(jobs, capacity), relax=True)
    _run(h)
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:  # X = 0 is feasible whenever a_t >= 0
        raise RuntimeError(f"the LP relaxation ended {h.modelStatusToString(h.getModelStatus())}")
    x = np.clip(np.asarray(h.getSolution().col_value, dtype=np.float64), 0.0, 1.0)
    return Relaxation(job=m.job, hour=m.hour, x=x, value=float(h.getInfo().objective_function_value))


def capacity_array(jobs: Jobs, capacity: ArrayLike) -> NDArray[np.float64]:
    """a_t as floats, one per hour of the scope (refused otherwise)."""
    a = np.asarray(capacity, dtype=np.float64).ravel()
    if a.size != jobs.T:
        raise ValueError(f"capacity has {a.size} hours for a scope of T={jobs.T}")
    return a


def _build(jobs: Jobs, a: NDArray[np.float64], relax: bool, threads: int = 1) -> tuple[Any, _Model]:
    """HiGHS holding problem (1) under a_t (its LP relaxation if `relax`), seeded and quiet, not yet run.

    `threads`: HiGHS's (`quiet_highs`)."""
    import highspy

    m = _columns(jobs)
    n_cols = m.job.size
    h = quiet_highs(int(threads))
    h.setOptionValue("random_seed", 0)
    inf = highspy.kHighsInf
    # objective: maximise sum_i sum_t c_i d_i X_it
    cost = jobs.value()[m.job]
    h.addVars(n_cols, np.zeros(n_cols), np.ones(n_cols))
    if not relax:
        h.changeColsIntegrality(n_cols, np.arange(n_cols, dtype=np.int32),
                                np.full(n_cols, highspy.HighsVarType.kInteger))
    h.changeColsCost(n_cols, np.arange(n_cols, dtype=np.int32), cost)
    h.changeObjectiveSense(highspy.ObjSense.kMaximize)
    # (1) row i: sum_t X_it <= 1, each job starts at most once
    rows_idx: list[np.ndarray] = []
    rows_val: list[np.ndarray] = []
    order = np.argsort(m.job, kind="stable")
    bounds = np.searchsorted(m.job[order], np.arange(len(jobs) + 1))
    for i in range(len(jobs)):
        rows_idx.append(order[bounds[i]:bounds[i + 1]])
        rows_val.append(np.ones(bounds[i + 1] - bounds[i]))
    lower = [-inf] * len(jobs)
    upper = [1.0] * len(jobs)
    # (1) row t: sum_i sum_{t - d_i < t' <= t} c_i X_it' <= a_t, the capacity of each hour
    end = m.hour + jobs.d[m.job]
    for t in range(jobs.T):
        k = np.flatnonzero((m.hour <= t) & (t < end))
        rows_idx.append(k)
        rows_val.append(jobs.c[m.job[k]])
        lower.append(-inf)
        upper.append(float(a[t]))
    starts = np.cumsum([0] + [len(r) for r in rows_idx[:-1]])
    index = np.concatenate(rows_idx).astype(np.int32) if rows_idx else np.zeros(0, np.int32)
    value = np.concatenate(rows_val) if rows_val else np.zeros(0)
    h.addRows(len(rows_idx), np.array(lower), np.array(upper), index.size, starts.astype(np.int32), index, value)
    return h, m


def job_classes(jobs: Jobs) -> tuple[IntArray, IntArray]:
    """(first, cls): the classes of equal (d_i, e_i, ST_i), class k's first job first[k] and job i's class cls[i]."""
    key = (jobs.d * (jobs.T + 1) + jobs.e) * (jobs.T + 1) + jobs.last_start
    _, first, cls = np.unique(key, return_index=True, return_inverse=True)
    return first.astype(np.int64), cls.ravel().astype(np.int64)


def aggregate(jobs: Jobs, classes: tuple[IntArray, IntArray] | None = None) -> Jobs:
    """One job per class of equal (d_i, e_i, ST_i), its demand the class's sum of c_i: problem (1)'s LP relaxation
    has the same value on it (y_it = c_i X_it turns a job's columns into its class's, summed; the class's row
    sum_t y_kt <= sum_i c_i splits back proportionally), and it has at most 6 x 24 x 24 columns whatever N.
    `classes`: `job_classes(jobs)`, when the caller has it already."""
    first, cls = job_classes(jobs) if classes is None else classes
    c = np.bincount(cls, weights=jobs.c, minlength=first.size).astype(np.float64)
    return Jobs(c=c, d=jobs.d[first], e=jobs.e[first], l=jobs.l[first], T=jobs.T)


def lp_bound(jobs: Jobs, capacity: ArrayLike) -> float:
    """The LP bound of u* (problem (1) relaxed, HiGHS), solved on the aggregated classes: the value of
    solve_exact(jobs, capacity, relax=True), in time independent of the number of jobs."""
    if len(jobs) == 0:
        return 0.0
    return solve_relaxation(aggregate(jobs), capacity).value


def _run(h: Any) -> None:
    """h.run(), raising where HiGHS reports an error instead of a status (so no empty schedule passes as one)."""
    import highspy

    if h.run() == highspy.HighsStatus.kError:
        raise RuntimeError(f"HiGHS failed: {h.modelStatusToString(h.getModelStatus())}")


def _set_start(h: Any, m: _Model, start: NDArray[np.int64]) -> None:
    """The MIP start X_it = 1 where the hint starts job i at t."""
    x = (start[m.job] == m.hour).astype(np.float64)
    sol = h.getSolution()
    sol.col_value = list(x)
    h.setSolution(sol)


def _extract(h: Any, jobs: Jobs, m: _Model, elapsed: float, limit_hit: bool) -> ExactResult:
    import highspy

    status = h.getModelStatus()
    start = np.full(len(jobs), UNSCHEDULED, dtype=np.int64)
    if h.getInfo().primal_solution_status == 2:  # kSolutionStatusFeasible
        x = np.asarray(h.getSolution().col_value)
        on = x > 0.5
        start[m.job[on]] = m.hour[on]
    util = float(jobs.value()[start != UNSCHEDULED].sum())
    bound = float(h.getInfo().mip_dual_bound)
    return ExactResult(start=start, utility=util, bound=bound,
                       optimal=status == highspy.HighsModelStatus.kOptimal, time_s=elapsed, limit_hit=limit_hit)
