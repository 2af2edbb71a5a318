"""MILP:f^est of COS solved by HiGHS: the seed's pairwise big-M form (Fig. 6, eq. 10-15) and a time-indexed form.

Pairwise (the seed's), with delta1[j,i], delta2[j,i] binary and res[j,i] >= 0 for every ordered pair i != j:

    minimise   p
    subject to s_j in [q_j, min(q_j + f_j, u_j)]                                  (eq. 15, flexibility)
               s_j + d_hat_j <= u_j;   s_p + d_hat_p <= s_j for p in J_j          (eq. 2-3)
               delta1[j,i] >= (s_j - s_i + 1) / M                                  (eq. 10: i started by s_j)
               delta2[j,i] >= (s_i + d_hat_i - s_j) / M                            (eq. 11: i not ended by s_j)
               res[j,i] <= delta1[j,i] r_hat_i;   res[j,i] <= delta2[j,i] r_hat_i  (eq. 12)
               res[j,i] >= r_hat_i - (2 - delta1[j,i] - delta2[j,i]) M             (eq. 13)
               r_hat_j + sum_{i != j} res[j,i] <= p                                (eq. 14: load when j starts)

Time-indexed, with x[j,t] = 1 iff job j starts at t (t in its window, t + d_hat_j <= u_j):

    minimise   p
    subject to sum_t x[j,t] = 1                                                    (one start each)
               sum_t t x[j,t] - sum_t t x[p,t] >= d_hat_p for p in J_j             (eq. 3)
               sum_j r_hat_j sum_{t' in (t - d_hat_j, t]} x[j,t'] <= p for every t (eq. 4)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import highspy
import numpy as np

from models.arrays import IntArray
from models.highs import quiet_highs
from models.planning.history import Estimator, estimates
from models.planning.plan import Plan, SolveParams, Status, peak_load, relative_gap
from models.planning.problem import Problem

INTEGER = highspy.HighsVarType.kInteger


@dataclass
class MilpModel:
    """A loaded HiGHS model; `start_of(values)` reads the schedule back from the column values."""

    problem: Problem
    highs: highspy.Highs
    d_hat: IntArray
    r_hat: IntArray
    method: str
    start_cols: list[Any]  # pairwise: s_j; indexed: {t: x[j,t]} per job

    def starts(self) -> tuple[int, ...]:
        h = self.highs
        if self.method.startswith("milp-indexed"):
            return tuple(max(col, key=lambda t: h.val(col[t])) for col in self.start_cols)
        return tuple(round(h.val(var)) for var in self.start_cols)


def _highs(params: SolveParams) -> highspy.Highs:
    h = quiet_highs()
    h.setOptionValue("output_flag", params.log)
    h.setOptionValue("time_limit", float(params.time_limit))
    # HiGHS runs on quiet_highs's one thread (`workers` is CP-SAT's; HiGHS's branch and bound is serial anyway).
    h.setOptionValue("random_seed", 0)
    h.setOptionValue("mip_rel_gap", 0.0)
    return h


def build_pairwise(problem: Problem, d_hat: IntArray, r_hat: IntArray, params: SolveParams,
                   method: str = "milp-p50") -> MilpModel:
    """The seed's MILP (Fig. 6)."""
    h = _highs(params)
    jobs = problem.jobs
    n = problem.n
    big_m = float(problem.horizon + int(d_hat.max()) + int(r_hat.max()) + 1)  # M >= T, and >= r_hat_i
    # Eq. 15, flexibility: s_j in [q_j, min(q_j + f_j, u_j)].
    s = [h.addVariable(lb=job.q, ub=job.latest_start, type=INTEGER, name=f"s[{job.id}]") for job in jobs]
    p = h.addVariable(lb=float(r_hat.max()), ub=float(r_hat.sum()), name="p")
    # Eq. 2, deadlines: s_j + d_hat_j <= u_j.
    for j, job in enumerate(jobs):
        h.addConstr(s[j] <= job.u - int(d_hat[j]))
    # Eq. 3, dependencies: s_p + d_hat_p <= s_j.
    for j, parents in enumerate(problem.parents):
        for q in parents:
            h.addConstr(s[q] - s[j] <= -int(d_hat[q]))
    for j in range(n):
        res_j = []
        for i in range(n):
            if i == j:
                continue
            d1 = h.addVariable(lb=0, ub=1, type=INTEGER, name=f"delta1[{j},{i}]")
            d2 = h.addVariable(lb=0, ub=1, type=INTEGER, name=f"delta2[{j},{i}]")
            res = h.addVariable(lb=0, ub=float(r_hat[i]), name=f"res[{j},{i}]")
            # Eq. 10: M delta1[j,i] >= s_j - s_i + 1.
            h.addConstr(big_m * d1 - s[j] + s[i] >= 1)
            # Eq. 11: M delta2[j,i] >= s_i + d_hat_i - s_j.
            h.addConstr(big_m * d2 - s[i] + s[j] >= int(d_hat[i]))
            # Eq. 12: res[j,i] <= delta1[j,i] r_hat_i and res[j,i] <= delta2[j,i] r_hat_i.
            h.addConstr(res - float(r_hat[i]) * d1 <= 0)
            h.addConstr(res - float(r_hat[i]) * d2 <= 0)
            # Eq. 13: res[j,i] >= r_hat_i - (2 - delta1[j,i] - delta2[j,i]) M.
            h.addConstr(res - big_m * d1 - big_m * d2 >= float(r_hat[i]) - 2 * big_m)
            res_j.append(res)
        # Eq. 14: r_hat_j + sum_{i != j} res[j,i] <= p.
        h.addConstr(h.qsum(res_j) - p <= -float(r_hat[j]))
    # Objective: minimise p.
    h.setObjective(p, highspy.ObjSense.kMinimize)
    # A partial MIP start: s_j = q_j, the manual schedule (HiGHS completes the pair variables or drops it).
    h.setSolution(n, np.array([var.index for var in s], dtype=np.int32), np.array(problem.manual, dtype=float))
    return MilpModel(problem, h, d_hat, r_hat, method, s)


