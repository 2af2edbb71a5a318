"""Quantile recalibration of a predictor's laws by the empirical law of its own past PIT values.

Kuleshov, Fenner and Ermon (2018), "Accurate uncertainties for deep learning using calibrated regression": if
u_i = F_i(y_i) is the predicted CDF at the runtime that happened, and R is the empirical CDF of the u's, then the
recalibrated CDF G = R o F covers as often as it says. Here, causally: a job's raw CDF is kept from its
prediction, its u is taken when it completes (`observe`), and a prediction's cumulative probabilities are mapped
through R of the last `window` u's once `min_observed` of them exist. The support is unchanged (so a law capped at
the requested time stays capped); only the probabilities move.

Coverage at level a is exact on the observed u's: y <= x_k if and only if F(y) <= F(x_k) for a runtime y and an
atom x_k, so the share of runtimes at most the a-quantile of G is R(F(x_k*)) = G(x_k*) >= a.

`CdfMapped` is what every such wrapper shares (here and in `adaptive.py`): each law's CDF mapped through a
monotone map of [0, 1], and a record of each prediction kept until its job completes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Self

import numpy as np
from numpy.typing import NDArray

from models.predict.jobs import JobTable
from models.predict.protocol import Predictor
from models.predictive import Discrete


@dataclass
class CdfMapped(ABC):
    """`inner`'s laws with their CDFs mapped through `_map` (None: unchanged); each prediction's `_records` kept
    until its job completes, then `_learn`ed from with the job's runtime. Subclasses set the four hooks."""

    inner: Predictor
    name: str = "mapped"
    _table: JobTable | None = field(default=None, repr=False)
    _pending: dict[int, Any] = field(default_factory=dict, repr=False)

    def fit(self, data: JobTable) -> Self:
        self.inner.fit(data)
        self._table = data
        self._pending = {}
        self._reset()
        return self

    def observe(self, index: int) -> None:
        if self._table is None:
            raise ValueError(f"predictor {self.name!r} must be fitted to a job table before use")
        self.inner.observe(index)
        record = self._pending.pop(index, None)
        if record is not None:
            self._learn(record, float(self._table.runtime[index]))

    def predict(self, query: Sequence[int]) -> Discrete:
        law = self.inner.predict(query)
        cum = np.cumsum(law.probs, axis=1)
        mapped = self._map(cum)
        out = law if mapped is None else Discrete(law.support, cdf_probs(mapped, law.probs))
        for index, record in zip(query, self._records(law, cum, out), strict=True):
            self._pending[int(index)] = record
        return out

    @abstractmethod
    def _reset(self) -> None:
        """Forget what was learned (at `fit`)."""

    @abstractmethod
    def _map(self, cum: NDArray[np.float64]) -> NDArray[np.float64] | None:
        """The mapped cumulative probabilities of the inner laws' `cum` (one row per job), or None to keep them."""

    @abstractmethod
    def _records(self, law: Discrete, cum: NDArray[np.float64], out: Discrete) -> list[Any]:
        """What to keep of each row's prediction (the inner `law`, its `cum`, the law given) until it completes."""

    @abstractmethod
    def _learn(self, record: Any, runtime: float) -> None:
        """A job predicted with `record` completed after `runtime` seconds."""


def cdf_probs(mapped: NDArray[np.float64], probs: NDArray[np.float64]) -> NDArray[np.float64]:
    """Probabilities whose cumulative sums are `mapped` (rows non-decreasing in [0, 1]), each row's held at 1 from
    its last atom of positive probability in `probs` on: a law capped at its request stays capped."""
    k = np.arange(probs.shape[1])
    last = probs.shape[1] - 1 - np.argmax(probs[:, ::-1] > 0, axis=1)
    return np.diff(np.where(k[None, :] >= last[:, None], 1.0, mapped), axis=1, prepend=0.0)


@dataclass
class Recalibrated(CdfMapped):
    """`inner`'s laws mapped through the empirical CDF of its probability integral transforms."""

    name: str = "recalibrated"
    min_observed: int = 50
    window: int = 1000
    _pit: deque[float] = field(default_factory=deque, repr=False)

    def __post_init__(self) -> None:
        if self.min_observed < 1:
            raise ValueError(f"min_observed={self.min_observed} must be >= 1")
        if self.window < self.min_observed:
            raise ValueError(f"window={self.window} must be >= min_observed={self.min_observed}")

    def _reset(self) -> None:
        self._pit = deque(maxlen=self.window)

    def _map(self, cum: NDArray[np.float64]) -> NDArray[np.float64] | None:
        if len(self._pit) < self.min_observed:
            return None
        pit = np.sort(np.fromiter(self._pit, dtype=np.float64))
        return np.searchsorted(pit, cum, side="right") / pit.size

    def _records(self, law: Discrete, cum: NDArray[np.float64], out: Discrete) -> list[Any]:
        return [(law.support, row) for row in cum]

    def _learn(self, record: Any, runtime: float) -> None:
        support, cum = record
        k = int(np.searchsorted(support, runtime, side="right"))
        self._pit.append(float(cum[k - 1]) if k > 0 else 0.0)
