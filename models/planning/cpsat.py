"""CP-SAT models of COS: Det (Fig. 4, eq. 1-4), COSPiS (Fig. 5, eq. 5-9) and SORU^Pk (Sec. 5.2).

Det, with estimates (d_hat_j, r_hat_j) = (f^est(D_j), f^est(R_j)):

    minimise   p
    subject to s_j in [q_j, min(q_j + f_j, u_j)]                        (flexibility)
               s_j + d_hat_j <= u_j                                      (eq. 2, deadline)
               s_p + d_hat_p <= s_j            for every parent p in J_j (eq. 3, dependency)
               cumulative({[s_j, s_j + d_hat_j)}, {r_hat_j}, p)          (eq. 4, CPU)

COSPiS, with K pair samples (d_jk, r_jk) per job and tolerance alpha:

    minimise   max_k p_k
    subject to s_j in [q_j, min(q_j + f_j, u_j)]
               s_j + d_jk <= u_j + M v_k                                 (eq. 6)
               s_p + d_pk <= s_j + M v_k       for every parent p in J_j (eq. 7)
               sum_k v_k <= K alpha                                      (eq. 8)
               cumulative({[s_j, s_j + d_jk)}_j, {r_jk}_j, p_k)          (eq. 9, every sample k)

SORU^Pk is the COSPiS model with sampled durations and estimated CPU: r_jk = r_hat_j.
A sample k with v_k = 1 may miss deadlines and dependencies, but its load still counts in p_k (Fig. 5).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from ortools.sat import cp_model_pb2
from ortools.sat.python import cp_model

from models.arrays import IntArray
from models.planning.history import Estimator, estimates, pair_samples
from models.planning.plan import Plan, SolveParams, Status, peak_load, relative_gap
from models.planning.problem import Problem

WALL_CAP = 10.0  # deterministic runs stop at WALL_CAP times their limit in wall seconds


@dataclass
class CosModel:
    """A built COS model: start variables s_j, sample peaks p_k (one for Det), violations v_k (none for Det),
    the objective variable and the durations/CPUs (K x n) it was built on."""

    problem: Problem
    model: cp_model.CpModel
    s: list[cp_model.IntVar]
    p_k: list[cp_model.IntVar]
    v_k: list[cp_model.IntVar]
    peak: cp_model.IntVar
    d: IntArray
    r: IntArray
    method: str


def _starts(problem: Problem, model: cp_model.CpModel) -> list[cp_model.IntVar]:
    # Flexibility: s_j in [q_j, min(q_j + f_j, u_j)].
    return [model.new_int_var(job.q, job.latest_start, f"s[{job.id}]") for job in problem.jobs]


def build_det(problem: Problem, d_hat: IntArray, r_hat: IntArray, method: str = "det") -> CosModel:
    """Det (Fig. 4) on the estimates d_hat_j, r_hat_j."""
    model = cp_model.CpModel()
    s = _starts(problem, model)
    # Eq. 2, deadlines: s_j + d_hat_j <= u_j.
    for j, job in enumerate(problem.jobs):
        model.add(s[j] + int(d_hat[j]) <= job.u)
    # Eq. 3, dependencies: s_p + d_hat_p <= s_j for every parent p of j.
    for j, parents in enumerate(problem.parents):
        for p in parents:
            model.add(s[p] + int(d_hat[p]) <= s[j])
    # Eq. 4, CPU: cumulative(X, Y, p) with x_j = [s_j, s_j + d_hat_j) and a variable capacity p.
    peak = model.new_int_var(int(r_hat.max()), int(r_hat.sum()), "p")
    x = [model.new_fixed_size_interval_var(s[j], int(d_hat[j]), f"x[{job.id}]")
         for j, job in enumerate(problem.jobs)]
    model.add_cumulative(x, [int(v) for v in r_hat], peak)
    # Objective: minimise p.
    model.minimize(peak)
    return CosModel(problem, model, s, [peak], [], peak, d_hat[None, :], r_hat[None, :], method)


def build_samples(problem: Problem, d: IntArray, r: IntArray, alpha: float, method: str = "cospis") -> CosModel:
    """COSPiS (Fig. 5) on K pair samples d[k, j], r[k, j] with tolerance alpha (SORU^Pk: r[k, j] = r_hat_j)."""
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha={alpha} is outside [0, 1]")
    k_count, n = d.shape
    if r.shape != d.shape or n != problem.n:
        raise ValueError(f"samples of shape {d.shape} and {r.shape} do not fit {problem.n} jobs")
    model = cp_model.CpModel()
    s = _starts(problem, model)
    big_m = problem.horizon + int(d.max())  # M >= T
    v = [model.new_bool_var(f"v[{k}]") for k in range(k_count)]
    jobs = problem.jobs
    # Eq. 6, deadlines per sample: s_j + d_jk <= u_j + M v_k (rows true at every start of the window left out).
    for k in range(k_count):
        for j, job in enumerate(jobs):
            if job.latest_start + int(d[k, j]) > job.u:
                model.add(s[j] + int(d[k, j]) <= job.u + big_m * v[k])
    # Eq. 7, dependencies per sample: s_p + d_pk <= s_j + M v_k (rows true at every pair of starts left out).
    for k in range(k_count):
        for j, parents in enumerate(problem.parents):
            for p in parents:
                if jobs[p].latest_start + int(d[k, p]) > jobs[j].q:
                    model.add(s[p] + int(d[k, p]) <= s[j] + big_m * v[k])
    # Eq. 8, tolerance: sum_k v_k <= K alpha.
    model.add(sum(v) <= math.floor(k_count * alpha + 1e-9))
    # Eq. 9, CPU per sample: cumulative(X_k, Y_k, p_k) with x_jk = [s_j, s_j + d_jk).
    p_k: list[cp_model.IntVar] = []
    for k in range(k_count):
        p_var = model.new_int_var(int(r[k].max()), int(r[k].sum()), f"p[{k}]")
        x = [model.new_fixed_size_interval_var(s[j], int(d[k, j]), f"x[{job.id},{k}]")
             for j, job in enumerate(problem.jobs)]
        model.add_cumulative(x, [int(c) for c in r[k]], p_var)
        p_k.append(p_var)
    # Objective: minimise max_k p_k.
    peak = model.new_int_var(int(r.max(axis=1).max()), int(r.sum(axis=1).max()), "p")
    model.add_max_equality(peak, p_k)
    model.minimize(peak)
    return CosModel(problem, model, s, p_k, v, peak, d, r, method)


def solve(built: CosModel, params: SolveParams,
          hint: tuple[int, ...] | None = None) -> tuple[cp_model.CpSolver, cp_model_pb2.CpSolverStatus]:
    """Run CP-SAT, hinted with `hint` (by default the manual schedule: every job at q)."""
    add_hint(built, built.problem.manual if hint is None else hint)
    solver = cp_model.CpSolver()
    if params.deterministic:
        solver.parameters.max_deterministic_time = params.time_limit
        solver.parameters.interleave_search = params.workers > 1
        # A wall-clock cap, reached only when CP-SAT's deterministic clock runs far behind the wall (seen: 10
        # deterministic seconds taking 540 wall seconds on a loaded machine, K=100 cumulatives of 71 jobs).
        solver.parameters.max_time_in_seconds = WALL_CAP * params.time_limit
    else:
        solver.parameters.max_time_in_seconds = params.time_limit
    solver.parameters.num_workers = params.workers
    solver.parameters.random_seed = 0
    solver.parameters.log_search_progress = params.log
    return solver, solver.solve(built.model)


def add_hint(built: CosModel, manual: tuple[int, ...]) -> None:
    """Hint every variable at a schedule: s_j, v_k = 1 iff sample k misses there, p_k its peak.

    A complete hint lets CP-SAT start from a solution at once where the schedule is one (the manual schedule is,
    on the seed's synthetic problems), instead of searching for a first one among K cumulatives.
    """
    problem = built.problem
    for var, q in zip(built.s, manual, strict=True):
        built.model.add_hint(var, q)
    peaks = [peak_load(manual, built.d[k], built.r[k]) for k in range(built.d.shape[0])]
    for var, peak in zip(built.p_k, peaks, strict=True):
        built.model.add_hint(var, peak)
    if built.peak is not built.p_k[0]:
        built.model.add_hint(built.peak, max(peaks))
    for k, var in enumerate(built.v_k):
        built.model.add_hint(var, int(not _meets(problem, manual, built.d[k])))


def _meets(problem: Problem, starts: tuple[int, ...], d: IntArray) -> bool:
    """Sample durations d meet every deadline (eq. 6) and dependency (eq. 7) at these starts."""
    for j, job in enumerate(problem.jobs):
        if starts[j] + d[j] > job.u or any(starts[p] + d[p] > starts[j] for p in problem.parents[j]):
            return False
    return True


def extract(built: CosModel, solver: cp_model.CpSolver, status: cp_model_pb2.CpSolverStatus,
            params: SolveParams) -> Plan:
    """The schedule (the manual one if CP-SAT found none), its peak under the model's durations and CPUs,
    CP-SAT's bound and the status."""
    problem = built.problem
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        starts = tuple(int(solver.value(var)) for var in built.s)
        state: Status = "optimal" if status == cp_model.OPTIMAL else "feasible"
    elif status in (cp_model.INFEASIBLE, cp_model.UNKNOWN):
        starts = problem.manual
        state = "infeasible" if status == cp_model.INFEASIBLE else "unknown"
    else:
        raise RuntimeError(f"CP-SAT returned {solver.status_name(status)} on the {built.method} model")
    peak = float(max(peak_load(starts, built.d[k], built.r[k]) for k in range(built.d.shape[0])))
    found = state in ("optimal", "feasible")
    bound = min(peak, float(solver.best_objective_bound)) if found else 0.0
    if state == "optimal":
        bound = peak
    return Plan(method=built.method, starts=starts, peak_estimated=peak, bound=bound,
                gap=relative_gap(peak, bound) if found else 1.0, status=state, solve_s=float(solver.wall_time),
                time_limit=params.time_limit, fallback=not found)


def solve_det(problem: Problem, estimator: Estimator, params: SolveParams | None = None) -> Plan:
    """Det:f^est: build, solve, extract."""
    params = params or SolveParams()
    d_hat, r_hat = estimates(problem, estimator)
    built = build_det(problem, d_hat, r_hat, f"det-{estimator}")
    return extract(built, *solve(built, params), params)


def solve_cospis(problem: Problem, samples: int, alpha: float, rng: np.random.Generator,
                 params: SolveParams | None = None) -> Plan:
    """COSPiS with K = `samples` pair samples drawn from the histories with `rng`."""
    params = params or SolveParams()
    d, r = pair_samples(problem, samples, rng)
    built = build_samples(problem, d, r, alpha, "cospis")
    return extract(built, *solve(built, params), params)


def solve_soru(problem: Problem, estimator: Estimator, samples: int, alpha: float, rng: np.random.Generator,
               params: SolveParams | None = None) -> Plan:
    """SORU^Pk: K duration samples (from the same draw as COSPiS's pairs), CPU by the estimator."""
    params = params or SolveParams()
    d, _ = pair_samples(problem, samples, rng)
    _, r_hat = estimates(problem, estimator)
    r = np.broadcast_to(r_hat, d.shape).copy()
    built = build_samples(problem, d, r, alpha, f"soru-{estimator}")
    return extract(built, *solve(built, params), params)


def manual_plan(problem: Problem, estimator: Estimator = "p100") -> Plan:
    """The manual schedule (every job at q); its capacity is the safe allocation: the peak at f^est = P100."""
    d_hat, r_hat = estimates(problem, estimator)
    peak = float(peak_load(problem.manual, d_hat, r_hat))
    return Plan(method="manual", starts=problem.manual, peak_estimated=peak, bound=peak, gap=0.0,
                status="feasible", solve_s=0.0, time_limit=0.0)
