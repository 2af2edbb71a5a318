"""The seed's protocol: the day split, the hourly samples with their generated jobs, and Alg. 2's capacity law.

A sample at origin o schedules the T hours [o, o + T) knowing the capacity before o. Alg. 2: the forecaster,
refitted at every origin on the `fit_window` hours before it, gives the point forecast F_o; its errors
delta_o' = a[o':o'+T] - F_o' at the `error_windows` latest inner origins o' <= o - T (all observed before o)
are standardised per step ahead h by their spread sigma_h, pooled, and fitted by a GMM (Z). With the
`newest` error set, step h instead takes the same number of errors from the newest origins o' with o' + h < o
(every error observed before o). The predicted law
of a_{o+h} is F_o[h] + kappa sigma_h Z, and the constraint is its p-quantile Ã = Φ^{-1}(p).

The `moments` error set is the paper's published law: mu_h and sigma_h, the mean and standard deviation of step h's
errors over the training windows, fitted once and frozen, Z standard normal and kappa 1, so that
Ã_h = F_o[h] + mu_h + Φ^{-1}(p) sigma_h.

The `max` error set holds both at once (`MaxLaw`): per sample and step ahead the forecast is cut down by the larger
of the two cut-downs, the newest errors' law with θ's kappa and the moments law with kappa 1, so Ã_h is the smaller of
the two laws' Ã_h.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from models.arrays import FloatArray
from models.cuc.jobs import JobConfig, generate_jobs
from models.cuc.names import FORECASTERS, SPLITS
from models.cuc.problem import Jobs
from models.law import Law
from models.mixture_fit import gmm_by_bic

if TYPE_CHECKING:
    from models.forecast.registry import ModelSpec

PUBLISHED_TRAIN_SHARE = 0.75  # the published code: the first 75 % of the windows train
PERIOD = 24  # hours: the daily season of the capacity series
MIN_FIT = 2 * PERIOD + 2  # the classical decomposition needs two periods plus two hours


@dataclass(frozen=True)
class Split:
    """Hours of the series: [0, fit_hours) only for fitting; train origins from fit_hours for train_hours;
    test origins such that the scope [o, o + T) lies in the last test_hours; history = hours before o.

    `clean` (the default) leaves T hours between the training origins and the test hours, so no training target
    is a test hour. `published` (`Split.published`) is the paper's code: the first 75 % of the windows train and
    the rest test, back to back, so the first T - 1 test scopes overlap the training samples' targets."""

    n_hours: int
    T: int = 24
    fit_hours: int = 120
    train_hours: int = 144
    test_hours: int = 48
    layout: str = "clean"

    def __post_init__(self) -> None:
        if self.layout not in SPLITS:
            raise ValueError(f"split={self.layout!r} is not one of {', '.join(SPLITS)}")
        if self.fit_hours < MIN_FIT + self.T:
            raise ValueError(f"fit_hours={self.fit_hours} must be >= {MIN_FIT + self.T} (a first error window)")
        if self.train_hours < 1:
            raise ValueError(f"train_hours={self.train_hours} must be >= 1 (a training origin)")
        if self.test_hours < self.T:
            raise ValueError(f"test_hours={self.test_hours} must be >= T={self.T}")
        need = self.fit_hours + self.train_hours + self.test_hours + (self.T if self.layout == "clean" else 0)
        if self.n_hours < need:
            raise ValueError(f"the series has {self.n_hours} hours; the split needs at least {need}")

    @classmethod
    def published(cls, n_hours: int, T: int = 24, fit_hours: int = 120) -> Split:
        """The published code's split: every origin with fit_hours of history and a whole scope is a window; the
        first 75 % (rounded down) train, the rest test."""
        windows = n_hours - fit_hours - T + 1
        train = int(PUBLISHED_TRAIN_SHARE * windows)
        if windows < 2 or train < 1:
            raise ValueError(f"the series has {n_hours} hours; the published split needs at least "
                             f"{fit_hours + T + 1}")
        return cls(n_hours, T, fit_hours, train, n_hours - fit_hours - train, "published")

    @property
    def train_origins(self) -> range:
        """Days 6-11 of the seed: one sample per hour."""
        return range(self.fit_hours, self.fit_hours + self.train_hours)

    @property
    def test_origins(self) -> range:
        """Every origin whose scope lies inside the last test_hours (the seed's last 2 days)."""
        return range(self.n_hours - self.test_hours, self.n_hours - self.T + 1)

    def validation_origins(self, hours: int) -> range:
        """The last `hours` training origins: BO's validation samples (every training origin when hours = 0)."""
        if not 0 <= hours < self.train_hours:
            raise ValueError(f"validation_hours={hours} must lie in [0, train_hours={self.train_hours})")
        origins = self.train_origins
        return origins if hours == 0 else origins[-hours:]


def make_split(n_hours: int, layout: str = "clean", train_hours: int | None = None) -> Split:
    """The clean split (train_hours training origins, default 144: days 6-11) or the published one (train_hours
    not given: the published code fixes it at 75 % of the windows)."""
    if layout == "published":
        if train_hours is not None:
            raise ValueError(f"train_hours={train_hours}: the published split fixes it (75 % of the windows)")
        return Split.published(n_hours)
    if layout != "clean":
        raise ValueError(f"split={layout!r} is not one of {', '.join(SPLITS)}")
    return Split(n_hours) if train_hours is None else Split(n_hours, train_hours=train_hours)


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


