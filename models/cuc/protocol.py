"""The seed's protocol: the day split, the hourly samples with their generated jobs, and Alg. 2's capacity law.

A sample at origin o schedules the T hours [o, o + T) knowing the capacity before o. Alg. 2: the forecaster,
refitted at every origin on the `fit_window` hours before it, gives the point forecast F_o; its errors
delta_o' = a[o':o'+T] - F_o' at the `error_windows` latest inner origins o' <= o - T (all observed before o)
are standardised per step ahead h by their spread sigma_h, pooled, and fitted by a GMM (Z). With the
`newest` error set, step h instead takes the same number of errors from the newest origins o' with o' + h < o
(every error observed before o). The predicted law
of a_{o+h} is F_o[h] + kappa sigma_h Z, and the constraint is its p-quantile Ã = Φ^{-1}(p).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from models.arrays import FloatArray
from models.cuc.jobs import JobConfig, generate_jobs
from models.cuc.problem import Jobs

FORECASTERS = ("tsdec", "ar1")
ERROR_SETS = ("full", "newest")  # the law's errors: whole inner windows (o' + T <= o), or per step the newest seen
PERIOD = 24  # hours: the daily season of the capacity series
MIN_FIT = 2 * PERIOD + 2  # the classical decomposition needs two periods plus two hours


@dataclass(frozen=True)
class Split:
    """Hours of the series: [0, fit_hours) only for fitting; train origins from fit_hours for train_hours;
    test origins such that the scope [o, o + T) lies in the last test_hours; history = hours before o."""

    n_hours: int
    T: int = 24
    fit_hours: int = 120
    train_hours: int = 144
    test_hours: int = 48

    def __post_init__(self) -> None:
        if self.fit_hours < MIN_FIT + self.T:
            raise ValueError(f"fit_hours={self.fit_hours} must be >= {MIN_FIT + self.T} (a first error window)")
        if self.train_hours < 1:
            raise ValueError(f"train_hours={self.train_hours} must be >= 1 (a training origin)")
        if self.test_hours < self.T:
            raise ValueError(f"test_hours={self.test_hours} must be >= T={self.T}")
        need = self.fit_hours + self.train_hours + self.T + self.test_hours
        if self.n_hours < need:
            raise ValueError(f"the series has {self.n_hours} hours; the split needs at least {need}")

    @property
    def train_origins(self) -> range:
        """Days 6-11 of the seed: one sample per hour."""
        return range(self.fit_hours, self.fit_hours + self.train_hours)

    @property
    def test_origins(self) -> range:
        """Every origin whose scope lies inside the last test_hours (the seed's last 2 days)."""
        return range(self.n_hours - self.test_hours, self.n_hours - self.T + 1)


@dataclass(frozen=True)
class Sample:
    """One scheduling run: its origin, its generated jobs and the true capacity of its T hours."""

    origin: int
    jobs: Jobs
    truth: FloatArray


def make_samples(y: FloatArray, origins: range, T: int, config: JobConfig, seed: int) -> list[Sample]:
    """Jobs for each origin, drawn with the stream (seed, origin); their size follows the last day's capacity."""
    samples = []
    for o in origins:
        rng = np.random.default_rng([seed, o])
        reference = float(np.mean(y[max(0, o - PERIOD):o]))
        samples.append(Sample(o, generate_jobs(reference, T, config, rng), np.asarray(y[o:o + T])))
    return samples


def make_forecaster(name: str) -> object:
    """A fresh forecaster of models/forecast by name: TSDec (the seed's choice, classical decomposition) or AR1."""
    from models.forecast.ar import AR1
    from models.forecast.tsdec import TSDec

    if name == "tsdec":
        return TSDec(PERIOD, method="classical")
    if name == "ar1":
        return AR1(method="ols")
    raise ValueError(f"forecaster={name!r} is not one of {', '.join(FORECASTERS)}")


def point_forecast(y: FloatArray, origin: int, fit_window: int, T: int, forecaster: str) -> FloatArray:
    """F_o: the forecaster fitted on the fit_window hours before o (fewer near the start), mean of T steps."""
    from models.forecast.base import Ahead, Forecaster
    from models.forecast.series import Series

    begin = max(0, origin - fit_window)
    history = Series(y[begin:origin], start=begin)
    model = make_forecaster(forecaster)
    assert isinstance(model, Forecaster)
    with warnings.catch_warnings():  # statsmodels' chatter on short or flat windows: silenced at the source
        warnings.simplefilter("ignore")
        model.fit(history)
    return np.asarray(model.predict(Ahead(history, T)).mean(), dtype=np.float64)


@dataclass
class ForecastBank:
    """Point forecasts F_o per (forecaster, fit_window, origin), computed once and shared by every trial."""

    y: FloatArray
    T: int
    cache: dict[tuple[str, int, int], FloatArray] = field(default_factory=dict)

    def get(self, forecaster: str, fit_window: int, origin: int) -> FloatArray:
        key = (forecaster, fit_window, origin)
        if key not in self.cache:
            self.cache[key] = point_forecast(self.y, origin, fit_window, self.T, forecaster)
        return self.cache[key]

    def errors(self, forecaster: str, fit_window: int, origins: range) -> FloatArray:
        """(len(origins), T) delta_o' = a[o':o'+T] - F_o'."""
        return np.array([self.y[o:o + self.T] - self.get(forecaster, fit_window, o) for o in origins])

    def newest_errors(self, forecaster: str, fit_window: int, origin: int, error_windows: int) -> FloatArray:
        """(n, T): column h holds delta_o'[h] = a[o' + h] - F_o'[h] for the n newest o' with o' + h < origin, n the
        count of whole inner windows (`inner_origins`). Step h's error is observed once hour o' + h has passed,
        so short steps use origins up to o - 1 while step T - 1 uses the whole windows' o' <= o - T."""
        n = len(inner_origins(origin, error_windows, self.T))
        first = origin - self.T + 1 - n  # the oldest origin used (by step T - 1)
        forecasts = np.array([self.get(forecaster, fit_window, o) for o in range(first, origin)])
        rows = np.arange(n)[:, None] + (self.T - 1 - np.arange(self.T))[None, :]  # o' - first for (row, h)
        steps = np.broadcast_to(np.arange(self.T), rows.shape)
        return np.asarray(self.y[first + rows + steps] - forecasts[rows, steps], dtype=np.float64)


@dataclass(frozen=True)
class ErrorLaw:
    """Alg. 2 lines 3-6: per-step spreads sigma_h and the GMM Z of the standardised pooled errors."""

    sigma: FloatArray
    z_weights: FloatArray
    z_means: FloatArray
    z_sds: FloatArray

    def z_quantile(self, p: float) -> float:
        """Φ_Z^{-1}(p) of the fitted mixture."""
        from models.predictive import Mixture

        law = Mixture(self.z_weights, self.z_means[None, :], self.z_sds[None, :])
        return float(law.quantile(p)[0])


def inner_origins(origin: int, error_windows: int, T: int) -> range:
    """The latest error_windows origins o' with o' + T <= origin (their errors are known at o), o' >= MIN_FIT."""
    last = origin - T
    return range(max(MIN_FIT, last - error_windows + 1), last + 1)


def fit_error_law(deltas: FloatArray, components: int, seed: int) -> ErrorLaw:
    """sigma_h = the spread of step h's errors; Z = GMM (components by BIC, at most `components`) of delta/sigma.

    The GMM is scikit-learn's GaussianMixture chosen by BIC as in models.forecast.errors.GMMErrors, started
    from k-means++ seeds instead of a full k-means (the same fit, five times faster: CUC fits thousands)."""
    from sklearn.mixture import GaussianMixture

    if deltas.shape[0] < 2:
        raise ValueError(f"{deltas.shape[0]} error window(s): the error law needs at least 2")
    sigma = np.maximum(deltas.std(axis=0, ddof=1), 1e-9 * max(1.0, float(np.abs(deltas).max())))
    z = (deltas / sigma).reshape(-1, 1)
    best: GaussianMixture | None = None
    best_bic = np.inf
    for k in range(1, min(components, np.unique(z).size) + 1):
        gmm = GaussianMixture(n_components=k, random_state=seed, init_params="k-means++",
                              reg_covar=1e-6 * max(1.0, float(z.var()))).fit(z)
        bic = float(gmm.bic(z))
        if bic < best_bic:
            best, best_bic = gmm, bic
    assert best is not None
    weights = np.asarray(best.weights_, dtype=np.float64)
    return ErrorLaw(sigma, weights / weights.sum(), np.asarray(best.means_, dtype=np.float64).ravel(),
                    np.sqrt(np.asarray(best.covariances_, dtype=np.float64).ravel()))


def constraint(forecast: FloatArray, law: ErrorLaw | None, p: float, inflation: float) -> FloatArray:
    """Ã_h = F[h] + kappa sigma_h Φ_Z^{-1}(p), floored at 0; without an error law (no uncertainty) Ã = F."""
    if law is None:
        return np.maximum(forecast, 0.0)
    return np.maximum(forecast + inflation * law.sigma * law.z_quantile(p), 0.0)
