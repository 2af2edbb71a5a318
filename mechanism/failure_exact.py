"""Exact failure oracle: enumerates the product of the earlier jobs' residual outcomes (small instances only).

With a capacity model (mechanism/capacity.py) it also enumerates every capacity path of the window.
"""

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
        self._capacity_paths: dict[tuple[int, ...], float] | None = None
        self._unenumerated_paths = 0  # errors^steps when that exceeds max_combinations: the paths are not built

    def reset(self, round_: int, residuals: list[Residual], last_capacity: int | None = None,
              current_capacity: int | None = None, level: float | None = None) -> None:
        """Start round `round_`; a capacity model conditions on `last_capacity` = C_{round_-1}, or on
        `current_capacity` = C_{round_} when that was reported, with mean `level` = mu_{round_} when it tracks
        the feed."""
        self.round = round_
        self._residuals = list(residuals)
        model = None if self.platform.capacity is None else self.platform.capacity.at_level(level)
        self._capacity_paths, self._unenumerated_paths = None, 0
        if model is None:
            return
        known = 0 if current_capacity is None else 1  # a reported C_round is the first step of every path
        raw = len(model.errors) ** max(self.platform.horizon - known, 0)  # the enumeration's work, before paths merge
        if raw > self.max_combinations:  # refused by `estimates` (a round with no quote needs no paths)
            self._unenumerated_paths = raw
            return
        self._capacity_paths = model.path_distribution(
            self.platform.C if last_capacity is None else last_capacity, self.platform.horizon, current_capacity)

    def append(self, residual: Residual) -> None:
        self._residuals.append(residual)

    def combinations(self) -> int:
        """Capacity paths times the earlier jobs' joint outcomes (paths not built count as errors^steps)."""
        paths = self._unenumerated_paths or (1 if self._capacity_paths is None else len(self._capacity_paths))
        return paths * math.prod(r.start.size for r in self._residuals)

    def estimates(self, concurrency: int) -> np.ndarray:
        p = self.platform
        total = self.combinations()
        if total > self.max_combinations:
            paths = " and capacity paths" if self.platform.capacity is not None else ""
            raise OracleTooLarge(
                f"exact oracle needs {total} joint outcomes of {len(self._residuals)} earlier jobs{paths}, "
                f"above the bound max_combinations={self.max_combinations}")
        fail = np.zeros((p.S_m, p.D_m), dtype=np.float64)
        if self._capacity_paths is not None:
            return np.clip(self._with_capacity_paths(concurrency, self._capacity_paths), 0.0, 1.0)
        for combo in itertools.product(*(range(r.start.size) for r in self._residuals)):
            weight = math.prod(float(r.probability[i]) for r, i in zip(self._residuals, combo, strict=True))
            jobs = [(int(r.start[i]), int(r.length[i]), r.concurrency)
                    for r, i in zip(self._residuals, combo, strict=True)]
            loads, _ = lifo_loads(jobs, p.horizon, p.C, p.cancels_waiting)
            fail += weight * failure_table(np.array(loads), concurrency, p.S_m, p.D_m, p.C, p.cancels_waiting)
        return np.clip(fail, 0.0, 1.0)

    def _with_capacity_paths(self, concurrency: int, paths: dict[tuple[int, ...], float]) -> np.ndarray:
        """The expectation over capacity paths (independent of the jobs: capacity is exogenous) and outcomes."""
        p = self.platform
        fail = np.zeros((p.S_m, p.D_m), dtype=np.float64)
        for combo in itertools.product(*(range(r.start.size) for r in self._residuals)):
            weight = math.prod(float(r.probability[i]) for r, i in zip(self._residuals, combo, strict=True))
            jobs = [(int(r.start[i]), int(r.length[i]), r.concurrency)
                    for r, i in zip(self._residuals, combo, strict=True)]
            for path, p_path in paths.items():
                loads, _ = lifo_loads(jobs, p.horizon, path, p.cancels_waiting)
                fail += weight * p_path * failure_table(np.array(loads), concurrency, p.S_m, p.D_m, np.array(path),
                                                        p.cancels_waiting)
        return fail


def failure_table(loads: np.ndarray, c: int, n_starts: int, max_d: int, capacity: int | np.ndarray,
                  cancels_waiting: bool = True) -> np.ndarray:
    """fail[s, d-1] for one load path, straight from the definition (docs/model.md section 5); `capacity` is C or
    the capacity C_tau of each round of the path; without `cancels_waiting` (the `newest_demanding` rule) an
    overflow while the job waits does not fail it."""
    cap = np.broadcast_to(np.asarray(capacity), loads.shape)
    out = np.zeros((n_starts, max_d), dtype=np.float64)
    for s in range(n_starts):
        waiting_overflow = cancels_waiting and bool(np.any(loads[:s] > cap[:s]))
        for d in range(1, max_d + 1):
            out[s, d - 1] = float(waiting_overflow or bool(np.any(loads[s:s + d] + c > cap[s:s + d])))
    return out
