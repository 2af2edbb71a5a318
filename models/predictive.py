"""One interface for everything that predicts: fit on history, then predict a batch of distributions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Self, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import ndtr, ndtri  # the standard normal's cdf and quantile (what scipy.stats.norm calls)

from models.arrays import FloatArray


def _skewnorm() -> Any:
    """scipy.stats.skewnorm, imported on first use: scipy.stats takes most of a server's start-up to import."""
    from scipy import stats

    return stats.skewnorm


@runtime_checkable
class Predictive(Protocol):
    """A batch of n univariate predictive distributions (one per job, per step ahead, ...)."""

    def __len__(self) -> int: ...

    def mean(self) -> FloatArray:
        """(n,) expected values."""
        ...

    def quantile(self, q: float) -> FloatArray:
        """(n,) the q-quantiles, 0 < q < 1 (for a discrete law the smallest x with F(x) >= q)."""
        ...

    def cdf(self, x: ArrayLike) -> FloatArray:
        """(n,) P(X_i <= x_i); x broadcasts against the batch."""
        ...

    def sample(self, size: int, rng: np.random.Generator) -> FloatArray:
        """(size, n) independent draws."""
        ...


@runtime_checkable
class Model(Protocol):
    """A predictor or forecaster: `fit` learns from history, `predict` answers a query with a distribution."""

    name: str

    def fit(self, data: Any) -> Self: ...

    def predict(self, query: Any) -> Predictive: ...


def _check_q(q: float) -> None:
    if not 0.0 < q < 1.0:
        raise ValueError(f"q={q!r} must lie strictly between 0 and 1")


@dataclass(frozen=True)
class Discrete:
    """Laws on one shared sorted support: probs[i, k] = P(X_i = support[k]). A point prediction is one-hot."""

    support: FloatArray
    probs: FloatArray

    def __post_init__(self) -> None:
        support = np.asarray(self.support, dtype=np.float64)
        probs = np.atleast_2d(np.asarray(self.probs, dtype=np.float64))
        if support.ndim != 1 or support.size == 0:
            raise ValueError(f"support must be a non-empty 1-d array, got shape {support.shape}")
        if np.any(np.diff(support) <= 0):
            raise ValueError("support must be strictly increasing")
        if probs.shape[1] != support.size:
            raise ValueError(f"probs has {probs.shape[1]} columns for a support of {support.size} values")
        if np.any(probs < 0) or np.any(np.abs(probs.sum(axis=1) - 1.0) > 1e-9 + 1e-5):  # np.allclose's bound
            raise ValueError("each row of probs must be non-negative and sum to 1")
        object.__setattr__(self, "support", support)
        object.__setattr__(self, "probs", probs)

    @classmethod
    def point(cls, values: ArrayLike) -> Discrete:
        """Degenerate laws: X_i = values[i] with probability 1."""
        v = np.asarray(values, dtype=np.float64).ravel()
        support, index = np.unique(v, return_inverse=True)
        probs = np.zeros((v.size, support.size))
        probs[np.arange(v.size), index] = 1.0
        return cls(support, probs)

    def __len__(self) -> int:
        return int(self.probs.shape[0])

    def mean(self) -> FloatArray:
        return np.asarray(self.probs @ self.support, dtype=np.float64)

    def cdf(self, x: ArrayLike) -> FloatArray:
        cum = np.cumsum(self.probs, axis=1)
        k = np.searchsorted(self.support, np.broadcast_to(np.asarray(x, dtype=np.float64), (len(self),)),
                            side="right")
        padded = np.concatenate([np.zeros((len(self), 1)), cum], axis=1)
        return np.asarray(np.minimum(padded[np.arange(len(self)), k], 1.0), dtype=np.float64)

    def quantile(self, q: float) -> FloatArray:
        _check_q(q)
        cum = np.cumsum(self.probs, axis=1)
        k = (cum < q - 1e-12).sum(axis=1)
        return self.support[np.minimum(k, self.support.size - 1)]

    def sample(self, size: int, rng: np.random.Generator) -> FloatArray:
        cum = np.cumsum(self.probs, axis=1)
        u = rng.random((size, len(self)))
        k = (u[:, :, None] > cum[None, :, :]).sum(axis=2)
        return self.support[np.minimum(k, self.support.size - 1)]


