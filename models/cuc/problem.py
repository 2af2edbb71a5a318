"""Problem (1)-(2) of seed 003: jobs b_i = (c_i, d_i, e_i, l_i), a schedule, its utility, eq. (4) and eq. (5)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from models.arrays import FloatArray, IntArray

UNSCHEDULED = -1


@dataclass(frozen=True)
class Jobs:
    """N pre-collected requests over a scope of T hours (0-based): job i needs c_i cores for d_i hours and may
    start at any hour s with e_i <= s <= l_i and s + d_i <= T (it must finish inside the scope)."""

    c: FloatArray
    d: IntArray
    e: IntArray
    l: IntArray  # noqa: E741 - the seed's name for the latest start
    T: int

    def __post_init__(self) -> None:
        c = np.asarray(self.c, dtype=np.float64).ravel()
        d, e, l = (np.asarray(x, dtype=np.int64).ravel() for x in (self.d, self.e, self.l))  # noqa: E741
        if self.T < 1:
            raise ValueError(f"T={self.T} must be >= 1")
        if not c.size == d.size == e.size == l.size:
            raise ValueError(f"c, d, e, l have different lengths {c.size}, {d.size}, {e.size}, {l.size}")
        if np.any(c <= 0) or not np.all(np.isfinite(c)):
            raise ValueError("every demand c_i must be finite and > 0")
        if np.any(d < 1) or np.any(d > self.T):
            raise ValueError(f"every duration d_i must lie in [1, T={self.T}]")
        if np.any(e < 0) or np.any(l < e) or np.any(l >= self.T):
            raise ValueError(f"every start window must satisfy 0 <= e_i <= l_i < T={self.T}")
        for name, value in (("c", c), ("d", d), ("e", e), ("l", l)):
            object.__setattr__(self, name, value)

    @classmethod
    def of(cls, c: ArrayLike, d: ArrayLike, e: ArrayLike, l: ArrayLike, T: int) -> Jobs:  # noqa: E741
        """Jobs from any array-likes (lists in tests and examples)."""
        return cls(np.asarray(c, dtype=np.float64), np.asarray(d, dtype=np.int64), np.asarray(e, dtype=np.int64),
                   np.asarray(l, dtype=np.int64), T)

    def __len__(self) -> int:
        return int(self.c.size)

    @property
    def last_start(self) -> IntArray:
        """ST_i = min(l_i, T - d_i): the latest start that finishes inside the scope (Alg. 3 line 4, 0-based)."""
        return np.minimum(self.l, self.T - self.d)

    def value(self) -> FloatArray:
        """c_i d_i, the utility of deploying job i."""
        return self.c * self.d


def check_schedule(jobs: Jobs, start: ArrayLike) -> IntArray:
    """A schedule is one start hour per job, or UNSCHEDULED; it must respect each job's window."""
    s = np.asarray(start, dtype=np.int64).ravel()
    if s.size != len(jobs):
        raise ValueError(f"schedule has {s.size} entries for {len(jobs)} jobs")
    on = s != UNSCHEDULED
    if np.any(on & ((s < jobs.e) | (s > jobs.last_start))):
        bad = int(np.flatnonzero(on & ((s < jobs.e) | (s > jobs.last_start)))[0])
        raise ValueError(f"job {bad} starts at {s[bad]} outside [{jobs.e[bad]}, {jobs.last_start[bad]}]")
    return s


def load(jobs: Jobs, start: ArrayLike) -> FloatArray:
    """(T,) the cores in use at each hour: sum over deployed jobs of c_i on [s_i, s_i + d_i)."""
    s = check_schedule(jobs, start)
    diff = np.zeros(jobs.T + 1)
    on = s != UNSCHEDULED
    np.add.at(diff, s[on], jobs.c[on])
    np.add.at(diff, s[on] + jobs.d[on], -jobs.c[on])
    return np.cumsum(diff[:-1])


def utility(jobs: Jobs, start: ArrayLike) -> float:
    """u = sum_i sum_t c_i d_i X_it, the objective of problem (1)."""
    s = check_schedule(jobs, start)
    return float(jobs.value()[s != UNSCHEDULED].sum())


def violation_rate(jobs: Jobs, start: ArrayLike, capacity: ArrayLike) -> float:
    """Eq. (4): v = (1/T) sum_t 1(load_t > a_t), the share of hours whose true capacity a_t is exceeded."""
    a = np.asarray(capacity, dtype=np.float64).ravel()
    if a.size != jobs.T:
        raise ValueError(f"capacity has {a.size} hours for a scope of T={jobs.T}")
    return float(np.mean(load(jobs, start) > a))


def utility_ratio(achieved: float, optimum: float) -> float:
    """Eq. (5): u / u*, the utility over the clairvoyant optimum (1.0 when both are 0)."""
    if optimum < 0 or achieved < 0:
        raise ValueError(f"utilities must be >= 0, got achieved={achieved}, optimum={optimum}")
    if optimum == 0:
        return 1.0 if achieved == 0 else float("inf")
    return achieved / optimum