def build_indexed(problem: Problem, d_hat: IntArray, r_hat: IntArray, params: SolveParams,
                  method: str = "milp-indexed-p50") -> MilpModel:
    """The time-indexed MILP: one binary per (job, start)."""
    h = _highs(params)
    x: list[dict[int, Any]] = []
    covering: dict[int, list[tuple[Any, float]]] = {}
    for j, job in enumerate(problem.jobs):
        # Flexibility and eq. 2 in the columns: t in [q_j, min(q_j + f_j, u_j - d_hat_j)].
        last = min(job.latest_start, job.u - int(d_hat[j]))
        x_j = {t: h.addVariable(lb=0, ub=1, type=INTEGER, name=f"x[{job.id},{t}]") for t in range(job.q, last + 1)}
        x.append(x_j)
        for t, var in x_j.items():
            for t2 in range(t, t + int(d_hat[j])):
                covering.setdefault(t2, []).append((var, float(r_hat[j])))
    p = h.addVariable(lb=float(r_hat.max()), ub=float(r_hat.sum()), name="p")
    # One start each: sum_t x[j,t] = 1 (no column at all: the estimates miss the deadline, infeasible).
    for x_j in x:
        h.addConstr(h.qsum(list(x_j.values())) == 1)
    # Eq. 3, dependencies: sum_t t x[j,t] - sum_t t x[p,t] >= d_hat_p.
    for j, parents in enumerate(problem.parents):
        for q in parents:
            h.addConstr(_time(h, x[j]) - _time(h, x[q]) >= int(d_hat[q]))
    # Eq. 4, CPU per time t: sum_j r_hat_j sum_{t' in (t - d_hat_j, t]} x[j,t'] <= p.
    for t in sorted(covering):
        if len(covering[t]) > 1:
            h.addConstr(h.qsum([c * var for var, c in covering[t]]) - p <= 0)
    h.setObjective(p, highspy.ObjSense.kMinimize)
    return MilpModel(problem, h, d_hat, r_hat, method, x)


def _time(h: highspy.Highs, x_j: dict[int, Any]) -> Any:
    """sum_t t x[j,t]: the start of job j."""
    return h.qsum([t * var for t, var in x_j.items()])


def solve(built: MilpModel) -> None:
    built.highs.run()


def extract(built: MilpModel, params: SolveParams) -> Plan:
    """The schedule (manual if HiGHS found none), its peak at the estimates, HiGHS's dual bound and status."""
    h = built.highs
    model_status = h.getModelStatus()
    info = h.getInfo()
    found = info.primal_solution_status == 2  # kSolutionStatusFeasible
    if model_status == highspy.HighsModelStatus.kOptimal and found:
        state: Status = "optimal"
    elif found:
        state = "feasible"
    elif model_status == highspy.HighsModelStatus.kInfeasible:
        state = "infeasible"
    else:
        state = "unknown"
    starts = built.starts() if found else built.problem.manual
    peak = float(peak_load(starts, built.d_hat, built.r_hat))
    dual = float(info.mip_dual_bound)
    bound = peak if state == "optimal" else (min(peak, max(0.0, dual)) if found and np.isfinite(dual) else 0.0)
    return Plan(method=built.method, starts=starts, peak_estimated=peak, bound=bound,
                gap=relative_gap(peak, bound) if found else 1.0, status=state, solve_s=float(h.getRunTime()),
                time_limit=params.time_limit, fallback=not found)


def solve_milp(problem: Problem, estimator: Estimator, params: SolveParams | None = None,
               indexed: bool = False) -> Plan:
    """MILP:f^est, pairwise (the seed's) or time-indexed: build, solve, extract."""
    params = params or SolveParams()
    d_hat, r_hat = estimates(problem, estimator)
    if indexed:
        built = build_indexed(problem, d_hat, r_hat, params, f"milp-indexed-{estimator}")
    else:
        built = build_pairwise(problem, d_hat, r_hat, params, f"milp-{estimator}")
    solve(built)
    return extract(built, params)
