"""Quantile recalibration of a predictor's laws by the empirical law of its own past PIT values.

Kuleshov, Fenner and Ermon (2018), "Accurate uncertainties for deep learning using calibrated regression": if
u_i = F_i(y_i) is the predicted CDF at the runtime that happened, and R is the empirical CDF of the u's, then the
recalibrated CDF G = R o F covers as often as it says. Here, causally: a job's raw CDF is kept from its
prediction, its u is taken when it completes (`observe`), and a prediction's cumulative probabilities are mapped
through R of the last `window` u's once `min_observed` of them exist. The support is unchanged (so a law capped at
the requested time stays capped); only the probabilities move.

Coverage at level a is exact on the observed u's: y <= x_k if and only if F(y) <= F(x_k) for a runtime y and an
atom x_k, so the share of runtimes at most the a-quantile of G is R(F(x_k*)) = G(x_k*) >= a.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Self

import numpy as np
from numpy.typing import NDArray

from models.predict.jobs import JobTable
from models.predict.protocol import Predictor
from models.predictive import Discrete


@dataclass
class Recalibrated:
    """`inner`'s laws mapped through the empirical CDF of its probability integral transforms."""

    inner: Predictor
    name: str = "recalibrated"
    min_observed: int = 50
    window: int = 1000
    _table: JobTable | None = field(default=None, repr=False)
    _raw: dict[int, tuple[NDArray[np.float64], NDArray[np.float64]]] = field(default_factory=dict, repr=False)
    _pit: deque[float] = field(default_factory=deque, repr=False)

    def __post_init__(self) -> None:
        if self.min_observed < 1:
            raise ValueError(f"min_observed={self.min_observed} must be >= 1")
        if self.window < self.min_observed:
            raise ValueError(f"window={self.window} must be >= min_observed={self.min_observed}")

    def fit(self, data: JobTable) -> Self:
        self.inner.fit(data)
        self._table = data
        self._raw = {}
        self._pit = deque(maxlen=self.window)
        return self

    def observe(self, index: int) -> None:
        if self._table is None:
            raise ValueError(f"predictor {self.name!r} must be fitted to a job table before use")
        self.inner.observe(index)
        raw = self._raw.pop(index, None)
        if raw is not None:
            support, cum = raw
            k = int(np.searchsorted(support, float(self._table.runtime[index]), side="right"))
            self._pit.append(float(cum[k - 1]) if k > 0 else 0.0)

    def predict(self, query: Sequence[int]) -> Discrete:
        law = self.inner.predict(query)
        cum = np.cumsum(law.probs, axis=1)
        for row, index in enumerate(query):
            self._raw[int(index)] = (law.support, cum[row])
        if len(self._pit) < self.min_observed:
            return law
        return Discrete(law.support, _through(cum, np.sort(np.fromiter(self._pit, dtype=np.float64))))


def _through(cum: NDArray[np.float64], pit: NDArray[np.float64]) -> NDArray[np.float64]:
    """Probabilities whose cumulative sums are R(cum), R the empirical CDF of the sorted `pit`."""
    mapped = np.searchsorted(pit, cum, side="right") / pit.size
    mapped[:, -1] = 1.0
    return np.diff(mapped, axis=1, prepend=0.0)
