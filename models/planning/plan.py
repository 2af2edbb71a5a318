"""What every planner returns: the schedule, its estimated peak p, the solver's bound, gap, status and times."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

Status = Literal["optimal", "feasible", "infeasible", "unknown"]
STATUSES: tuple[Status, ...] = ("optimal", "feasible", "infeasible", "unknown")


@dataclass(frozen=True)
class SolveParams:
    """Time limit (s), CP-SAT workers (HiGHS runs on models/highs.py's one thread), and whether the limit is CP-SAT
    deterministic time (same model, same answer, bit for bit) rather than wall time."""

    time_limit: float = 10.0
    workers: int = 2
    deterministic: bool = True
    log: bool = False

    def __post_init__(self) -> None:
        if not self.time_limit > 0:
            raise ValueError(f"time_limit={self.time_limit} must be above 0 seconds")
        if self.workers < 1:
            raise ValueError(f"workers={self.workers} is below the bound 1")


@dataclass(frozen=True)
class Plan:
    """A start-time schedule S_n and its capacity estimate.

    `starts` is the manual schedule (every job at q) when the solver found none (status infeasible or unknown,
    `fallback` True), as the seed does (Sec. 7). `peak_estimated` is the peak the planner's own model of the
    jobs (estimates or samples) gives that schedule; `bound` the solver's lower bound on the optimum, `gap`
    = (peak_estimated - bound) / peak_estimated.
    """

    method: str
    starts: tuple[int, ...]
    peak_estimated: float
    bound: float
    gap: float
    status: Status
    solve_s: float
    time_limit: float
    fallback: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"method": self.method, "peak_estimated": self.peak_estimated, "bound": self.bound, "gap": self.gap,
                "status": self.status, "solve_s": self.solve_s, "time_limit": self.time_limit,
                "fallback": self.fallback}


def relative_gap(value: float, bound: float) -> float:
    """(value - bound) / value for a minimisation, 0 when both are 0."""
    if value <= 0:
        return 0.0
    return max(0.0, (value - bound) / value)


def peak_load(starts: ArrayLike, durations: ArrayLike, cpus: ArrayLike) -> int:
    """max_t sum_{j: s_j <= t < s_j + d_j} r_j: intervals are half-open, a job ending at t frees its CPUs at t."""
    s = np.asarray(starts, dtype=np.int64)
    d = np.asarray(durations, dtype=np.int64)
    r = np.asarray(cpus, dtype=np.int64)
    times = np.concatenate((s + d, s))
    deltas = np.concatenate((-r, r))
    kinds = np.concatenate((np.zeros(s.size, dtype=np.int64), np.ones(s.size, dtype=np.int64)))
    order = np.lexsort((kinds, times))  # at equal times, ends (kind 0) before starts
    load = np.cumsum(deltas[order])
    return int(max(0, load.max())) if load.size else 0