def mix(a: Discrete, b: Discrete, weight: ArrayLike) -> Discrete:
    """Row i: weight[i] a_i + (1 - weight[i]) b_i, on the union of the supports."""
    w = np.broadcast_to(np.asarray(weight, dtype=np.float64), (len(a),))[:, None]
    support = np.union1d(a.support, b.support)
    probs = np.zeros((len(a), support.size))
    probs[:, np.searchsorted(support, a.support)] += w * a.probs
    probs[:, np.searchsorted(support, b.support)] += (1.0 - w) * b.probs
    return Discrete(support, probs)


@dataclass(frozen=True)
class Normal:
    """X_i ~ N(loc_i, scale_i^2)."""

    loc: FloatArray
    scale: FloatArray

    def __post_init__(self) -> None:
        loc = np.atleast_1d(np.asarray(self.loc, dtype=np.float64))
        scale = np.broadcast_to(np.asarray(self.scale, dtype=np.float64), loc.shape).copy()
        if np.any(scale < 0) or not np.all(np.isfinite(scale)):
            raise ValueError("scale must be finite and non-negative")
        object.__setattr__(self, "loc", loc)
        object.__setattr__(self, "scale", scale)

    def __len__(self) -> int:
        return int(self.loc.size)

    def mean(self) -> FloatArray:
        return self.loc.copy()

    def cdf(self, x: ArrayLike) -> FloatArray:
        x = np.broadcast_to(np.asarray(x, dtype=np.float64), self.loc.shape)
        safe = np.where(self.scale > 0, self.scale, 1.0)
        return np.where(self.scale > 0, ndtr((x - self.loc) / safe), (x >= self.loc).astype(float))

    def quantile(self, q: float) -> FloatArray:
        _check_q(q)
        return np.asarray(self.loc + self.scale * ndtri(q), dtype=np.float64)

    def sample(self, size: int, rng: np.random.Generator) -> FloatArray:
        return self.loc + self.scale * rng.standard_normal((size, len(self)))


@dataclass(frozen=True)
class Empirical:
    """X_i = loc_i + scale_i E with E drawn from the residuals (a bootstrap error model, shared by the batch)."""

    loc: FloatArray
    residuals: FloatArray
    scale: FloatArray | float = 1.0

    def __post_init__(self) -> None:
        loc = np.atleast_1d(np.asarray(self.loc, dtype=np.float64))
        res = np.sort(np.asarray(self.residuals, dtype=np.float64).ravel())
        if res.size == 0 or not np.all(np.isfinite(res)):
            raise ValueError("residuals must be a non-empty set of finite numbers")
        scale = np.broadcast_to(np.asarray(self.scale, dtype=np.float64), loc.shape).copy()
        if np.any(scale < 0) or not np.all(np.isfinite(scale)):
            raise ValueError("scale must be finite and non-negative")
        object.__setattr__(self, "loc", loc)
        object.__setattr__(self, "residuals", res)
        object.__setattr__(self, "scale", scale)

    def __len__(self) -> int:
        return int(self.loc.size)

    def mean(self) -> FloatArray:
        return np.asarray(self.loc + self.scale * self.residuals.mean(), dtype=np.float64)

    def cdf(self, x: ArrayLike) -> FloatArray:
        x = np.broadcast_to(np.asarray(x, dtype=np.float64), self.loc.shape)
        scale = np.asarray(self.scale)
        safe = np.where(scale > 0, scale, 1.0)
        standard = np.searchsorted(self.residuals, (x - self.loc) / safe, side="right") / self.residuals.size
        return np.asarray(np.where(scale > 0, standard, (x >= self.loc).astype(float)), dtype=np.float64)

    def quantile(self, q: float) -> FloatArray:
        _check_q(q)
        k = int(np.ceil(q * self.residuals.size)) - 1
        return np.asarray(self.loc + self.scale * self.residuals[max(k, 0)], dtype=np.float64)

    def sample(self, size: int, rng: np.random.Generator) -> FloatArray:
        return self.loc + self.scale * rng.choice(self.residuals, size=(size, len(self)))