FORECAST_SPECS = {"tsdec": {"decomposition": "classical"}, "ar1": {"fit": "ols"}}  # the seed's TSDec; AR(1) by OLS


def forecaster_spec(name: str) -> ModelSpec:
    """CUC's point forecasters in models/forecast's registry: TSDec with a classical decomposition, or an AR(1)."""
    if name not in FORECASTERS:
        raise ValueError(f"forecaster={name!r} is not one of {', '.join(FORECASTERS)}")
    from models.forecast.registry import ModelSpec

    return ModelSpec(name, **FORECAST_SPECS[name])  # type: ignore[arg-type]


def point_forecast(y: FloatArray, origin: int, fit_window: int, T: int, forecaster: str) -> FloatArray:
    """F_o: the forecaster fitted on the fit_window hours before o (fewer near the start), mean of T steps."""
    from models.forecast.base import Ahead
    from models.forecast.series import Series

    begin = max(0, origin - fit_window)
    history = Series(y[begin:origin], start=begin)
    model = forecaster_spec(forecaster).build(60)  # hourly series: a daily period of 24
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


def inner_origins(origin: int, error_windows: int, T: int) -> range:
    """The latest error_windows origins o' with o' + T <= origin (their errors are known at o), o' >= MIN_FIT."""
    last = origin - T
    return range(max(MIN_FIT, last - error_windows + 1), last + 1)


def fit_error_law(deltas: FloatArray, components: int, seed: int) -> Law:
    """Alg. 2 lines 3-6: the `Law` a_{o+h} - F_o[h] ~ sigma_h Z (loc 0): sigma_h the spread of step h's errors,
    Z the GMM (components by BIC, at most `components`) of the standardised pooled errors delta/sigma, which carries
    the errors' mean.

    The GMM is scikit-learn's GaussianMixture chosen by BIC (models.mixture_fit), started from k-means++ seeds
    instead of a full k-means (the same fit, five times faster: CUC fits thousands)."""
    if deltas.shape[0] < 2:
        raise ValueError(f"{deltas.shape[0]} error window(s): the error law needs at least 2")
    sigma = np.maximum(deltas.std(axis=0, ddof=1), 1e-9 * max(1.0, float(np.abs(deltas).max())))
    z = (deltas / sigma).reshape(-1, 1)
    ks = range(1, min(components, np.unique(z).size) + 1)
    best, _ = gmm_by_bic(z, ks, seed, 1e-6 * max(1.0, float(z.var())), init_params="k-means++")
    weights = np.asarray(best.weights_, dtype=np.float64)
    return Law.mixture(weights / weights.sum(), np.asarray(best.means_, dtype=np.float64).ravel(),
                       np.sqrt(np.asarray(best.covariances_, dtype=np.float64).ravel()), np.zeros_like(sigma), sigma)


def fit_moments_law(deltas: FloatArray) -> Law:
    """The published law: mu_h and sigma_h, the mean and standard deviation (ddof 1) of step h's errors over
    every window given, with Z standard normal: a_{o+h} ~ F_o[h] + mu_h + sigma_h Z."""
    if deltas.shape[0] < 2:
        raise ValueError(f"{deltas.shape[0]} error window(s): the moments law needs at least 2")
    sigma = np.maximum(deltas.std(axis=0, ddof=1), 1e-9 * max(1.0, float(np.abs(deltas).max())))
    one = np.ones(1)
    return Law.mixture(one, np.zeros(1), one, np.asarray(deltas.mean(axis=0), dtype=np.float64), sigma)


@dataclass(frozen=True)
class MaxLaw:
    """The `max` error set: the newest errors' law (kappa from θ) and the moments law (kappa 1) of one sample,
    whose cut-downs combine by their elementwise maximum (a conservative union of the two)."""

    newest: Law
    moments: Law

    def __post_init__(self) -> None:
        if len(self.newest) != len(self.moments):
            raise ValueError(f"the newest law has {len(self.newest)} steps and the moments law "
                             f"{len(self.moments)}: both must cover the same T")


def cut_down(law: Law | MaxLaw, p: float, inflation: float) -> FloatArray:
    """(T,) what Alg. 2 takes off the forecast at level p: -(mu_h + kappa sigma_h Φ_Z^{-1}(p)) for one law; for a
    `MaxLaw`, per step the larger of the newest law's (kappa = `inflation`) and the moments law's (kappa = 1)."""
    if isinstance(law, MaxLaw):
        return np.maximum(cut_down(law.newest, p, inflation), cut_down(law.moments, p, 1.0))
    return -(law.loc + inflation * law.scale * law.z_quantile(p))


def constraint(forecast: FloatArray, law: Law | MaxLaw | None, p: float, inflation: float) -> FloatArray:
    """Ã_h = F[h] - cut_h (`cut_down`: F[h] + mu_h + kappa sigma_h Φ_Z^{-1}(p) for one law), floored at 0; without an
    error law (no uncertainty) Ã = F."""
    if law is None:
        return np.maximum(forecast, 0.0)
    return np.maximum(forecast - cut_down(law, p, inflation), 0.0)
