"""Point baselines with the engine's interface: requested time, Tsafrir (last two), last five, exact (oracle)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Self

import numpy as np

from models.predict.history import History
from models.predict.jobs import JobTable
from models.predictive import Discrete


@dataclass
class PointPredictor:
    """Base of the point predictors: `point(index)` in seconds, returned as a degenerate `Discrete`."""

    name: str = "point"
    history: History | None = field(default=None, repr=False)

    def fit(self, data: JobTable) -> Self:
        """Bind to a trace; no job is known to have completed yet."""
        self.history = History(data)
        return self

    @property
    def table(self) -> JobTable:
        if self.history is None:
            raise ValueError(f"predictor {self.name!r} must be fitted to a job table before use")
        return self.history.table

    def observe(self, index: int) -> None:
        """Job `index` has completed."""
        if self.history is None:
            raise ValueError(f"predictor {self.name!r} must be fitted to a job table before use")
        self.history.observe(index)

    def point(self, index: int) -> int:
        return int(self.table.requested[index])

    def predict(self, query: Sequence[int]) -> Discrete:
        """The predictions, at the current instant, of the jobs `query` (indices into the table)."""
        _ = self.table  # refuses an unfitted predictor
        return Discrete.point(np.array([self.point(int(i)) for i in query], dtype=np.float64))


@dataclass
class RequestedTime(PointPredictor):
    """The user's requested time L_j (what plain EASY uses)."""

    name: str = "requested"


@dataclass
class Exact(PointPredictor):
    """The true runtime: an oracle, for bounds only."""

    name: str = "exact"

    def point(self, index: int) -> int:
        return int(self.table.runtime[index])


@dataclass
class Tsafrir(PointPredictor):
    """EASY++ (Tsafrir, Etzion, Feitelson 2007): floor of the mean of the user's last two completed runtimes,
    capped by the requested time; the requested time until the user has two completed jobs."""

    name: str = "tsafrir"

    def point(self, index: int) -> int:
        assert self.history is not None
        recent = self.history.user_recent(index)
        requested = int(self.table.requested[index])
        if len(recent) < 2:
            return requested
        return min(requested, (recent[-1] + recent[-2]) // 2)


@dataclass
class LastFive(PointPredictor):
    """Floor of the mean of the user's last five completed runtimes (fewer if fewer), capped by requested."""

    name: str = "last5"

    def point(self, index: int) -> int:
        assert self.history is not None
        recent = self.history.user_recent(index)
        requested = int(self.table.requested[index])
        if not recent:
            return requested
        return min(requested, sum(recent) // len(recent))
