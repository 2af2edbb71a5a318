"""The forecaster interface: fit on a window-aggregated history, predict the law of the next window(s)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Self

import numpy as np

from models.arrays import FloatArray, IntArray
from models.forecast.errors import ErrorModel, NormalErrors
from models.forecast.series import Series
from models.predictive import Predictive


@dataclass(frozen=True)
class Ahead:
    """The query: forecast the `steps` windows right after `history` (marginal law of each)."""

    history: Series
    steps: int = 1

    def __post_init__(self) -> None:
        if self.steps < 1:
            raise ValueError(f"steps={self.steps} must be >= 1")


class Forecaster(ABC):
    """A `models.predictive.Model`: `fit(Series) -> Self`, `predict(Ahead) -> Predictive` (len = steps).

    `one_step(series, origins)` gives, with the fitted parameters and no refit, the law of y[t] given the
    windows before t for every t in origins: the vectorised path of offline evaluation.
    """

    name: str = "forecaster"
    min_history: int = 2
    learns: bool = True  # False: fit learns nothing from the data, so online refits equal offline

    @abstractmethod
    def fit(self, data: Series) -> Self: ...

    @abstractmethod
    def predict(self, query: Ahead) -> Predictive: ...

    def one_step(self, series: Series, origins: IntArray) -> Predictive:
        """Law of y[t] for t in origins (each from the windows before t); the generic path loops over predict."""
        laws = [self.predict(Ahead(series.head(int(t)), 1)) for t in self._check_origins(series, origins)]
        return stack(laws)

    def _check_origins(self, series: Series, origins: IntArray) -> IntArray:
        origins = np.asarray(origins, dtype=np.int64).ravel()
        if origins.size and (origins.min() < self.min_history or origins.max() > len(series)):
            raise ValueError(f"origins must lie in [{self.min_history}, {len(series)}] for {self.name}")
        return origins

    def _check_history(self, data: Series) -> None:
        if len(data) < self.min_history:
            raise ValueError(f"{self.name} needs at least {self.min_history} windows of history, got {len(data)}")


class LocationScale(Forecaster):
    """A forecaster whose law is mu + sigma Z: subclasses give (mu, sigma) and the residuals; Z from `errors`."""

    errors: ErrorModel

    def __init__(self, errors: ErrorModel | None = None) -> None:
        self.errors = errors if errors is not None else NormalErrors()

    @abstractmethod
    def location_scale(self, query: Ahead) -> tuple[FloatArray, FloatArray]:
        """(steps,) locations and scales of the next windows."""

    @abstractmethod
    def one_step_location_scale(self, series: Series, origins: IntArray) -> tuple[FloatArray, FloatArray]:
        """(len(origins),) one-step locations and scales, vectorised."""

    def predict(self, query: Ahead) -> Predictive:
        self._check_history(query.history)
        loc, scale = self.location_scale(query)
        return self.errors.law(loc, scale)

    def steps_location_scale(self, series: Series, origins: IntArray,
                             steps: int) -> tuple[FloatArray, FloatArray]:
        """(origins, steps) locations and scales of y[t .. t+steps-1] from the windows before each t.

        The generic path loops over `location_scale`; models with a closed form override it.
        """
        pairs = [self.location_scale(Ahead(series.head(int(t)), steps)) for t in origins]
        return np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])

    def steps_ahead(self, series: Series, origins: IntArray, steps: int) -> Predictive:
        """The laws of y[t + h], rows ordered origin-major (origin 0 steps 1..k, origin 1 ...)."""
        loc, scale = self.steps_location_scale(series, self._check_origins(series, origins), steps)
        return self.errors.law(loc.ravel(), scale.ravel())

    def one_step(self, series: Series, origins: IntArray) -> Predictive:
        loc, scale = self.one_step_location_scale(series, self._check_origins(series, origins))
        return self.errors.law(loc, scale)

    def _fit_errors(self, residuals: FloatArray, sigma: float) -> None:
        """Fit the error model on the standardised in-sample residuals."""
        z = np.asarray(residuals, dtype=np.float64)
        z = z[np.isfinite(z)] / max(sigma, 1e-12)
        self.errors.fit(z)


def stack(laws: list[Predictive]) -> Predictive:
    """One batch from laws of one kind sharing their shape parameters (Normal, SkewNormal, Mixture, ...)."""
    from models.predictive import Discrete, Empirical, Mixture, Normal, SkewNormal

    normals = [law for law in laws if isinstance(law, Normal)]
    if len(normals) == len(laws):
        return Normal(np.concatenate([n.loc for n in normals]), np.concatenate([n.scale for n in normals]))
    skews = [law for law in laws if isinstance(law, SkewNormal)]
    if len(skews) == len(laws) and len({s.shape for s in skews}) == 1:
        return SkewNormal(np.concatenate([s.loc for s in skews]), np.concatenate([s.scale for s in skews]),
                          skews[0].shape)
    mixtures = [law for law in laws if isinstance(law, Mixture)]
    if len(mixtures) == len(laws) and all(np.array_equal(m.weights, mixtures[0].weights) for m in mixtures):
        return Mixture(mixtures[0].weights, np.concatenate([m.means for m in mixtures]),
                       np.concatenate([m.sds for m in mixtures]))
    empiricals = [law for law in laws if isinstance(law, Empirical)]
    if len(empiricals) == len(laws) and all(np.array_equal(e.residuals, empiricals[0].residuals)
                                            for e in empiricals):
        return Empirical(np.concatenate([e.loc for e in empiricals]), empiricals[0].residuals,
                         np.concatenate([np.atleast_1d(e.scale) for e in empiricals]))
    discretes = [law for law in laws if isinstance(law, Discrete)]
    if len(discretes) == len(laws):
        support = np.unique(np.concatenate([d.support for d in discretes]))
        probs = np.zeros((sum(len(d) for d in discretes), support.size))
        row = 0
        for d in discretes:
            probs[row:row + len(d), np.searchsorted(support, d.support)] = d.probs
            row += len(d)
        return Discrete(support, probs)
    raise ValueError("cannot stack laws of different kinds or shape parameters")
