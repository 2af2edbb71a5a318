"""Capacity series: read one (wide CSV column or Azure VM type), scale it to a platform, fit the AR(1) + GMM model.

The fit (seed 003's prediction-error model, one step ahead): statsmodels AutoReg with one lag and a constant gives
mu and phi of C_t = mu + phi (C_{t-1} - mu) + e_t; a scikit-learn Gaussian mixture is fitted to the residuals e_t,
and its law is discretised component by component: `levels` points per component at its normal quantiles
(i + 1/2) / levels, each weighing the component's weight / levels, so a rare component (a capacity jump) keeps its
probability. That discrete law, shifted to mean zero (`centred`: the process's stationary mean is then the fitted
mean), is what the mechanism samples and the exact oracle enumerates (mechanism/capacity.py).
"""

from __future__ import annotations

import csv
import io
import math
import zlib
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import numpy as np

from mechanism.capacity import DEFAULT_QUANTILE, MAX_CAPACITY, CapacityModel
from mechanism.platform import Platform
from mechanism.validation import FieldError
from models.data import AZURE_CAPACITY_COLUMNS as LONG_COLUMNS
from models.data import read_text
from models.simulation import Workload

DEFAULT_LEVELS = 8  # points per mixture component
DEFAULT_COMPONENTS = 3
PERSISTENCE_LAGS = 8  # phi matches the autocorrelation over this many lags (1: one-step least squares)
CAPACITY_MODELS = ("fixed", "forecast")
MIN_COMPONENT_WEIGHT = 1e-6  # mixture components lighter than this are dropped (their weights would not be positive)
MIN_FIT_ROWS = 3
LEVEL_WEIGHTS = (0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5)  # the grid `fit_level_weight` chooses lam from
LEVEL_HORIZON = PERSISTENCE_LAGS  # its forecast error counts 1..this many steps ahead
HIGH_SDS = 5.0  # `high` reaches this many stationary standard deviations above the mean (at least the rows' maximum)
LevelWeight = float | str  # lam in [0, 1), or "fit" (chosen on the fit rows by `fit_level_weight`)
DEFAULT_LEVEL_WEIGHT: LevelWeight = "fit"  # a fitted model's level: chosen on its fit rows (docs/capacity-model.md)


@dataclass(frozen=True)
class CapacitySeries:
    """A capacity series as read (`raw`, in its own units) and its name."""

    name: str
    raw: np.ndarray  # float64

    def scaled(self, mean: float, scale: float | None = None, rows: int = 0) -> np.ndarray:
        """Whole nodes per round: raw * scale, rounded half up, with scale = mean / (the mean of the first `rows`
        rows, or of every row when rows = 0) unless given."""
        base = self.raw[:rows] if rows else self.raw
        factor = mean / float(base.mean()) if scale is None else scale
        return np.floor(self.raw * factor + 0.5).astype(np.int64)


def split_spec(spec: str) -> tuple[Path, str | None]:
    """PATH[:KEY]: the key follows the last colon unless the whole text names a file."""
    if Path(spec).is_file() or ":" not in spec:
        return Path(spec), None
    path, _, key = spec.rpartition(":")
    return Path(path), key or None


def read_series(spec: str) -> CapacitySeries:
    """The series of `PATH[:KEY]`: a VM type (Column1) of a long-format Azure file, or a column of a wide CSV.

    A wide CSV without KEY must have exactly one column besides a first time column; errors name the file, the
    key and what the file has.
    """
    path, key = split_spec(spec)
    try:
        rows = list(csv.reader(io.StringIO(read_text(path), newline="")))
    except OSError as exc:
        raise FieldError("capacity_series", spec, f"cannot read {path}: {exc.strerror or exc}") from None
    except (EOFError, UnicodeDecodeError, zlib.error) as exc:
        raise FieldError("capacity_series", spec, f"{path} is not a UTF-8 CSV or gzip CSV ({exc})") from None
    if len(rows) < 2:
        raise FieldError("capacity_series", spec, f"{path} has no data rows")
    header, body = rows[0], [r for r in rows[1:] if r]
    if tuple(header[:3]) == LONG_COLUMNS:
        types = sorted({r[1] for r in body})
        if key is None or key not in types:
            raise FieldError("capacity_series", spec, f"name a VM type of {path} after a colon, one of "
                             f"{', '.join(types)}")
        values = [r[2] for r in body if r[1] == key]
    else:
        columns = header[1:] if len(header) > 1 else header
        if key is None:
            if len(columns) != 1:
                raise FieldError("capacity_series", spec, f"{path} has columns {', '.join(columns)}: name one "
                                 "after a colon")
            key = columns[0]
        if key not in header:
            raise FieldError("capacity_series", spec, f"{path} has no column {key!r} (it has {', '.join(header)})")
        i = header.index(key)
        values = [r[i] for r in body]
    try:
        raw = np.array([float(v) for v in values], dtype=np.float64)
    except ValueError as exc:
        raise FieldError("capacity_series", spec, f"a value is not a number: {exc}") from None
    if raw.size < 3 or not np.all(np.isfinite(raw)) or float(raw.min()) < 0 or float(raw.mean()) <= 0:
        raise FieldError("capacity_series", spec, "needs at least 3 finite values >= 0 with a positive mean")
    return CapacitySeries(name=f"{path.name}:{key}", raw=raw)