@dataclass(frozen=True)
class SkewNormal:
    """X_i ~ skew-normal(shape) with location loc_i and scale scale_i (scipy.stats.skewnorm's parameters)."""

    loc: FloatArray
    scale: FloatArray
    shape: float

    def __post_init__(self) -> None:
        loc = np.atleast_1d(np.asarray(self.loc, dtype=np.float64))
        scale = np.broadcast_to(np.asarray(self.scale, dtype=np.float64), loc.shape).copy()
        if np.any(scale <= 0) or not np.all(np.isfinite(scale)):
            raise ValueError("scale must be finite and positive")
        if not np.isfinite(self.shape):
            raise ValueError(f"shape={self.shape!r} must be finite")
        object.__setattr__(self, "loc", loc)
        object.__setattr__(self, "scale", scale)
        object.__setattr__(self, "shape", float(self.shape))

    def __len__(self) -> int:
        return int(self.loc.size)

    def mean(self) -> FloatArray:
        return np.asarray(_skewnorm().mean(self.shape, self.loc, self.scale), dtype=np.float64)

    def cdf(self, x: ArrayLike) -> FloatArray:
        x = np.broadcast_to(np.asarray(x, dtype=np.float64), self.loc.shape)
        return np.asarray(_skewnorm().cdf(x, self.shape, self.loc, self.scale), dtype=np.float64)

    def quantile(self, q: float) -> FloatArray:
        _check_q(q)
        return np.asarray(_skewnorm().ppf(q, self.shape, self.loc, self.scale), dtype=np.float64)

    def sample(self, size: int, rng: np.random.Generator) -> FloatArray:
        draws = _skewnorm().rvs(self.shape, size=(size, len(self)), random_state=rng)
        return np.asarray(self.loc + self.scale * draws, dtype=np.float64)


@dataclass(frozen=True)
class Mixture:
    """X_i ~ sum_k weights_k N(means[i, k], sds[i, k]^2): a Gaussian mixture per row, weights shared."""

    weights: FloatArray
    means: FloatArray
    sds: FloatArray

    def __post_init__(self) -> None:
        weights = np.asarray(self.weights, dtype=np.float64).ravel()
        means = np.atleast_2d(np.asarray(self.means, dtype=np.float64))
        sds = np.broadcast_to(np.asarray(self.sds, dtype=np.float64), means.shape).copy()
        if weights.size == 0 or means.shape[1] != weights.size:
            raise ValueError(f"means has {means.shape[1]} components for {weights.size} weights")
        if np.any(weights < 0) or not np.isclose(weights.sum(), 1.0, atol=1e-9):
            raise ValueError("weights must be non-negative and sum to 1")
        if np.any(sds <= 0) or not np.all(np.isfinite(sds)) or not np.all(np.isfinite(means)):
            raise ValueError("sds must be finite and positive, means finite")
        object.__setattr__(self, "weights", weights)
        object.__setattr__(self, "means", means)
        object.__setattr__(self, "sds", sds)

    def __len__(self) -> int:
        return int(self.means.shape[0])

    def mean(self) -> FloatArray:
        return np.asarray(self.means @ self.weights, dtype=np.float64)

    def cdf(self, x: ArrayLike) -> FloatArray:
        x = np.broadcast_to(np.asarray(x, dtype=np.float64), (len(self),))
        return np.asarray(ndtr((x[:, None] - self.means) / self.sds) @ self.weights, dtype=np.float64)

    def quantile(self, q: float) -> FloatArray:
        """Bisection on the monotone cdf, bracketed by the components' own q-quantiles, to 1e-10 relative."""
        _check_q(q)
        z = ndtri(q)
        lo = (self.means + z * self.sds).min(axis=1)
        hi = (self.means + z * self.sds).max(axis=1)
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            below = self.cdf(mid) < q
            lo = np.where(below, mid, lo)
            hi = np.where(below, hi, mid)
            if np.all(hi - lo <= 1e-10 * np.maximum(1.0, np.abs(hi))):
                break
        return np.asarray(0.5 * (lo + hi), dtype=np.float64)

    def sample(self, size: int, rng: np.random.Generator) -> FloatArray:
        k = rng.choice(self.weights.size, size=(size, len(self)), p=self.weights)
        rows = np.arange(len(self))[None, :]
        return np.asarray(self.means[rows, k] + self.sds[rows, k] * rng.standard_normal((size, len(self))),
                          dtype=np.float64)
