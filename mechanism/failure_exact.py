"""Exact failure oracle: enumerates the product of the earlier jobs' residual outcomes (small instances only)."""

from __future__ import annotations

import itertools
import math

import numpy as np

from mechanism.failure import Residual
from mechanism.lifo import lifo_loads
from mechanism.platform import Platform

DEFAULT_MAX_COMBINATIONS = 20_000


class OracleTooLarge(ValueError):
    """The exact oracle would have to enumerate more combinations than allowed."""


class ExactOracle:
    """E_t(s, c, d) as an exact expectation over every joint residual outcome of the earlier jobs."""

    def __init__(self, platform: Platform, max_combinations: int = DEFAULT_MAX_COMBINATIONS) -> None:
        self.platform = platform
        self.max_combinations = max_combinations
        self.round = -1
        self._residuals: list[Residual] = []

    def reset(self, round_: int, residuals: list[Residual]) -> None:
        self.round = round_
        self._residuals = list(residuals)

    def append(self, residual: Residual) -> None:
        self._residuals.append(residual)

    def combinations(self) -> int:
        return math.prod(r.start.size for r in self._residuals)

    def estimates(self, concurrency: int) -> np.ndarray:
        p = self.platform
        total = self.combinations()
        if total > self.max_combinations:
            raise OracleTooLarge(
                f"exact oracle needs {total} joint outcomes of {len(self._residuals)} earlier jobs, "
                f"above the bound max_combinations={self.max_combinations}")
        fail = np.zeros((p.S_m, p.D_m), dtype=np.float64)
        for combo in itertools.product(*(range(r.start.size) for r in self._residuals)):
            weight = math.prod(float(r.probability[i]) for r, i in zip(self._residuals, combo, strict=True))
            jobs = [(int(r.start[i]), int(r.length[i]), r.concurrency)
                    for r, i in zip(self._residuals, combo, strict=True)]
            loads, _ = lifo_loads(jobs, p.horizon, p.C)
            fail += weight * failure_table(np.array(loads), concurrency, p.S_m, p.D_m, p.C)
        return np.clip(fail, 0.0, 1.0)


def failure_table(loads: np.ndarray, c: int, n_starts: int, max_d: int, capacity: int) -> np.ndarray:
    """fail[s, d-1] for one load path, straight from the definition (docs/model.md section 5)."""
    out = np.zeros((n_starts, max_d), dtype=np.float64)
    for s in range(n_starts):
        waiting_overflow = bool(np.any(loads[:s] > capacity))
        for d in range(1, max_d + 1):
            out[s, d - 1] = float(waiting_overflow or bool(np.any(loads[s:s + d] + c > capacity)))
    return out
