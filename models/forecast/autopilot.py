"""The Autopilot-style recommender (Rzadca et al., EuroSys 2020; seed 004 1.11), the industry peer.

Each past window's samples go into a histogram over `breaks` equal bins of [0, 100]; histograms are summed
with weight 2^(-age / half_life) (age in windows, 0 for the latest), dropping windows whose weight is below
`cut_off_weight`. The recommendation for the next window is the j-quantile of that decayed histogram; as a
law, it is the discrete distribution on the bins' upper edges, so quantile(1 - c) is the j = 1 - c quantile.
"""

from __future__ import annotations

from typing import Self

import numpy as np

from models.arrays import FloatArray, IntArray
from models.forecast.base import Ahead, Forecaster
from models.forecast.series import Series
from models.predictive import Discrete, Predictive


class Autopilot(Forecaster):
    """Decaying-histogram j-quantile recommender over the samples (raw) of past windows; nothing to fit."""

    name = "autopilot"
    min_history = 1
    learns = False

    def __init__(self, half_life: float = 12.0, breaks: int = 50, cut_off_weight: float = 0.001) -> None:
        if half_life <= 0:
            raise ValueError(f"half_life={half_life} must be > 0 windows")
        if breaks < 2:
            raise ValueError(f"breaks={breaks} must be >= 2")
        if not 0.0 < cut_off_weight < 1.0:
            raise ValueError(f"cut_off_weight={cut_off_weight} must lie strictly between 0 and 1")
        self.half_life = half_life
        self.breaks = breaks
        self.cut_off_weight = cut_off_weight
        self.edges = np.linspace(0.0, 100.0, breaks + 1)

    @property
    def memory(self) -> int:
        """Windows kept: those with 2^(-age / half_life) >= cut_off_weight."""
        return int(np.floor(-np.log2(self.cut_off_weight) * self.half_life)) + 1

    def fit(self, data: Series) -> Self:
        data.require_raw(self.name)
        return self

    def _counts(self, raw: FloatArray) -> FloatArray:
        """(windows, breaks) sample counts per bin; samples at 100 (or above) fall in the last bin."""
        bins = np.clip(np.searchsorted(self.edges[1:-1], raw, side="left"), 0, self.breaks - 1)
        counts = np.zeros((raw.shape[0], self.breaks))
        np.add.at(counts, (np.repeat(np.arange(raw.shape[0]), raw.shape[1]), bins.ravel()), 1.0)
        return counts

    def _kernel(self) -> FloatArray:
        return np.asarray(0.5 ** (np.arange(self.memory) / self.half_life), dtype=np.float64)

    def _law(self, decayed: FloatArray) -> Discrete:
        return Discrete(self.edges[1:], decayed / decayed.sum(axis=1, keepdims=True))

    def predict(self, query: Ahead) -> Predictive:
        """The same recommendation for every step ahead (the histogram does not extrapolate)."""
        self._check_history(query.history)
        raw = query.history.require_raw(self.name)[-self.memory:]
        kernel = self._kernel()[: raw.shape[0]][::-1]
        decayed = kernel @ self._counts(raw)
        return self._law(np.repeat(decayed[None, :], query.steps, axis=0))

    def one_step(self, series: Series, origins: IntArray) -> Predictive:
        """All origins at once: a causal FIR filter (scipy.signal.lfilter) of the per-window counts."""
        from scipy.signal import lfilter

        origins = self._check_origins(series, origins)
        counts = self._counts(series.require_raw(self.name))
        decayed = lfilter(self._kernel(), [1.0], counts, axis=0)
        return self._law(decayed[origins - 1])
