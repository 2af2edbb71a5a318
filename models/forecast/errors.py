"""Residual (error) models: the law of a forecaster's standardised error, turned into a predictive law.

A forecaster gives a location mu and a scale sigma per step; an error model fitted on standardised
residuals z = (y - mu) / sigma gives the predictive law of y = mu + sigma Z.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Self

import numpy as np
from scipy import stats

from models.arrays import FloatArray
from models.forecast.names import ERROR_MODELS
from models.mixture_fit import gmm_by_bic
from models.predictive import Empirical, Mixture, Normal, Predictive, SkewNormal


class ErrorModel(Protocol):
    """Fits on standardised residuals, then yields the law of mu + sigma Z for a batch of (mu, sigma)."""

    name: str

    def fit(self, z: FloatArray) -> Self: ...

    def law(self, loc: FloatArray, scale: FloatArray) -> Predictive: ...


def _finite(z: FloatArray, minimum: int, who: str) -> FloatArray:
    z = np.asarray(z, dtype=np.float64).ravel()
    if z.size < minimum or not np.all(np.isfinite(z)):
        raise ValueError(f"{who} needs at least {minimum} finite residuals, got {z.size}")
    return z


@dataclass
class NormalErrors:
    """Z ~ N(0, 1): the model's own Gaussian innovations (the forecaster's sigma is the whole story)."""

    name: str = "normal"

    def fit(self, z: FloatArray) -> Self:
        return self

    def law(self, loc: FloatArray, scale: FloatArray) -> Predictive:
        return Normal(loc, scale)


@dataclass
class SkewNormalErrors:
    """Z ~ skew-normal fitted by maximum likelihood (scipy.stats.skewnorm.fit) on the residuals."""

    name: str = "skewnorm"
    shape: float = 0.0
    z_loc: float = 0.0
    z_scale: float = 1.0

    def fit(self, z: FloatArray) -> Self:
        z = _finite(z, 3, "the skew-normal error model")
        self.shape, self.z_loc, self.z_scale = (float(v) for v in stats.skewnorm.fit(z))
        return self

    def law(self, loc: FloatArray, scale: FloatArray) -> Predictive:
        scale = np.maximum(np.asarray(scale, dtype=np.float64), 1e-12)
        return SkewNormal(loc + scale * self.z_loc, scale * self.z_scale, self.shape)


@dataclass
class EmpiricalErrors:
    """Z drawn from the residuals themselves (the bootstrap error model: quantiles are order statistics)."""

    name: str = "empirical"
    z: FloatArray = field(default_factory=lambda: np.zeros(1))

    def fit(self, z: FloatArray) -> Self:
        self.z = _finite(z, 1, "the empirical error model")
        return self

    def law(self, loc: FloatArray, scale: FloatArray) -> Predictive:
        return Empirical(loc, self.z, scale)


@dataclass
class GMMErrors:
    """Z ~ a Gaussian mixture (sklearn GaussianMixture), its number of components chosen by BIC (seed 003)."""

    name: str = "gmm"
    max_components: int = 4
    seed: int = 0
    weights: FloatArray = field(default_factory=lambda: np.ones(1))
    means: FloatArray = field(default_factory=lambda: np.zeros(1))
    sds: FloatArray = field(default_factory=lambda: np.ones(1))
    bic: dict[int, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.max_components < 1:
            raise ValueError(f"max_components={self.max_components} must be >= 1")

    def fit(self, z: FloatArray) -> Self:
        z = _finite(z, 2, "the GMM error model")
        ks = range(1, min(self.max_components, np.unique(z).size) + 1)
        best, self.bic = gmm_by_bic(z.reshape(-1, 1), ks, self.seed, 1e-6 * max(1.0, z.var()))
        self.weights = np.asarray(best.weights_, dtype=np.float64)
        self.weights = self.weights / self.weights.sum()
        self.means = np.asarray(best.means_, dtype=np.float64).ravel()
        self.sds = np.sqrt(np.asarray(best.covariances_, dtype=np.float64).ravel())
        return self

    @property
    def components(self) -> int:
        return int(self.weights.size)

    def law(self, loc: FloatArray, scale: FloatArray) -> Predictive:
        loc = np.atleast_1d(np.asarray(loc, dtype=np.float64))
        scale = np.maximum(np.broadcast_to(np.asarray(scale, dtype=np.float64), loc.shape), 1e-12)
        return Mixture(self.weights, loc[:, None] + scale[:, None] * self.means[None, :],
                       scale[:, None] * self.sds[None, :])


def make_errors(name: str, seed: int = 0) -> ErrorModel:
    """An unfitted error model by name."""
    if name == "normal":
        return NormalErrors()
    if name == "skewnorm":
        return SkewNormalErrors()
    if name == "empirical":
        return EmpiricalErrors()
    if name == "gmm":
        return GMMErrors(seed=seed)
    raise ValueError(f"residuals={name!r} is not one of {', '.join(ERROR_MODELS)}")
