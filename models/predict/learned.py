"""The learned predictor (seed 004, Part 2): discretise durations, cluster jobs, one probability vector per cluster.

Clusters are the leaves of a regression tree on log runtime (or the components of a Gaussian mixture whose
size BIC picks). A cluster's probability vector is its bin histogram smoothed toward its parent's vector
(the global vector for mixture components). Learning is causal: only jobs `observe`d as completed enter the
training window. The tree is regrown on a schedule; in between, the drift diagnostic (eq. 3) compares each
cluster's vector with the one of the jobs completed since, and when the discrepancy exceeds its sampling
noise the update policy replaces as many random training jobs by those jobs and re-estimates the vectors.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Self

import numpy as np
from numpy.typing import NDArray

from models.arrays import FloatArray
from models.law import Law
from models.predict.bins import check_edges, discretise, quantile_edges, within_bin_atoms
from models.predict.history import History
from models.predict.jobs import JobTable
from models.predictive import Discrete

Clustering = Literal["tree", "gmm"]
FEATURES: tuple[str, ...] = (
    "log_requested", "log_size", "user", "group", "executable", "queue", "partition",
    "hour", "weekday", "log_last", "log_last_two", "log_last_five", "last_ratio", "log_user_jobs",
)


@dataclass(frozen=True)
class LearnedConfig:
    """Hyper-parameters; one configuration serves every trace."""

    bins: int = 32  # quantile bins of the completed runtimes (seed 004 Sec. 2.2), when `edges` is None
    edges: tuple[float, ...] | None = None  # explicit upper bin edges (seconds)
    sub_atoms: int = 4  # atoms per bin, at the within-bin quantiles of the training runtimes
    clustering: Clustering = "tree"
    min_leaf: int = 40  # seed 004 "minsize": jobs per tree leaf at least
    max_leaves: int = 96
    max_components: int = 8  # seed 004 "upperlimBIC"
    smoothing: float = 10.0  # pseudo-jobs pulling a cluster's vector toward its parent's
    window: int = 8000  # completed jobs the model trains on (the most recent)
    min_train: int = 100  # below this many completed jobs: the global histogram only
    refit_every: int = 1000  # completions between regrowths of the clusters
    refit_growth: float | None = None  # also regrow once the completions reach this multiple of the last fit's
    drift_every: int = 200  # completions between drift checks (eq. 3)
    drift_factor: float = 2.0  # drift when eq. 3 exceeds this multiple of its no-drift sampling noise
    seed: int = 0

    def __post_init__(self) -> None:
        checks = {"bins": (self.bins, 1), "min_leaf": (self.min_leaf, 1), "sub_atoms": (self.sub_atoms, 1),
                  "max_leaves": (self.max_leaves, 2),
                  "max_components": (self.max_components, 1), "window": (self.window, 10),
                  "min_train": (self.min_train, 2), "refit_every": (self.refit_every, 1),
                  "drift_every": (self.drift_every, 1)}
        for name, (value, low) in checks.items():
            if value < low:
                raise ValueError(f"{name}={value} must be >= {low}")
        if self.smoothing < 0 or self.drift_factor <= 0:
            raise ValueError(f"smoothing={self.smoothing} must be >= 0 and drift_factor={self.drift_factor} > 0")
        if self.clustering not in ("tree", "gmm"):
            raise ValueError(f"clustering={self.clustering!r} must be 'tree' or 'gmm'")
        if self.edges is not None:
            check_edges(self.edges)
        if self.refit_growth is not None and not self.refit_growth > 1.0:
            raise ValueError(f"refit_growth={self.refit_growth} must be > 1 (or None)")


@dataclass(frozen=True)
class Submission:
    """What is known of a job when it is submitted (the columns of a `JobTable` row, less its runtime)."""

    submit: int
    requested: int
    size: int
    user: int
    group: int = 0
    executable: int = 0
    queue: int = 0
    partition: int = 0


def features(history: History, index: int) -> list[float]:
    """The FEATURES of job `index`, from its submission fields and its user's completed jobs so far."""
    c = history.columns
    return _features(history, c.submit[index], c.requested[index], c.size[index], c.user[index], c.group[index],
                     c.executable[index], c.queue[index], c.partition[index])


def submission_features(history: History, job: Submission) -> list[float]:
    """The FEATURES of a submission, from its fields and its user's jobs completed in `history` so far."""
    return _features(history, job.submit, job.requested, job.size, job.user, job.group, job.executable, job.queue,
                     job.partition)