def fit_capacity_model(capacity: np.ndarray, quantile: float = DEFAULT_QUANTILE, levels: int = DEFAULT_LEVELS,
                       components: int = DEFAULT_COMPONENTS, seed: int = 0,
                       persistence_lags: int = PERSISTENCE_LAGS) -> CapacityModel:
    """AR(1) + a Gaussian mixture of its residuals, discretised to `levels` points per component.

    persistence_lags = 1: mean and phi by statsmodels AutoReg (one-step least squares). Above 1: phi fits the
    autocorrelation over lags 1..persistence_lags (least squares of acf(k) - phi^k, statsmodels' acf), mean is the
    series' mean: the oracle forecasts up to S_m + D_m - 1 rounds ahead, and one-step least squares understates
    how long these series stay away from their mean.
    """
    import warnings

    from sklearn.mixture import GaussianMixture

    from models.forecast.ar import fit_ar1_ols

    y = np.asarray(capacity, dtype=np.float64)
    fit = fit_ar1_ols(y)
    phi = min(max(fit.phi, -0.99), 0.99)  # stationary by construction
    mean = min(max(fit.const / (1.0 - phi), float(y.min())), float(y.max()))
    resid = fit.resid
    if persistence_lags > 1:
        phi = persistence(y, persistence_lags)
        mean = float(y.mean())
        resid = (y[1:] - mean) - phi * (y[:-1] - mean)
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():  # a constant stretch has fewer distinct residuals than components: said below
        warnings.simplefilter("ignore", ConvergenceWarning)
        gmm = GaussianMixture(n_components=min(components, max(1, resid.size // 10)), random_state=seed).fit(
            resid.reshape(-1, 1))
    keep = gmm.weights_ > MIN_COMPONENT_WEIGHT  # a constant stretch leaves components of weight ~1e-17
    points, weights = discretise_mixture(gmm.weights_[keep] / gmm.weights_[keep].sum(), gmm.means_.ravel()[keep],
                                         np.sqrt(gmm.covariances_.ravel()[keep]), levels)
    points = centred(points, weights)  # the process settles at `mean` (its stationary mean is mean + E[e] / (1 - phi))
    return CapacityModel(mean=mean, phi=phi, errors=points, weights=weights, low=0,
                         high=upper_bound(y, mean, phi, np.asarray(points), np.asarray(weights)), quantile=quantile)


def centred(points: tuple[float, ...], weights: tuple[float, ...]) -> tuple[float, ...]:
    """The error law shifted to mean zero: points - sum_i w_i points_i.

    The AR(1)'s stationary mean is mean + E[e] / (1 - phi). The residuals of the persistence fit (phi from the
    autocorrelation, mean the rows' mean) do not average zero, and the mixture keeps their mean: on 2017 t7str's
    first week at C = 16 (phi = 0.98) E[e] = -0.03 moved the stationary mean 1.7 nodes below the fitted rows' mean.
    Centring the discretised law makes `mean` the process's stationary mean, as docs/model.md 10.1 states.
    """
    pts = np.asarray(points, dtype=np.float64)
    shift = math.fsum(p * w for p, w in zip(points, weights, strict=True))
    return tuple(float(x) for x in pts - shift)


def upper_bound(y: np.ndarray, mean: float, phi: float, errors: np.ndarray, weights: np.ndarray) -> int:
    """`high`: max(rows' maximum, ceil(mean + HIGH_SDS sd)), sd the stationary standard deviation of the AR(1),
    sqrt(Var e / (1 - phi^2)). The rows' maximum alone would clamp every later capacity above it, though a
    stationary process exceeds the maximum of one stretch in the next about half the time."""
    var_e = float(weights @ errors**2 - (weights @ errors) ** 2)
    sd = math.sqrt(max(var_e, 0.0) / (1.0 - phi * phi))
    return max(int(y.max()), min(math.ceil(mean + HIGH_SDS * sd - 1e-9), MAX_CAPACITY))


def level_path(y: np.ndarray, mean: float, lam: float) -> np.ndarray:
    """mu[t] for t = 0..n: mu_0 = mean, mu_t = (1 - lam) mu_{t-1} + lam y_{t-1} (the engine's level, unclamped:
    every y lies in [low, high] on the fit rows)."""
    mu = np.empty(y.size + 1, dtype=np.float64)
    mu[0] = mean
    for t in range(1, y.size + 1):
        mu[t] = (1.0 - lam) * mu[t - 1] + lam * y[t - 1]
    return mu


def level_forecast_error(y: np.ndarray, mean: float, phi: float, lam: float, horizon: int = LEVEL_HORIZON) -> float:
    """Mean squared error of the k-step forecasts, k = 1..horizon, from every origin t >= 1 of the rows:
    C_{t-1+k} is forecast as mu_t + phi^k (y_{t-1} - mu_t), the AR(1)'s conditional mean about the level mu_t."""
    mu = level_path(y, mean, lam)
    err = 0.0
    count = 0
    for k in range(1, horizon + 1):
        t = np.arange(1, y.size - k + 1)  # origins whose target y_{t-1+k} exists
        if t.size == 0:
            break
        forecast = mu[t] + phi**k * (y[t - 1] - mu[t])
        err += float(np.sum((y[t - 1 + k] - forecast) ** 2))
        count += t.size
    return err / count if count else 0.0


def fit_level_weight(y: np.ndarray, phi: float, grid: tuple[float, ...] = LEVEL_WEIGHTS) -> float:
    """lam of the grid with the least `level_forecast_error` on the second half of the rows, the level starting
    there at the first half's mean (the held-out protocol inside the fit rows: scored in-sample, the rows' own mean
    would always win); the smallest lam on a tie."""
    y = np.asarray(y, dtype=np.float64)
    half = y.size // 2
    if half < 1 or y.size - half < 2:
        return 0.0
    errors = [level_forecast_error(y[half:], float(y[:half].mean()), phi, lam) for lam in grid]
    return grid[int(np.argmin(errors))]


def persistence(y: np.ndarray, lags: int) -> float:
    """phi in [0, 0.99] minimising sum_{k=1..lags} (acf(k) - phi^k)^2 (bounded scalar minimisation)."""
    import warnings

    from scipy.optimize import minimize_scalar
    from statsmodels.tsa.stattools import acf

    if float(y.std()) == 0.0:
        return 0.0
    lags = min(lags, y.size - 1)  # acf has no lag beyond the series
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rho = acf(y, nlags=lags, fft=False)[1:]
    k = np.arange(1, lags + 1)
    res = minimize_scalar(lambda phi: float(np.sum((rho - phi**k) ** 2)), bounds=(0.0, 0.99), method="bounded",
                          options={"xatol": 1e-10})
    return float(res.x)


def discretise_mixture(weights: np.ndarray, means: np.ndarray, sds: np.ndarray,
                       levels: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Per component k, `levels` points mean_k + sd_k z_i (z_i the standard normal quantile of (i + 1/2) / levels),
    each of weight w_k / levels; sorted, the weights summing to exactly 1."""
    from scipy.special import ndtri

    z = ndtri((np.arange(levels) + 0.5) / levels)
    pts = (means[:, None] + sds[:, None] * z[None, :]).ravel()
    wts = np.repeat(weights / levels, levels)
    order = np.argsort(pts, kind="stable")
    w = [float(x) for x in wts[order]]
    w[-1] = 1.0 - math.fsum(w[:-1])
    return tuple(float(x) for x in pts[order]), tuple(w)


def with_capacity(workload: Workload, spec: str, model: str, scale: float | None = None,
                  quantile: float = DEFAULT_QUANTILE, start: int = 0, fit_rows: int = 0,
                  level_weight: LevelWeight = DEFAULT_LEVEL_WEIGHT, price_floor: bool = False,
                  replay_fit_rows: bool = False) -> Workload:
    """The workload with realized capacity from the series, and with `forecast` the model fitted to it.

    fit_rows = 0 (in-sample): the model is fitted to the whole scaled series, and round t < n is row
    (start + t) mod n. fit_rows = F > 0 (held out): the scale makes the mean of rows [0, F) equal C, the model is
    fitted to those rows only, and round t < n - F is row F + (start + t) mod (n - F), so the run plays rows the
    fit never saw. Past those rounds the last capacity stays (the engine's rule for rounds without a report).
    `fixed` keeps C (the series' mean, over the same rows the scale uses) in the oracle and prices, and drops a
    capacity model the workload already had (a W.json written by a forecast run). level_weight and price_floor: as
    `fitted_model` (forecast only). replay_fit_rows: the run plays the rows the model was fitted on instead (round
    t is row (start + t) mod F), as `models/capacity_tune.py` does to choose q before the played rows exist.
    """
    if model not in CAPACITY_MODELS:
        raise FieldError("capacity_model", model, f"not one of {', '.join(CAPACITY_MODELS)}")
    check_level_weight(level_weight)
    platform: Platform = workload.platform
    fitted_rows, played = scaled_rows(spec, platform.C, scale, fit_rows)
    if model == "forecast":
        fitted = fitted_model(fitted_rows, platform.C, quantile, level_weight, price_floor)
        platform = Platform.model_validate({**platform.model_dump(), "capacity": fitted.model_dump()})
    elif platform.capacity is not None:
        platform = Platform.model_validate({k: v for k, v in platform.model_dump().items() if k != "capacity"})
    rows = fitted_rows if replay_fit_rows else played
    rolled = np.roll(rows, -(start % rows.size))
    return replace(workload, platform=platform, capacity=tuple(int(c) for c in rolled))


def check_level_weight(level_weight: LevelWeight) -> None:
    """Raise FieldError unless `level_weight` is a number in [0, 1) or "fit"."""
    if isinstance(level_weight, str) and level_weight != "fit":
        raise FieldError("capacity_level_weight", level_weight, "neither a number in [0, 1) nor 'fit'")
    if not isinstance(level_weight, str) and not 0.0 <= level_weight < 1.0:
        raise FieldError("capacity_level_weight", level_weight, "outside [0, 1)")


def scaled_rows(spec: str, C: int, scale: float | None = None, fit_rows: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The series in nodes (`CapacitySeries.scaled`) split into the rows a model is fitted on and the rows a run
    plays: rows [0, F) and [F, n) when fit_rows = F > 0, the whole series twice when F = 0."""
    series = read_series(spec)
    if fit_rows and not MIN_FIT_ROWS <= fit_rows < series.raw.size:
        raise FieldError("capacity_fit_rows", fit_rows, f"{spec} has {series.raw.size} rows; fit on "
                         f"{MIN_FIT_ROWS} to {series.raw.size - 1} of them")
    if fit_rows and float(series.raw[:fit_rows].mean()) <= 0.0 and scale is None:
        raise FieldError("capacity_fit_rows", fit_rows, f"the first {fit_rows} rows of {spec} average 0")
    capacity = series.scaled(C, scale, fit_rows)
    if int(capacity.max()) < 1:
        raise FieldError("capacity_series", spec, f"scaled by {scale} it has no round with a node")
    return (capacity[:fit_rows], capacity[fit_rows:]) if fit_rows else (capacity, capacity)


def fitted_model(rows: np.ndarray, C: int, quantile: float = DEFAULT_QUANTILE,
                 level_weight: LevelWeight = DEFAULT_LEVEL_WEIGHT, price_floor: bool = False) -> CapacityModel:
    """The capacity model of a platform of nominal capacity C fitted to `rows` (in nodes): `fit_capacity_model`;
    level_weight lam > 0 makes its mean track the feed, "fit" chooses lam on the rows (`fit_level_weight`), 0 is
    the fixed mean; price_floor: the prices' capacity quantile is at least C (`CapacityModel.price_floor`)."""
    check_level_weight(level_weight)
    key = tuple(int(c) for c in rows)
    fitted = _fit_cached(key, quantile)
    lam = _fit_level_cached(key, fitted.phi) if level_weight == "fit" else float(level_weight)
    if lam or price_floor:
        fitted = CapacityModel.model_validate({**fitted.model_dump(), "level_weight": lam,
                                               "price_floor": float(C) if price_floor else 0.0})
    return fitted


@lru_cache(maxsize=32)
def _fit_cached(capacity: tuple[int, ...], quantile: float) -> CapacityModel:
    return fit_capacity_model(np.array(capacity, dtype=np.int64), quantile=quantile)


@lru_cache(maxsize=32)
def _fit_level_cached(capacity: tuple[int, ...], phi: float) -> float:
    return fit_level_weight(np.array(capacity, dtype=np.float64), phi)
