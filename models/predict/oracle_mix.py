"""An oracle for bounds, as `exact` is: a predictor's law with a share `weight` of its mass moved onto the runtime.

Not a predictor a platform can run (it reads the runtime at submission). It measures how sharp a law must be
for the mechanism's welfare to approach that of exact laws: weight 0 is the inner predictor, weight 1 `exact`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Self

import numpy as np

from models.predict.jobs import JobTable
from models.predict.protocol import Predictor
from models.predictive import Discrete, mix


@dataclass
class OracleMix:
    """(1 - weight) times `inner`'s law plus weight times the point law at the job's runtime."""

    inner: Predictor
    weight: float
    name: str = "oracle-mix"
    _table: JobTable | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not 0.0 <= self.weight <= 1.0:
            raise ValueError(f"weight={self.weight} must lie in [0, 1]")

    def fit(self, data: JobTable) -> Self:
        self.inner.fit(data)
        self._table = data
        return self

    def observe(self, index: int) -> None:
        self.inner.observe(index)

    def predict(self, query: Sequence[int]) -> Discrete:
        if self._table is None:
            raise ValueError(f"predictor {self.name!r} must be fitted to a job table before use")
        law = self.inner.predict(query)
        runtime = self._table.runtime[np.asarray(query, dtype=np.int64)].astype(np.float64)
        return mix(Discrete.point(runtime), law, self.weight)
