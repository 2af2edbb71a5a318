"""Seed 004's scores: survival (eq. 1) and utilisation (eq. 2) per window, NA cases, weighted aggregation.

A background job is given 100 - u of the CPU, u the forecast's upper bound (its 1 - c quantile):
  survival    = NA if u >= 100 (no room is offered), else 1 if u >= actual (the job is not hit), else 0;
  utilisation = NA if actual >= 100 (no room existed), else (100 - u) / (100 - actual) when that ratio lies
                in [0, 1] (the job survived), else 0 (the job was hit, or nothing was offered).
With a granularity g > 0 (100 / cores) both rooms are rounded down to multiples of g first, an offer below g
is NA for survival, a real room below g is NA for utilisation and a failure for survival.
Over many windows each score is the mean of its non-NA values; its weight is their count.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from models.arrays import FloatArray


def _rooms(u: ArrayLike, actual: ArrayLike, granularity: float) -> tuple[FloatArray, FloatArray]:
    if granularity < 0 or granularity > 100:
        raise ValueError(f"granularity={granularity} must lie in [0, 100]")
    offered = 100.0 - np.asarray(u, dtype=np.float64)
    real = 100.0 - np.asarray(actual, dtype=np.float64)
    if granularity > 0:
        offered = np.floor(offered / granularity + 1e-9) * granularity
        real = np.floor(real / granularity + 1e-9) * granularity
    return np.asarray(offered, dtype=np.float64), np.asarray(real, dtype=np.float64)


def survival(u: ArrayLike, actual: ArrayLike, granularity: float = 0.0) -> FloatArray:
    """Eq. (1) per window: 1.0, 0.0 or NaN (NA)."""
    offered, real = _rooms(u, actual, granularity)
    score = (real >= offered).astype(np.float64)
    if granularity > 0:
        score = np.where(real < granularity, 0.0, score)
        return np.where(offered < granularity, np.nan, score)
    return np.where(offered <= 0, np.nan, score)


def utilization(u: ArrayLike, actual: ArrayLike, granularity: float = 0.0) -> FloatArray:
    """Eq. (2) per window: the used share of the free room in [0, 1], or NaN (NA)."""
    offered, real = _rooms(u, actual, granularity)
    none_left = real < granularity if granularity > 0 else real <= 0
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = offered / real
    score = np.where((ratio >= 0) & (ratio <= 1), ratio, 0.0)
    return np.where(none_left, np.nan, score)


def adjustment_switch(scores: FloatArray, on_after: int, off_after: int) -> FloatArray:
    """Seed 004 1.9: is the switch ON when window j is scheduled (from the survival scores before j)?

    It turns ON after `on_after` consecutive 0s and OFF after `off_after` consecutive 1s seen while ON;
    NA scores change nothing. Returns a 0/1 float array aligned with scores.
    """
    if on_after < 1 or off_after < 1:
        raise ValueError(f"adjustment ({on_after}, {off_after}) must be two integers >= 1")
    on = np.zeros(scores.shape, dtype=np.float64)
    switch, counter = False, 0
    for j, s in enumerate(scores):
        on[j] = float(switch)
        if np.isnan(s):
            continue
        if s > 0:
            counter = counter + 1 if switch else 0
            if switch and counter >= off_after:
                switch, counter = False, 0
        else:
            counter = 0 if switch else counter + 1
            if not switch and counter >= on_after:
                switch, counter = True, 0
    return on


def adjust(surv: FloatArray, util: FloatArray, on_after: int, off_after: int) -> tuple[FloatArray, FloatArray]:
    """Windows scheduled with the switch ON are not counted for survival and use nothing (utilisation 0)."""
    on = adjustment_switch(surv, on_after, off_after) > 0
    return np.where(on, np.nan, surv), np.where(on & ~np.isnan(util), 0.0, util)


@dataclass(frozen=True)
class Score:
    """Weighted aggregate over windows: each score is sum / weight over its non-NA windows."""

    survival: float | None
    survival_weight: int
    utilization: float | None
    utilization_weight: int
    predictions: int

    @classmethod
    def of(cls, surv: FloatArray, util: FloatArray) -> Score:
        s, w = np.nansum(surv), int(np.count_nonzero(~np.isnan(surv)))
        us, uw = np.nansum(util), int(np.count_nonzero(~np.isnan(util)))
        return cls(float(s / w) if w else None, w, float(us / uw) if uw else None, uw, int(surv.size))

    @classmethod
    def pooled(cls, parts: list[Score]) -> Score:
        """The windows of all parts together (each part's score weighted by its weight)."""
        w = sum(p.survival_weight for p in parts)
        uw = sum(p.utilization_weight for p in parts)
        s = sum((p.survival or 0.0) * p.survival_weight for p in parts)
        u = sum((p.utilization or 0.0) * p.utilization_weight for p in parts)
        return cls(s / w if w else None, w, u / uw if uw else None, uw, sum(p.predictions for p in parts))

    def as_dict(self) -> dict[str, float | int | None]:
        return {"survival": self.survival, "utilization": self.utilization,
                "survival_weight": self.survival_weight, "utilization_weight": self.utilization_weight,
                "predictions": self.predictions}
