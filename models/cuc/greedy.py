"""Alg. 3 of seed 003: the greedy constructive schedule under capacity constraints Ã_t."""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import ArrayLike

from models.arrays import IntArray
from models.cuc.names import ORDERS
from models.cuc.problem import UNSCHEDULED, Jobs


def greedy_order(jobs: Jobs, order: str = "ratio") -> IntArray:
    """Alg. 3 line 1: the jobs by descending c_i / d_i ("ratio", the seed's text) or by descending c_i d_i
    ("value", the job's utility in problem (1)); ties keep the input order."""
    if order == "ratio":
        key = jobs.c / jobs.d
    elif order == "value":
        key = jobs.c * jobs.d
    else:
        raise ValueError(f"order={order!r} is not one of {', '.join(ORDERS)}")
    return np.argsort(-key, kind="stable").astype(np.int64)


@numba.njit(cache=True, nogil=True)
def _construct(order: np.ndarray, c: np.ndarray, d: np.ndarray, e: np.ndarray, last: np.ndarray,
               cap: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled; tested through greedy_schedule
    T = cap.size
    used = np.zeros(T)
    start = np.full(c.size, UNSCHEDULED, dtype=np.int64)
    for i in order:
        best = -np.inf
        best_t = -1
        for t in range(e[i], last[i] + 1):  # lines 5-7: the gap delta_t of each feasible start
            gap = np.inf
            for u in range(t, t + d[i]):
                gap = min(gap, cap[u] - c[i] - used[u])
            if gap > best:  # line 8: the largest gap, the earliest start on ties
                best = gap
                best_t = t
        if best_t >= 0 and best > 0:  # lines 9-12: deploy only into a strictly positive gap
            start[i] = best_t
            for u in range(best_t, best_t + d[i]):
                used[u] += c[i]
    return start


def greedy_schedule(jobs: Jobs, constraint: ArrayLike, order: str = "ratio") -> IntArray:
    """Alg. 3: one start hour per job (or UNSCHEDULED) whose load stays below the constraints Ã_t; lines 2-13
    are the seed's whatever the order of line 1."""
    cap = np.asarray(constraint, dtype=np.float64).ravel()
    if cap.size != jobs.T:
        raise ValueError(f"constraint has {cap.size} hours for a scope of T={jobs.T}")
    if np.any(np.isnan(cap)):
        raise ValueError("constraint contains NaN")
    start: IntArray = _construct(greedy_order(jobs, order), jobs.c, jobs.d, jobs.e, jobs.last_start, cap)
    return start