def _features(history: History, submit: int, requested_time: int, size: int, user: int, group: int,
              executable: int, queue: int, partition: int) -> list[float]:
    recent = history.recent.get(user, ())
    requested = float(requested_time)
    if recent:
        last = float(recent[-1])
        two = (recent[-2] + recent[-1]) / 2 if len(recent) > 1 else recent[-1] / 1
        five = sum(recent) / len(recent)
    else:
        last = two = five = requested
    count = history.user_count.get(user, 0)
    log = math.log
    return [
        log(max(requested, 1.0)), log(max(float(size), 1.0)), float(user),
        float(group), float(executable), float(queue), float(partition),
        (submit % 86400) / 3600.0, float((submit // 86400) % 7), log(max(last, 1.0)), log(max(two, 1.0)),
        log(max(five, 1.0)), min(last / requested, 1.0), math.log1p(count),
    ]


def smoothed_vectors(counts: NDArray[np.float64], parent: NDArray[np.int64], smoothing: float) -> FloatArray:
    """Per-node probability vectors: root (counts + 1/2) / (n + m/2); node (counts + s p_parent) / (n + s).

    `counts[v, k]` is the number of training jobs of node v in bin k; `parent[v]` is -1 at the root and
    nodes are numbered so that a parent precedes its children (as scikit-learn numbers tree nodes). The nodes
    of one depth at once, each with the same arithmetic as node by node.
    """
    m = counts.shape[1]
    vectors = np.empty_like(counts)
    total = counts.sum(axis=1)
    for depth, nodes in enumerate(levels(parent)):
        if depth == 0:
            vectors[nodes] = (counts[nodes] + 0.5) / (total[nodes] + 0.5 * m)[:, None]
        else:
            vectors[nodes] = (counts[nodes] + smoothing * vectors[parent[nodes]]) / (total[nodes] + smoothing)[:, None]
    return vectors


def levels(parent: NDArray[np.int64]) -> list[NDArray[np.int64]]:
    """The nodes by depth, the roots (parent -1) first; a parent precedes its children in the numbering."""
    up = parent.tolist()
    depth = [0] * len(up)
    for v, u in enumerate(up):
        if u >= 0:
            depth[v] = depth[u] + 1
    d = np.asarray(depth, dtype=np.int64)
    order = np.argsort(d, kind="stable")
    return np.split(order, np.cumsum(np.bincount(d))[:-1])


def drift(p: FloatArray, q_counts: NDArray[np.float64], n_train: FloatArray | None = None) -> tuple[float, float]:
    """Eq. 3, sum_i T_i/T sum_j (q_ij - p_ij)^2 / m, and its expectation when nothing drifted.

    `p[i]` is cluster i's training vector, `q_counts[i]` its test jobs per bin, `n_train[i]` its training jobs
    (None: p exact). With no drift q_ij and p_ij are independent binomial proportions of one law, so
    E[(q_ij - p_ij)^2] = p_ij (1 - p_ij) (1 / T_i + 1 / N_i): the noise sums those terms with eq. 3's weights.
    """
    t_i = q_counts.sum(axis=1)
    total = float(t_i.sum())
    m = p.shape[1]
    if total == 0:
        return 0.0, 0.0
    seen = t_i > 0
    q = q_counts[seen] / t_i[seen, None]
    statistic = float(np.sum(t_i[seen] / total * ((q - p[seen]) ** 2).sum(axis=1) / m))
    inverse = 1.0 / t_i[seen] + (0.0 if n_train is None else 1.0 / np.maximum(n_train[seen], 1.0))
    noise = float(np.sum(t_i[seen] / total * (p[seen] * (1 - p[seen])).sum(axis=1) / m * inverse))
    return statistic, noise


@dataclass
class _Clusters:
    """A fitted clustering: job features -> node, and the per-node probability vectors over the bins."""

    edges: FloatArray
    atoms: FloatArray  # the support: within-bin quantiles, sharing their bin's probability equally
    atom_bin: NDArray[np.int64]
    vectors: FloatArray  # (nodes, bins)
    parent: NDArray[np.int64]
    model: Any  # a DecisionTreeRegressor, a (scaler mean, scale, GaussianMixture) tuple, or None
    n_train: FloatArray = field(default_factory=lambda: np.zeros(0))  # training jobs per node

    atom_probs: FloatArray = field(default_factory=lambda: np.zeros((0, 0)))  # vectors spread on the atoms
    walk: tuple[list[int], list[int], list[int], list[float]] | None = None  # the tree as lists, for `leaf`
    _lists: tuple[list[float], list[list[float]]] | None = None  # atoms and atom_probs as lists, once asked

    def spread(self) -> None:
        """Each node's law on the atoms: a bin's probability shared equally by the bin's atoms."""
        share = np.bincount(self.atom_bin, minlength=self.edges.size)[self.atom_bin]
        self.atom_probs = self.vectors[:, self.atom_bin] / share
        self._lists = None

    def lists(self) -> tuple[list[float], list[list[float]]]:
        """The atoms and each node's atom_probs as lists (for `capped_one`), made at the first law asked."""
        if self._lists is None:
            self._lists = (self.atoms.tolist(), self.atom_probs.tolist())
        return self._lists

    def leaf(self, x: list[float]) -> int:
        """`assign` of one job; a tree is walked in Python on the float32 features, as scikit-learn compares them."""
        if self.model is None or isinstance(self.model, tuple):
            return int(self.assign(np.array([x], dtype=np.float64))[0])
        if self.walk is None:
            tree = self.model.tree_
            self.walk = (tree.children_left.tolist(), tree.children_right.tolist(), tree.feature.tolist(),
                         tree.threshold.tolist())
        left, right, feature, threshold = self.walk
        z = array("f", x).tolist()  # float32, rounded as numpy's astype rounds
        v = 0
        while left[v] >= 0:
            v = left[v] if z[feature[v]] <= threshold[v] else right[v]
        return v

    def assign(self, x: NDArray[np.float64]) -> NDArray[np.int64]:
        if self.model is None:
            return np.zeros(x.shape[0], dtype=np.int64)
        if isinstance(self.model, tuple):
            mean, scale, gmm = self.model
            return np.asarray(gmm.predict((x - mean) / scale), dtype=np.int64) + 1
        return np.asarray(self.model.tree_.apply(x.astype(np.float32)), dtype=np.int64)


def _counts(nodes: NDArray[np.int64], bins: NDArray[np.int64], n_nodes: int, n_bins: int) -> NDArray[np.float64]:
    flat = np.bincount(nodes * n_bins + bins, minlength=n_nodes * n_bins)
    return flat.reshape(n_nodes, n_bins).astype(np.float64)


@dataclass
class LearnedPredictor:
    """The engine: `fit(table)` binds a trace, `observe(i)` learns a completion, `predict(indices)` answers."""

    config: LearnedConfig = field(default_factory=LearnedConfig)
    name: str = "learned"
    history: History | None = field(default=None, repr=False)
    stats: dict[str, float] = field(default_factory=dict)

    def fit(self, data: JobTable) -> Self:
        """Bind to a trace; nothing is known to have completed yet."""
        self.history = History(data)
        self._x = np.zeros((len(data), len(FEATURES)))  # row i: job i's features at its submission
        self._has_x = bytearray(len(data))  # 1 once row i of _x is stored
        self._laws: dict[tuple[int, int], Law] = {}  # (node, requested) -> law, until the vectors change
        self._clusters: _Clusters | None = None
        self._train: list[int] = []
        self._test: list[int] = []
        self._since_refit = 0
        self._fitted_on = 0  # completions when the model was last fitted
        self._rng = np.random.default_rng(self.config.seed)
        self.stats = {"refits": 0, "drift_checks": 0, "drift_updates": 0, "fit_s": 0.0}
        return self

    @property
    def _hist(self) -> History:
        if self.history is None:
            raise ValueError(f"predictor {self.name!r} must be fitted to a job table before use")
        return self.history

    # --- learning -------------------------------------------------------------------------------------
    def observe(self, index: int) -> None:
        """Job `index` completed: learn its runtime (its features are those it had at submission)."""
        hist = self._hist
        if not self._has_x[index]:
            self._store(index, features(hist, index))
        hist.observe(index)
        self._since_refit += 1
        if self._refit_due(len(hist.completed), self._since_refit):
            self.refit()
            return
        self._test.append(index)
        if self._clusters is not None and len(self._test) >= self.config.drift_every:  # no model: nothing drifts
            self._check_drift()

    def _refit_due(self, completed: int, since: int) -> bool:
        """Whether `observe` refits on the completion that brings the total to `completed`, `since` after the
        last refit: on the refit schedule, or every 10 completions below `min_train`."""
        cfg = self.config
        grown = cfg.refit_growth is not None and completed >= cfg.refit_growth * self._fitted_on
        due = completed >= cfg.min_train and (
            self._clusters is None or self._clusters.model is None or since >= cfg.refit_every or grown)
        return due or (completed < cfg.min_train and completed % 10 == 0)

    def next_learning(self) -> int:
        """How many more completions until `observe` learns (refits or checks drift): 1 when the next one does."""
        cfg = self.config
        done, since = len(self._hist.completed), self._since_refit
        first = max(1, cfg.min_train - done)  # the first completion at or above min_train
        steps = [] if self._clusters is None else [cfg.drift_every - len(self._test)]  # the drift check, once fitted
        if done + 10 - done % 10 < cfg.min_train:  # the next multiple of 10 below min_train
            steps.append(10 - done % 10)
        if self._clusters is None or self._clusters.model is None:
            steps.append(first)
        steps.append(max(first, cfg.refit_every - since))
        if cfg.refit_growth is not None:
            steps.append(max(first, math.ceil(cfg.refit_growth * self._fitted_on) - done))
        return min(steps)

    def observe_many(self, indices: Sequence[int]) -> None:
        """`observe` of each job in turn, when only the last may learn (at most `next_learning()` of them) and
        each one's features at submission are stored (as `predict_one` stores them)."""
        if not indices:
            return
        if len(indices) > self.next_learning():
            raise ValueError(f"{len(indices)} completions: observe learns after {self.next_learning()}")
        *quiet, last = indices
        if not all(self._has_x[i] for i in quiet):
            raise ValueError("observe_many needs each job's features at submission stored")
        hist = self._hist
        for i in quiet:
            hist.observe(i)
        self._since_refit += len(quiet)
        self._test.extend(quiet)
        self.observe(last)

    def _xy(self, indices: Sequence[int]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        x = self._x[np.asarray(indices, dtype=np.int64)]
        y = self._hist.table.runtime[np.asarray(indices, dtype=np.int64)].astype(np.float64)
        return x, y

    @property
    def fitted(self) -> bool:
        """Whether clusters (or, below `min_train` completions, the global histogram) have been fitted."""
        return self._clusters is not None

    @property
    def bin_edges(self) -> FloatArray | None:
        """The upper edges of the bins the laws are estimated on now (None until the first fit)."""
        return None if self._clusters is None else self._clusters.edges

    def refit(self) -> None:
        """Fit the clusters and their vectors on the training window now (`observe` calls it on its schedule)."""
        import time
        began = time.perf_counter()
        cfg = self.config
        self._train = list(self._hist.completed[-cfg.window:])
        self._test = []
        self._since_refit = 0
        self._fitted_on = len(self._hist.completed)
        x, y = self._xy(self._train)
        edges = check_edges(cfg.edges) if cfg.edges is not None else quantile_edges(y, cfg.bins)
        model: Any = None
        if len(self._train) >= cfg.min_train:
            model = self._grow(x, y)
        parent = self._parents(model)
        atoms, atom_bin = within_bin_atoms(y, edges, cfg.sub_atoms)
        self._clusters = _Clusters(edges, atoms, atom_bin, np.zeros((parent.size, edges.size)), parent, model)
        self._estimate(x, y)
        self.stats["refits"] += 1
        self.stats["fit_s"] += time.perf_counter() - began

    def _grow(self, x: NDArray[np.float64], y: NDArray[np.float64]) -> Any:
        cfg = self.config
        if cfg.clustering == "tree":
            from sklearn.tree import DecisionTreeRegressor
            tree = DecisionTreeRegressor(min_samples_leaf=cfg.min_leaf, max_leaf_nodes=cfg.max_leaves,
                                         random_state=cfg.seed)
            return tree.fit(x.astype(np.float32), np.log(y))
        from models.mixture_fit import gmm_by_bic
        mean, scale = x.mean(axis=0), x.std(axis=0)
        scale[scale == 0] = 1.0
        z = (x - mean) / scale
        sample = z if z.shape[0] <= 3000 else z[self._rng.choice(z.shape[0], 3000, replace=False)]
        ks = range(1, min(cfg.max_components, sample.shape[0] // 10) + 1)
        best = gmm_by_bic(sample, ks, cfg.seed, 1e-3, covariance_type="diag")
        return (mean, scale, best[0])

    @staticmethod
    def _parents(model: Any) -> NDArray[np.int64]:
        """Node parents: the tree's own structure; mixture components hang off a global root (node 0)."""
        if model is None:
            return np.array([-1], dtype=np.int64)
        if isinstance(model, tuple):
            return np.array([-1] + [0] * model[2].n_components, dtype=np.int64)
        tree = model.tree_
        parent = np.full(tree.node_count, -1, dtype=np.int64)
        for children in (tree.children_left, tree.children_right):
            inner = np.flatnonzero(children >= 0)
            parent[children[inner]] = inner
        return parent

    def _estimate(self, x: NDArray[np.float64], y: NDArray[np.float64]) -> None:
        """Per-node bin counts (a job counts in its leaf and every ancestor), then the smoothed vectors."""
        c = self._clusters
        assert c is not None
        leaves = c.assign(x)
        counts = _counts(leaves, discretise(y, c.edges), c.parent.size, c.edges.size)
        if isinstance(c.model, tuple):
            counts[0] = counts[1:].sum(axis=0)
        else:
            for nodes in levels(c.parent)[:0:-1]:  # deepest first: whole counts, so any order adds exactly
                np.add.at(counts, c.parent[nodes], counts[nodes])
        c.vectors = smoothed_vectors(counts, c.parent, self.config.smoothing)
        c.spread()
        self._laws.clear()
        c.n_train = counts.sum(axis=1)

    def _check_drift(self) -> None:
        """Eq. 3 on the jobs completed since the last (re)estimation; above noise: the update policy."""
        c = self._clusters
        assert c is not None
        self.stats["drift_checks"] += 1
        x, y = self._xy(self._test)
        leaves = c.assign(x)
        q_counts = _counts(leaves, discretise(y, c.edges), c.parent.size, c.edges.size)
        used = np.unique(leaves)
        statistic, noise = drift(c.vectors[used], q_counts[used], c.n_train[used])
        if statistic > self.config.drift_factor * noise:
            self.stats["drift_updates"] += 1
            drop = set(self._rng.choice(len(self._train), min(len(self._test), len(self._train)), replace=False))
            self._train = [j for k, j in enumerate(self._train) if k not in drop] + self._test
            self._estimate(*self._xy(self._train))
        self._test = []

    # --- predicting -----------------------------------------------------------------------------------
    def predict(self, query: Sequence[int]) -> Discrete:
        """Each queried job's law: its cluster's vector spread on the bins' atoms, capped at its requested time."""
        hist = self._hist
        indices = [int(i) for i in query]
        for i in indices:
            self._store(i, features(hist, i))
        requested = hist.table.requested[np.asarray(indices, dtype=np.int64)].astype(np.float64)
        c = self._clusters
        if c is None:
            return Discrete.point(requested)
        return capped(c.atoms, c.atom_probs[c.assign(self._x[np.asarray(indices, dtype=np.int64)])], requested)

    def predict_one(self, index: int) -> Law:
        """`predict([index])` as a `Law` on atoms: the same numbers, computed once per (cluster, requested time)."""
        x = features(self._hist, index)
        self._store(index, x)
        return self._law(x, int(self._hist.table.requested[index]))

    def predict_submission(self, job: Submission) -> Law:
        """The law of a job outside the table, described by its submission fields, from the completions observed
        so far (nothing is stored: a query never changes what the predictor knows)."""
        return self._law(submission_features(self._hist, job), int(job.requested))

    def _law(self, x: list[float], requested: int) -> Law:
        c = self._clusters
        if c is None:
            return Law.atoms(np.array([float(requested)]), np.array([1.0]))
        key = (c.leaf(x), requested)
        law = self._laws.get(key)
        if law is None:
            atoms, rows = c.lists()
            law = self._laws[key] = capped_one(atoms, rows[key[0]], float(requested))
        return law

    def _store(self, index: int, x: list[float]) -> None:
        self._x[index] = x
        self._has_x[index] = 1


def capped(edges: FloatArray, vectors: FloatArray, requested: FloatArray) -> Discrete:
    """Laws on the atoms `edges`, with the mass at or above each job's requested time moved onto it."""
    support = np.unique(np.concatenate([edges[np.isfinite(edges)], requested]))
    n, m = vectors.shape
    below = edges[None, :] < requested[:, None]  # (n, atoms): atoms kept as they are
    cols = np.where(below, np.searchsorted(support, np.where(np.isfinite(edges), edges, 0.0))[None, :],
                    np.searchsorted(support, requested)[:, None])
    probs = np.zeros((n, support.size))
    np.add.at(probs, (np.repeat(np.arange(n), m), cols.ravel()), vectors.ravel())
    return Discrete(support, probs)


def capped_one(atoms: Sequence[float], probs: Sequence[float], requested: float) -> Law:
    """`capped` for one job: the atoms below the requested time keep their mass, the rest sums onto it (in plain
    Python on the atoms' and the probabilities' lists: one law per cluster and requested time, in the hot loop)."""
    k = bisect_left(atoms, requested)  # atoms[:k] < requested <= atoms[k:]; the top atom is +inf
    above = [a for a in atoms[k:-1] if a > requested]
    mass = 0.0
    for p in probs[k:]:  # left to right, as np.add.at accumulates it
        mass += p
    return Law.valid_atoms([*atoms[:k], requested, *above], [*probs[:k], mass, *[0.0] * len(above)])
