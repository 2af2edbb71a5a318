"""AR1, AR1X (the previous window's average as regressor) and ARI11, fitted by statsmodels (seed 004 1.4)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Self

import numpy as np

from models.arrays import FloatArray, IntArray
from models.forecast.base import Ahead, LocationScale
from models.forecast.errors import ErrorModel, NormalErrors
from models.forecast.names import FIT_METHODS
from models.forecast.rolling import rolling_ols
from models.forecast.series import Series
from models.predictive import Normal, Predictive


def _arima(y: FloatArray, order: tuple[int, int, int], exog: FloatArray | None = None) -> Any:
    """statsmodels ARIMA by exact Gaussian maximum likelihood (R's arima CSS-ML gives the same optimum)."""
    from statsmodels.tsa.arima.model import ARIMA

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trend = "c" if order[1] == 0 else "n"
        return ARIMA(y, exog=exog, order=order, trend=trend).fit()


@dataclass(frozen=True)
class AR1Fit:
    """y_t = const + phi y_{t-1} + e_t by conditional least squares; resid[t-1] = e_t, sigma2 = mean(resid^2)."""

    const: float
    phi: float
    sigma2: float
    resid: FloatArray

    def mean(self, unit_root: float) -> float:
        """const / (1 - phi), the process's stationary mean; `unit_root` when phi is 1."""
        return self.const / (1.0 - self.phi) if abs(1.0 - self.phi) > 1e-9 else unit_root


def fit_ar1_ols(y: FloatArray) -> AR1Fit:
    """The one AR(1) least-squares fit (statsmodels AutoReg, lags=1, trend="c"), for AR1 and the capacity model."""
    from statsmodels.tsa.ar_model import AutoReg

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = AutoReg(np.asarray(y, dtype=np.float64), lags=1, trend="c").fit()
    const, phi = (float(v) for v in res.params)
    return AR1Fit(const=const, phi=phi, sigma2=float(res.sigma2), resid=np.asarray(res.resid, dtype=np.float64))


def _ar_variance(phi: float, sigma2: float, steps: int) -> FloatArray:
    """Var(y_{n+h} | y_n) = sigma2 sum_{j<h} phi^{2j}, h = 1..steps."""
    return np.asarray(sigma2 * np.cumsum(phi ** (2 * np.arange(steps))), dtype=np.float64)


class AR1(LocationScale):
    """(y_t - mu) = phi (y_{t-1} - mu) + e_t, e_t = sigma Z_t."""

    name = "ar1"
    min_history = 1

    def __init__(self, errors: ErrorModel | None = None, method: str = "mle") -> None:
        super().__init__(errors)
        if method not in FIT_METHODS:
            raise ValueError(f"method={method!r} is not one of {', '.join(FIT_METHODS)}")
        self.method = method
        self.mu = 0.0
        self.phi = 0.0
        self.sigma2 = 1.0

    def fit(self, data: Series) -> Self:
        if len(data) < 4:
            raise ValueError(f"ar1 needs at least 4 windows to fit, got {len(data)}")
        y = data.y
        if np.ptp(y) == 0:
            self.mu, self.phi, self.sigma2 = float(y[0]), 0.0, 1e-12
            self._fit_errors(np.zeros(2), 1.0)
            return self
        if self.method == "mle":
            res = _arima(y, (1, 0, 0))
            self.mu, self.phi, self.sigma2 = (float(v) for v in res.params[:3])
            resid = np.asarray(res.resid)[1:]
        else:
            fit = fit_ar1_ols(y)
            self.phi, self.sigma2 = fit.phi, fit.sigma2
            self.mu = fit.mean(unit_root=float(y.mean()))
            resid = fit.resid
        self.sigma2 = max(self.sigma2, 1e-12)
        self._fit_errors(resid, float(np.sqrt(self.sigma2)))
        return self

    def rolling_one_step(self, series: Series, origins: IntArray, begins: IntArray,
                         ends: IntArray) -> Predictive | None:
        """Refit on windows [begins[i], ends[i]) and forecast y[origins[i]], all at once (ols, normal only).

        Conditional least squares of y_i on (1, y_{i-1}) from cumulative sums of the lag pairs: the same
        estimates as statsmodels AutoReg on each slice. None when no closed form applies (mle, other errors).
        """
        if self.method != "ols" or not isinstance(self.errors, NormalErrors):
            return None
        if np.any(ends - begins < 4) or np.any(ends > origins):
            raise ValueError("ar1 needs at least 4 windows to fit, each before the window it forecasts")
        y = series.y
        # rows j = 1..n-1 regress y_j on (1, y_{j-1}); window [b, e) of windows holds rows b+1 .. e-1
        design = np.column_stack([np.ones(y.size - 1), y[:-1]])
        fit = rolling_ols(design, y[1:], begins, ends - 1)
        loc = fit.beta[:, 0] + fit.beta[:, 1] * y[origins - 1]
        return Normal(loc, np.sqrt(np.maximum(fit.ssr / fit.n, 1e-12)))

    def location_scale(self, query: Ahead) -> tuple[FloatArray, FloatArray]:
        h = np.arange(1, query.steps + 1)
        loc = self.mu + self.phi ** h * (query.history.y[-1] - self.mu)
        return loc, np.sqrt(_ar_variance(self.phi, self.sigma2, query.steps))

    def one_step_location_scale(self, series: Series, origins: IntArray) -> tuple[FloatArray, FloatArray]:
        loc = self.mu + self.phi * (series.y[origins - 1] - self.mu)
        return loc, np.full(origins.size, np.sqrt(self.sigma2))

    def steps_location_scale(self, series: Series, origins: IntArray,
                             steps: int) -> tuple[FloatArray, FloatArray]:
        h = np.arange(1, steps + 1)
        loc = self.mu + self.phi ** h[None, :] * (series.y[origins - 1, None] - self.mu)
        scale = np.sqrt(_ar_variance(self.phi, self.sigma2, steps))
        return loc, np.broadcast_to(scale, loc.shape).copy()


class AR1X(LocationScale):
    """Regression with AR(1) errors (R's arima with xreg): y_t = c + b x_{t-1} + n_t, n_t = phi n_{t-1} + e_t.

    x is the window average, lagged one window so that it is known when y_t is forecast. Beyond one step the
    average is held at its last value.
    """

    name = "ar1x"
    min_history = 2

    def __init__(self, errors: ErrorModel | None = None) -> None:
        super().__init__(errors)
        self.c = 0.0
        self.b = 0.0
        self.phi = 0.0
        self.sigma2 = 1.0

    def fit(self, data: Series) -> Self:
        if len(data) < 5:
            raise ValueError(f"ar1x needs at least 5 windows to fit, got {len(data)}")
        x = data.require_x(self.name)
        y, exog = data.y[1:], x[:-1]
        if np.ptp(y) == 0 or np.ptp(exog) == 0:
            raise ValueError("ar1x cannot fit a constant max or average series")
        res = _arima(y, (1, 0, 0), exog)
        self.c, self.b, self.phi, self.sigma2 = (float(v) for v in res.params[:4])
        self.sigma2 = max(self.sigma2, 1e-12)
        self._fit_errors(np.asarray(res.resid)[1:], float(np.sqrt(self.sigma2)))
        return self

    def _noise(self, y: FloatArray, x_before: FloatArray) -> FloatArray:
        return np.asarray(y - self.c - self.b * x_before, dtype=np.float64)

    def location_scale(self, query: Ahead) -> tuple[FloatArray, FloatArray]:
        hist = query.history
        x = hist.require_x(self.name)
        n_last = self._noise(hist.y[-1], x[-2])
        h = np.arange(1, query.steps + 1)
        loc = self.c + self.b * x[-1] + self.phi ** h * n_last
        return loc, np.sqrt(_ar_variance(self.phi, self.sigma2, query.steps))

    def one_step_location_scale(self, series: Series, origins: IntArray) -> tuple[FloatArray, FloatArray]:
        x = series.require_x(self.name)
        n_last = self._noise(series.y[origins - 1], x[origins - 2])
        loc = self.c + self.b * x[origins - 1] + self.phi * n_last
        return loc, np.full(origins.size, np.sqrt(self.sigma2))


class ARI11(LocationScale):
    """ARIMA(1,1,0) without drift: dy_t = phi dy_{t-1} + e_t, the interval added to the last max."""

    name = "ari11"
    min_history = 2

    def __init__(self, errors: ErrorModel | None = None, method: str = "mle") -> None:
        super().__init__(errors)
        if method not in FIT_METHODS:
            raise ValueError(f"method={method!r} is not one of {', '.join(FIT_METHODS)}")
        self.method = method
        self.phi = 0.0
        self.sigma2 = 1.0

    def fit(self, data: Series) -> Self:
        if len(data) < 5:
            raise ValueError(f"ari11 needs at least 5 windows to fit, got {len(data)}")
        if np.ptp(np.diff(data.y)) == 0:
            raise ValueError("ari11 cannot fit a series with constant differences")
        if self.method == "mle":
            res = _arima(data.y, (1, 1, 0))
            self.phi, self.sigma2 = (float(v) for v in res.params[:2])
            resid = np.asarray(res.resid)[2:]
        else:
            from statsmodels.tsa.ar_model import AutoReg

            res = AutoReg(np.diff(data.y), lags=1, trend="n").fit()
            self.phi, self.sigma2 = float(res.params[0]), float(res.sigma2)
            resid = np.asarray(res.resid)
        self.sigma2 = max(self.sigma2, 1e-12)
        self._fit_errors(resid, float(np.sqrt(self.sigma2)))
        return self

    def rolling_one_step(self, series: Series, origins: IntArray, begins: IntArray,
                         ends: IntArray) -> Predictive | None:
        """Refit on windows [begins[i], ends[i]) and forecast y[origins[i]], all at once (ols, normal only)."""
        if self.method != "ols" or not isinstance(self.errors, NormalErrors):
            return None
        if np.any(ends - begins < 5) or np.any(ends > origins):
            raise ValueError("ari11 needs at least 5 windows to fit, each before the window it forecasts")
        y = series.y
        d = np.diff(y)  # d[k] = y[k+1] - y[k]
        # rows r regress d[r+1] on d[r]; windows [b, e) hold the differences d[b .. e-2], so rows b .. e-3
        fit = rolling_ols(d[:-1, None], d[1:], begins, ends - 2)
        loc = y[origins - 1] + fit.beta[:, 0] * (y[origins - 1] - y[origins - 2])
        return Normal(loc, np.sqrt(np.maximum(fit.ssr / fit.n, 1e-12)))

    def location_scale(self, query: Ahead) -> tuple[FloatArray, FloatArray]:
        y = query.history.y
        h = np.arange(1, query.steps + 1)
        d_last = y[-1] - y[-2]
        # sum of the forecast differences phi^1..phi^h times the last difference
        loc = y[-1] + d_last * np.cumsum(self.phi ** h)
        psi = np.cumsum(self.phi ** np.arange(query.steps))  # psi_j = sum_{i<=j} phi^i
        return loc, np.sqrt(self.sigma2 * np.cumsum(psi ** 2))

    def one_step_location_scale(self, series: Series, origins: IntArray) -> tuple[FloatArray, FloatArray]:
        y = series.y
        loc = y[origins - 1] + self.phi * (y[origins - 1] - y[origins - 2])
        return loc, np.full(origins.size, np.sqrt(self.sigma2))
