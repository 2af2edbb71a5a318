"""The learned law mixed with the user's own recent runtimes, each user's weight learned causally by log score.

Job j of user u gets M_j = w_u U_j + (1 - w_u) L_j: L_j the inner predictor's law (the learned one, capped at j's
request), U_j the empirical law of the runtimes of u's last (up to five, `History.RECENT`) completed jobs, each capped
at j's request (the law of "the next job runs as one of the user's last few"; Tsafrir et al.'s average of the last
two is its point cousin). A user with no completed job, or a job quoted before there are bins to score in, gets L_j.

The weight comes from the past alone. Every weight w of a grid (0, 1/100, ..., 1) keeps the log score
log(w u_k + (1 - w) l_k) of each completed job k that was quoted a mixture, u_k and l_k the masses U_k and L_k gave
the bin of k's runtime (the inner predictor's bins when k was quoted: for the learned one its quantile bins of the
completed runtimes). Per user, w_u maximises S_u(w) + PRIOR S(w) / n: S_u the sum of u's own jobs' scores, S the sum
over the n scored jobs of every user, so the population's mean score counts as PRIOR of u's jobs (follow the leader
with a prior; ties to the smallest w, so the inner law until the completions say otherwise). PRIOR = 5, the jobs
U_j is made of, is set a priori. A job's masses are learned when it completes (`observe`), never before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Self

import numpy as np
from numpy.typing import NDArray

from models.predict.bins import check_edges, discretise
from models.predict.history import RECENT, History
from models.predict.jobs import JobTable
from models.predict.learned import LearnedPredictor
from models.predict.protocol import Predictor
from models.predictive import Discrete, mix

GRID = np.linspace(0.0, 1.0, 101)  # the candidate weights of the user's component
PRIOR = float(RECENT)  # the population's mean score counts as this many of a user's own jobs
FLOOR = 1e-12  # the smallest mass a log score takes (a weight of 1 on a law that missed the bin scores -27.6)


def user_laws(recent: Sequence[Sequence[int]], requested: NDArray[np.float64]) -> Discrete:
    """Row i: each of `recent[i]`'s runtimes (non-empty) with mass 1 / len, capped at `requested[i]`."""
    capped = [np.minimum(np.asarray(r, dtype=np.float64), cap) for r, cap in zip(recent, requested, strict=True)]
    support = np.unique(np.concatenate(capped))
    probs = np.zeros((len(capped), support.size))
    for row, values in enumerate(capped):
        np.add.at(probs[row], np.searchsorted(support, values), 1.0 / values.size)
    return Discrete(support, probs)


def bin_masses(law: Discrete, edges: NDArray[np.float64]) -> NDArray[np.float64]:
    """(rows, bins): each row's mass in each bin (the bins of `discretise`)."""
    out = np.zeros((len(law), edges.size))
    np.add.at(out.T, discretise(law.support, edges), law.probs.T)
    return out


def learned_edges(inner: Predictor) -> NDArray[np.float64] | None:
    """The learned predictor's current bin edges (None before its first fit, or for another predictor)."""
    return inner.bin_edges if isinstance(inner, LearnedPredictor) else None


@dataclass
class UserMix:
    """`inner`'s laws mixed with each user's recent runtimes, the weights learned by log score (module docstring).
    `edges`: fixed bins to score in (None: the learned inner predictor's bins at each quote). `fixed`: every user's
    weight, set instead of learned (for a bound: how far the user's runtimes alone can sharpen the laws)."""

    inner: Predictor = field(default_factory=LearnedPredictor)
    name: str = "user-mix"
    edges: tuple[float, ...] | None = None
    fixed: float | None = None
    _history: History | None = field(default=None, repr=False)
    _scores: NDArray[np.float64] = field(default_factory=lambda: np.zeros(GRID.size), repr=False)
    _user_scores: dict[int, NDArray[np.float64]] = field(default_factory=dict, repr=False)
    _pending: dict[int, tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]] = field(
        default_factory=dict, repr=False)
    _learned: int = field(default=0, repr=False)
    _mixed: int = field(default=0, repr=False)

    def __post_init__(self) -> None:
        if self.fixed is not None and not 0.0 <= self.fixed <= 1.0:
            raise ValueError(f"fixed={self.fixed} must lie in [0, 1] (or None: learned)")

    def fit(self, data: JobTable) -> Self:
        self.inner.fit(data)
        self._history = History(data)
        self._scores = np.zeros(GRID.size)
        self._user_scores = {}
        self._pending = {}
        self._learned = self._mixed = 0
        return self

    @property
    def history(self) -> History:
        if self._history is None:
            raise ValueError(f"predictor {self.name!r} must be fitted to a job table before use")
        return self._history

    @property
    def stats(self) -> dict[str, float]:
        """The inner predictor's stats, the pooled weight (the prior's argmax), the scored and the mixed jobs."""
        return {**getattr(self.inner, "stats", {}), "user_weight_pooled": self.weight(None),
                "user_scored": self._learned, "user_mixed": self._mixed}

    def weight(self, user: int | None) -> float:
        """The weight of `user`'s recent runtimes now (None: a user with no scored job, the prior's own argmax)."""
        if self.fixed is not None:
            return self.fixed
        prior = self._scores * (PRIOR / max(1, self._learned))
        own = self._user_scores.get(user) if user is not None else None
        return float(GRID[int(np.argmax(prior if own is None else own + prior))])

    def observe(self, index: int) -> None:
        history = self.history
        self.inner.observe(index)
        history.observe(index)
        record = self._pending.pop(index, None)
        if record is None:
            return
        edges, user, learned = record
        k = int(discretise(np.array([float(history.table.runtime[index])]), edges)[0])
        score = np.log(np.maximum(GRID * user[k] + (1.0 - GRID) * learned[k], FLOOR))
        self._scores += score
        u = int(history.table.user[index])
        self._user_scores[u] = self._user_scores.get(u, 0.0) + score
        self._learned += 1

    def predict(self, query: Sequence[int]) -> Discrete:
        history = self.history
        law = self.inner.predict(query)
        edges = check_edges(self.edges) if self.edges is not None else learned_edges(self.inner)
        rows = [r for r, i in enumerate(query) if history.user_recent(int(i))]
        if edges is None or not rows:
            return law
        picked = [int(query[r]) for r in rows]
        table = history.table
        user = user_laws([history.user_recent(i) for i in picked],
                         table.requested[np.asarray(picked, dtype=np.int64)].astype(np.float64))
        learned = Discrete(law.support, law.probs[rows])
        u_bins, l_bins = bin_masses(user, edges), bin_masses(learned, edges)
        for r, i in enumerate(picked):
            self._pending[i] = (edges, u_bins[r], l_bins[r])
        weights = np.array([self.weight(int(table.user[i])) for i in picked])
        self._mixed += int(np.count_nonzero(weights))
        mixed = mix(user, learned, weights)
        support = np.union1d(law.support, mixed.support)
        probs = np.zeros((len(law), support.size))
        probs[:, np.searchsorted(support, law.support)] = law.probs
        at = np.asarray(rows, dtype=np.int64)
        probs[at] = 0.0
        probs[np.ix_(at, np.searchsorted(support, mixed.support))] = mixed.probs
        return Discrete(support, probs)
