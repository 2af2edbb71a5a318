"""TSDec (CUC's forecaster): seasonal decomposition (statsmodels STL or classical) plus an AR(1) remainder.

fit: decompose the history, keep the seasonal profile per phase, fit an AR(1) (statsmodels AutoReg) on the
deseasonalised series. predict: deseasonalise the query's history with the profile, extrapolate the AR(1),
add the profile of the target phases back. Phases come from `Series.start`, so slices stay aligned.
"""

from __future__ import annotations

import warnings
from typing import Self

import numpy as np

from models.arrays import FloatArray, IntArray
from models.forecast.ar import fit_ar1_ols
from models.forecast.base import Ahead, LocationScale
from models.forecast.errors import ErrorModel
from models.forecast.series import Series

DECOMPOSITIONS = ("stl", "classical")


class TSDec(LocationScale):
    """y_t = s_{phase(t)} + d_t, (d_t - mu) = phi (d_{t-1} - mu) + e_t; s the fitted seasonal profile."""

    name = "tsdec"
    min_history = 1

    def __init__(self, period: int, errors: ErrorModel | None = None, method: str = "stl",
                 seasonal: int = 7, robust: bool = True) -> None:
        super().__init__(errors)
        if period < 2:
            raise ValueError(f"period={period} must be >= 2 windows")
        if method not in DECOMPOSITIONS:
            raise ValueError(f"method={method!r} is not one of {', '.join(DECOMPOSITIONS)}")
        if seasonal < 3 or seasonal % 2 == 0:
            raise ValueError(f"seasonal={seasonal} must be an odd integer >= 3 (STL's seasonal smoother)")
        self.period = period
        self.method = method
        self.seasonal = seasonal
        self.robust = robust
        self.profile = np.zeros(period)
        self.mu = 0.0
        self.phi = 0.0
        self.sigma2 = 1.0

    def _phases(self, start: int, count: int) -> IntArray:
        return np.asarray((start + np.arange(count)) % self.period, dtype=np.int64)

    def _seasonal_component(self, y: FloatArray) -> FloatArray:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if self.method == "stl":
                from statsmodels.tsa.seasonal import STL

                return np.asarray(STL(y, period=self.period, seasonal=self.seasonal, robust=self.robust)
                                  .fit().seasonal, dtype=np.float64)
            from statsmodels.tsa.seasonal import seasonal_decompose

            return np.asarray(seasonal_decompose(y, period=self.period, model="additive",
                                                 extrapolate_trend="freq").seasonal, dtype=np.float64)

    def fit(self, data: Series) -> Self:
        if len(data) < 2 * self.period + 2:
            raise ValueError(f"tsdec needs at least two periods plus 2 windows ({2 * self.period + 2}), "
                             f"got {len(data)}")
        seasonal = self._seasonal_component(data.y)
        phases = self._phases(data.start, len(data))
        sums = np.bincount(phases, weights=seasonal, minlength=self.period)
        self.profile = sums / np.maximum(np.bincount(phases, minlength=self.period), 1)
        self.profile -= self.profile.mean()
        d = data.y - self.profile[phases]
        if np.ptp(d) == 0:
            self.mu, self.phi, self.sigma2 = float(d[0]), 0.0, 1e-12
            self._fit_errors(np.zeros(2), 1.0)
            return self
        fit = fit_ar1_ols(d)
        self.phi, self.sigma2 = fit.phi, max(fit.sigma2, 1e-12)
        self.mu = fit.mean(unit_root=float(d.mean()))
        self._fit_errors(fit.resid, float(np.sqrt(self.sigma2)))
        return self

    def point(self, query: Ahead) -> FloatArray:
        """The point forecast of the next `steps` windows."""
        hist = query.history
        d_last = hist.y[-1] - self.profile[(hist.start + len(hist) - 1) % self.period]
        h = np.arange(1, query.steps + 1)
        target = self._phases(hist.start + len(hist), query.steps)
        return np.asarray(self.profile[target] + self.mu + self.phi ** h * (d_last - self.mu), dtype=np.float64)

    def location_scale(self, query: Ahead) -> tuple[FloatArray, FloatArray]:
        scale = np.sqrt(self.sigma2 * np.cumsum(self.phi ** (2 * np.arange(query.steps))))
        return self.point(query), scale

    def one_step_location_scale(self, series: Series, origins: IntArray) -> tuple[FloatArray, FloatArray]:
        last = series.start + origins - 1
        d_last = series.y[origins - 1] - self.profile[last % self.period]
        loc = self.profile[(last + 1) % self.period] + self.mu + self.phi * (d_last - self.mu)
        return loc, np.full(origins.size, np.sqrt(self.sigma2))
