"""A Markov chain over discretised states (seed 004 1.4.4): max-to-max, or average-to-max (MarkovX).

States partition the range into `states` bins: equal-width over [0, 100] (fixed) or at the training
quantiles, up to the training maximum (quantile). The
transition counts from the state of the regressor in window t-1 to the state of the max in window t give the
law of the next max; each state stands for its upper edge (so quantiles are conservative). A state never seen
in training uses the unconditional law of the max.
"""

from __future__ import annotations

from typing import Self

import numpy as np

from models.arrays import FloatArray, IntArray
from models.forecast.base import Ahead, Forecaster
from models.forecast.series import Series
from models.predictive import Discrete, Predictive

PARTITIONS = ("quantile", "fixed")


class Markov(Forecaster):
    """P[i, j] = P(max state j in window t | regressor state i in window t-1), rows of unseen states unconditional."""

    min_history = 1

    def __init__(self, states: int = 8, partition: str = "quantile", regressor: str = "max") -> None:
        if states < 2:
            raise ValueError(f"states={states} must be >= 2")
        if partition not in PARTITIONS:
            raise ValueError(f"partition={partition!r} is not one of {', '.join(PARTITIONS)}")
        if regressor not in ("max", "avg"):
            raise ValueError(f"regressor={regressor!r} must be 'max' or 'avg'")
        self.states = states
        self.partition = partition
        self.regressor = regressor
        self.name = "markov" if regressor == "max" else "markovx"
        self.edges = np.linspace(0.0, 100.0, states + 1)
        self.source_edges = self.edges
        self.transition = np.full((states, states), 1.0 / states)

    def _regressor(self, series: Series) -> FloatArray:
        return series.y if self.regressor == "max" else series.require_x(self.name)

    def state(self, values: FloatArray, edges: FloatArray | None = None) -> IntArray:
        """The state of each value: the bin of the inner edges it falls in (values above 100 in the last)."""
        inner = (self.edges if edges is None else edges)[1:-1]
        return np.asarray(np.searchsorted(inner, values, side="left"), dtype=np.int64)

    def _partition(self, values: FloatArray) -> FloatArray:
        if self.partition == "fixed":
            return np.asarray(np.linspace(0.0, max(100.0, float(values.max())), self.states + 1))
        # quantile bins of the training values, the last one closed at the training maximum
        inner = np.quantile(values, np.arange(1, self.states) / self.states)
        inner = np.maximum.accumulate(inner + np.arange(1, self.states) * 1e-9)  # strictly increasing
        top = max(float(values.max()), float(inner[-1])) + 1e-6
        return np.concatenate([[min(0.0, float(values.min()))], inner, [top]])

    def source_state(self, series: Series, rows: IntArray) -> IntArray:
        return self.state(self._regressor(series)[rows], self.source_edges)

    def fit(self, data: Series) -> Self:
        if len(data) < 3:
            raise ValueError(f"{self.name} needs at least 3 windows to fit, got {len(data)}")
        self.edges = self._partition(data.y)
        self.source_edges = self.edges if self.regressor == "max" else self._partition(self._regressor(data))
        source = self.source_state(data, np.arange(len(data) - 1))
        target = self.state(data.y[1:])
        counts = np.zeros((self.states, self.states))
        np.add.at(counts, (source, target), 1.0)
        unconditional = np.bincount(self.state(data.y), minlength=self.states).astype(float)
        unconditional /= unconditional.sum()
        seen = counts.sum(axis=1, keepdims=True)
        self.transition = np.where(seen > 0, counts / np.maximum(seen, 1.0), unconditional[None, :])
        return self

    def _law(self, rows: FloatArray) -> Discrete:
        return Discrete(self.edges[1:], rows / rows.sum(axis=1, keepdims=True))

    def predict(self, query: Ahead) -> Predictive:
        self._check_history(query.history)
        if self.regressor == "avg" and query.steps > 1:
            raise ValueError("markovx forecasts one window ahead only (its regressor is the average)")
        start = np.zeros(self.states)
        start[self.source_state(query.history, np.array([len(query.history) - 1]))[0]] = 1.0
        rows, current = [], start
        for _ in range(query.steps):
            current = current @ self.transition
            rows.append(current)
        return self._law(np.asarray(rows))

    def one_step(self, series: Series, origins: IntArray) -> Predictive:
        origins = self._check_origins(series, origins)
        return self._law(self.transition[self.source_state(series, origins - 1)])
