"""The online predictor protocol: bind a job table, learn completions causally, predict laws of durations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, Self, runtime_checkable

from models.predict.jobs import JobTable
from models.predictive import Discrete


@runtime_checkable
class Predictor(Protocol):
    """What every duration predictor offers: `fit` binds a trace, `observe` learns, `predict` answers.

    Causality is the caller's contract: `observe(i)` only once job i has completed, and `predict` sees only
    what was observed before it.
    """

    name: str

    def fit(self, data: JobTable) -> Self:
        """Bind to a job table; nothing is known to have completed yet."""
        ...

    def observe(self, index: int) -> None:
        """Job `index` of the table has completed: its runtime may now be learned."""
        ...

    def predict(self, query: Sequence[int]) -> Discrete:
        """The law of each queried job's duration (seconds), one row per job, at the current instant."""
        ...
