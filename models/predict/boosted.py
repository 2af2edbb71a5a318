"""A gradient-boosted classifier over the learned predictor's duration bins: sharper laws from the same features.

The learned predictor (`learned.py`) gives a job its tree leaf's smoothed bin histogram; here a scikit-learn
`HistGradientBoostingClassifier` on the same submission features (`FEATURES`) gives each job its own probability
of every bin. The bins and their atoms are the learned predictor's (quantile edges of the training runtimes,
`within_bin_atoms`); a share `floor` of the global histogram is mixed in, so no bin the data has seen gets
probability 0; the mass at or above the requested time moves onto it (`capped`). Causal as every predictor:
only `observe`d jobs train it, refitted on the last `window` completions every `refit_every` completions; below
`min_train` completions the law is the global histogram (refreshed every 10 completions).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Self

import numpy as np
from numpy.typing import NDArray
from threadpoolctl import threadpool_limits

from models.arrays import FloatArray
from models.predict.bins import discretise, quantile_edges, within_bin_atoms
from models.predict.history import History
from models.predict.jobs import JobTable
from models.predict.learned import FEATURES, capped, features, smoothed_vectors
from models.predictive import Discrete


@dataclass(frozen=True)
class BoostedConfig:
    """Hyper-parameters; one configuration serves every trace."""

    bins: int = 16  # quantile bins of the training runtimes (half the learned predictor's: one tree per bin and round)
    sub_atoms: int = 4  # atoms per bin
    max_iter: int = 50  # boosting rounds (half scikit-learn's default: a refit and a predict cost in proportion)
    learning_rate: float = 0.1  # scikit-learn's default
    min_leaf: int = 20  # scikit-learn's default min_samples_leaf
    floor: float = 0.02  # share of the global histogram mixed into every law
    window: int = 8000  # completed jobs the model trains on (the most recent)
    min_train: int = 100  # below this many completed jobs: the global histogram only
    refit_every: int = 250  # completions between refits
    seed: int = 0

    def __post_init__(self) -> None:
        checks = {"bins": (self.bins, 1), "sub_atoms": (self.sub_atoms, 1), "max_iter": (self.max_iter, 1),
                  "min_leaf": (self.min_leaf, 1), "window": (self.window, 10), "min_train": (self.min_train, 2),
                  "refit_every": (self.refit_every, 1)}
        for name, (value, low) in checks.items():
            if value < low:
                raise ValueError(f"{name}={value} must be >= {low}")
        if not 0.0 < self.floor <= 1.0:
            raise ValueError(f"floor={self.floor} must lie in (0, 1]")
        if self.learning_rate <= 0:
            raise ValueError(f"learning_rate={self.learning_rate} must be > 0")


@dataclass
class _Fit:
    """One fitted model: the bins, their atoms, the global vector and the classifier (None: global only)."""

    edges: FloatArray
    atoms: FloatArray
    atom_bin: NDArray[np.int64]
    global_vector: FloatArray
    classifier: Any

    def vectors(self, x: NDArray[np.float64], floor: float) -> FloatArray:
        """(n, bins): the classifier's bin probabilities mixed with the global vector (weight `floor`)."""
        n = x.shape[0]
        if self.classifier is None:
            return np.repeat(self.global_vector[None, :], n, axis=0)
        proba = np.zeros((n, self.edges.size))
        with threadpool_limits(1):  # OpenMP threads on a shared machine cost 10-40x in wall time
            proba[:, np.asarray(self.classifier.classes_, dtype=np.int64)] = self.classifier.predict_proba(x)
        return (1.0 - floor) * proba + floor * self.global_vector[None, :]

    def on_atoms(self, vectors: FloatArray) -> FloatArray:
        """Each bin's probability shared equally by its atoms."""
        share = np.bincount(self.atom_bin, minlength=self.edges.size)[self.atom_bin]
        return np.asarray(vectors[:, self.atom_bin] / share, dtype=np.float64)


@dataclass
class BoostedPredictor:
    """`fit(table)` binds a trace, `observe(i)` learns a completion, `predict(indices)` answers."""

    config: BoostedConfig = field(default_factory=BoostedConfig)
    name: str = "learned-boosted"
    history: History | None = field(default=None, repr=False)
    stats: dict[str, float] = field(default_factory=dict)

    def fit(self, data: JobTable) -> Self:
        self.history = History(data)
        self._x = np.zeros((len(data), len(FEATURES)))
        self._has_x = np.zeros(len(data), dtype=bool)
        self._fit: _Fit | None = None
        self._since_refit = 0
        self.stats = {"refits": 0, "fit_s": 0.0}
        return self

    @property
    def _hist(self) -> History:
        if self.history is None:
            raise ValueError(f"predictor {self.name!r} must be fitted to a job table before use")
        return self.history

    def observe(self, index: int) -> None:
        hist = self._hist
        self._keep(index)
        hist.observe(index)
        self._since_refit += 1
        n = len(hist.completed)
        cold = n < self.config.min_train
        if (cold and n % 10 == 0) or (not cold and (self._fit is None or self._fit.classifier is None
                                                    or self._since_refit >= self.config.refit_every)):
            self.refit()

    def refit(self) -> None:
        """Fit the bins, the global vector and (from `min_train` completions) the classifier on the window now."""
        from sklearn.ensemble import HistGradientBoostingClassifier
        began = time.perf_counter()
        cfg = self.config
        train = np.asarray(self._hist.completed[-cfg.window:], dtype=np.int64)
        y = self._hist.table.runtime[train].astype(np.float64)
        edges = quantile_edges(y, cfg.bins)
        labels = discretise(y, edges)
        root = smoothed_vectors(np.bincount(labels, minlength=edges.size)[None, :].astype(np.float64),
                                np.array([-1], dtype=np.int64), 0.0)[0]
        classifier: Any = None
        if train.size >= cfg.min_train and np.unique(labels).size > 1:
            classifier = HistGradientBoostingClassifier(
                max_iter=cfg.max_iter, learning_rate=cfg.learning_rate, min_samples_leaf=cfg.min_leaf,
                early_stopping=False, random_state=cfg.seed)
            with threadpool_limits(1):
                classifier.fit(self._x[train], labels)
        atoms, atom_bin = within_bin_atoms(y, edges, cfg.sub_atoms)
        self._fit = _Fit(edges, atoms, atom_bin, root, classifier)
        self._since_refit = 0
        self.stats["refits"] += 1
        self.stats["fit_s"] += time.perf_counter() - began

    def predict(self, query: Sequence[int]) -> Discrete:
        """Each queried job's law: its bin probabilities spread on the atoms, capped at its requested time."""
        indices = np.asarray([int(i) for i in query], dtype=np.int64)
        for i in indices:
            self._keep(int(i))
        requested = self._hist.table.requested[indices].astype(np.float64)
        f = self._fit
        if f is None:
            return Discrete.point(requested)
        return capped(f.atoms, f.on_atoms(f.vectors(self._x[indices], self.config.floor)), requested)

    def _keep(self, index: int) -> None:
        """Freeze job `index`'s features the first time it is seen (its submission, in a causal replay)."""
        if not self._has_x[index]:
            self._x[index] = features(self._hist, index)
            self._has_x[index] = True
