"""Evaluation by execution (seed 000, Sec. 5.1): run a schedule on fresh (duration, CPU) draws and score it.

A job starts at the later of its scheduled start and its parents' real completions, and runs its drawn
duration on its drawn CPUs (capacity is not enforced: the observed peak is what the schedule needs). Metrics,
per run k with observed peak p_real,k and the manual schedule's observed peak m_k on the same draws:

    peak reduction           (m_k - p_real,k) / m_k
    under-estimation error   max(0, (p_real,k - p_est) / p_est)
    over-estimation error    max(0, (p_est - p_real,k) / p_est)
    deadline violation       max(0, e_j - u_j) for each job j (e_j its real completion), averaged over jobs

each averaged over the runs. `missed` is the share of runs in which some job misses its deadline.

The seed ties deadline violations to under-estimation (Sec. 5.3.2, 5.4): the capacity bought is the estimate,
and a job that does not fit waits. `deadline_violation_capped` and `missed_capped` score that execution: with
capacity C = max(p_est, r_j) for job j, jobs are placed in the order of their scheduled starts (parents first),
each at the earliest time t >= max(s_j, parents' real ends) at which its CPUs fit under C for its whole run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from models.arrays import IntArray
from models.planning.history import pair_samples
from models.planning.plan import Plan, peak_load
from models.planning.problem import Problem

RUNS = 25  # fresh joint samples per schedule (Sec. 5.1)


@dataclass(frozen=True)
class Execution:
    """One run: real starts and ends, the observed peak, each job's lateness max(0, e_j - u_j)."""

    starts: tuple[int, ...]
    ends: tuple[int, ...]
    peak: int
    lateness: tuple[int, ...]


def execute(problem: Problem, starts: tuple[int, ...], d: IntArray, r: IntArray) -> Execution:
    """Run the schedule once with durations d[j] and CPUs r[j]: parents first (topological order)."""
    real_start = [0] * problem.n
    real_end = [0] * problem.n
    for j in problem.order:
        ready = max((real_end[p] for p in problem.parents[j]), default=0)
        real_start[j] = max(int(starts[j]), ready)
        real_end[j] = real_start[j] + int(d[j])
    lateness = tuple(max(0, e - job.u) for e, job in zip(real_end, problem.jobs, strict=True))
    return Execution(tuple(real_start), tuple(real_end), peak_load(real_start, d, r), lateness)


def execute_capped(problem: Problem, starts: tuple[int, ...], d: IntArray, r: IntArray, capacity: int) -> Execution:
    """Run the schedule once on `capacity` CPUs: a job also waits until its CPUs are free (no preemption)."""
    order = sorted(problem.order, key=lambda j: (starts[j], problem.order.index(j)))
    order = _parents_first(problem, order)
    size = max(starts) + int(d.sum()) + 1
    load = np.zeros(size, dtype=np.int64)
    real_start = [0] * problem.n
    real_end = [0] * problem.n
    for j in order:
        t = max([int(starts[j])] + [real_end[p] for p in problem.parents[j]])
        room = max(capacity, int(r[j]))
        while load[t:t + int(d[j])].max(initial=0) + int(r[j]) > room:
            t += 1
        load[t:t + int(d[j])] += int(r[j])
        real_start[j], real_end[j] = t, t + int(d[j])
    lateness = tuple(max(0, e - job.u) for e, job in zip(real_end, problem.jobs, strict=True))
    return Execution(tuple(real_start), tuple(real_end), int(load.max()), lateness)


def _parents_first(problem: Problem, order: list[int]) -> list[int]:
    """`order` with every job moved after its parents (stable otherwise)."""
    done: set[int] = set()
    out: list[int] = []

    def place(j: int) -> None:
        if j in done:
            return
        for p in problem.parents[j]:
            place(p)
        done.add(j)
        out.append(j)

    for j in order:
        place(j)
    return out


@dataclass(frozen=True)
class Evaluation:
    """A plan scored on the runs (fractions, not percents; deadline violation in time units per job)."""

    method: str
    peak_estimated: float
    peaks: tuple[int, ...]
    manual_peaks: tuple[int, ...]
    peak_reduction: float
    under_estimation: float
    over_estimation: float
    deadline_violation: float
    missed: float
    deadline_violation_capped: float
    missed_capped: float
    violations: tuple[float, ...] = ()  # per run: the mean lateness over jobs
    violations_capped: tuple[float, ...] = ()

    @property
    def peak_observed_mean(self) -> float:
        return float(np.mean(self.peaks))

    def as_dict(self) -> dict[str, Any]:
        return {"peak_estimated": self.peak_estimated, "peak_observed_mean": self.peak_observed_mean,
                "peak_reduction": self.peak_reduction, "under_estimation": self.under_estimation,
                "over_estimation": self.over_estimation, "deadline_violation": self.deadline_violation,
                "missed": self.missed, "deadline_violation_capped": self.deadline_violation_capped,
                "missed_capped": self.missed_capped}


def evaluate(problem: Problem, plan: Plan, d: IntArray, r: IntArray) -> Evaluation:
    """Score `plan` on the runs d[k, j], r[k, j], against the manual schedule executed on the same draws."""
    if d.shape != r.shape or d.ndim != 2 or d.shape[1] != problem.n:
        raise ValueError(f"draws of shape {d.shape} and {r.shape} do not fit {problem.n} jobs")
    runs = [execute(problem, plan.starts, d[k], r[k]) for k in range(d.shape[0])]
    manual = [execute(problem, problem.manual, d[k], r[k]) for k in range(d.shape[0])]
    peaks = np.array([x.peak for x in runs], dtype=np.float64)
    m = np.array([x.peak for x in manual], dtype=np.float64)
    est = plan.peak_estimated
    lateness = np.array([x.lateness for x in runs], dtype=np.float64)
    cap = math.ceil(est)
    capped = np.array([execute_capped(problem, plan.starts, d[k], r[k], cap).lateness for k in range(d.shape[0])],
                      dtype=np.float64)
    return Evaluation(
        method=plan.method, peak_estimated=est, peaks=tuple(int(p) for p in peaks),
        manual_peaks=tuple(int(p) for p in m),
        peak_reduction=float(np.mean((m - peaks) / m)),
        under_estimation=float(np.mean(np.maximum(0.0, (peaks - est) / est))),
        over_estimation=float(np.mean(np.maximum(0.0, (est - peaks) / est))),
        deadline_violation=float(lateness.mean()),
        missed=float(np.mean(lateness.max(axis=1) > 0)),
        deadline_violation_capped=float(capped.mean()), missed_capped=float(np.mean(capped.max(axis=1) > 0)),
        violations=tuple(float(x) for x in lateness.mean(axis=1)),
        violations_capped=tuple(float(x) for x in capped.mean(axis=1)))


def resample(problem: Problem, runs: int, rng: np.random.Generator) -> tuple[IntArray, IntArray]:
    """Fresh joint draws from the histories themselves (a past run per job per draw), for problems whose true
    law is only known through D and R."""
    return pair_samples(problem, runs, rng)
