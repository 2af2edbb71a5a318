"""VAR1: the window max and average modelled jointly (statsmodels VAR, OLS), the max's marginal forecast."""

from __future__ import annotations

import warnings
from typing import Self

import numpy as np

from models.arrays import FloatArray, IntArray
from models.forecast.base import Ahead, LocationScale
from models.forecast.errors import ErrorModel, NormalErrors
from models.forecast.rolling import rolling_ols
from models.forecast.series import Series
from models.predictive import Normal, Predictive


class VAR1(LocationScale):
    """z_t = c + A z_{t-1} + u_t with z = (max, avg), u ~ N(0, Sigma); the law of the max's component."""

    name = "var1"
    min_history = 1

    def __init__(self, errors: ErrorModel | None = None) -> None:
        super().__init__(errors)
        self.c = np.zeros(2)
        self.a = np.zeros((2, 2))
        self.sigma = np.eye(2)

    def fit(self, data: Series) -> Self:
        if len(data) < 6:
            raise ValueError(f"var1 needs at least 6 windows to fit, got {len(data)}")
        from statsmodels.tsa.api import VAR

        z = np.column_stack([data.y, data.require_x(self.name)])
        if np.any(np.ptp(z, axis=0) == 0):
            raise ValueError("var1 cannot fit a constant max or average series")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = VAR(z).fit(1, trend="c")
        self.c = np.asarray(res.intercept, dtype=np.float64)
        self.a = np.asarray(res.coefs[0], dtype=np.float64)
        self.sigma = np.asarray(res.sigma_u, dtype=np.float64)
        self._fit_errors(np.asarray(res.resid)[:, 0], float(np.sqrt(self.sigma[0, 0])))
        return self

    def rolling_one_step(self, series: Series, origins: IntArray, begins: IntArray,
                         ends: IntArray) -> Predictive | None:
        """Refit on windows [begins[i], ends[i]) and forecast y[origins[i]], all at once (normal errors only).

        The max's equation of a VAR(1) by OLS is the regression of y_t on (1, y_{t-1}, x_{t-1}); statsmodels
        divides its residual sum of squares by n - 3.
        """
        if not isinstance(self.errors, NormalErrors):
            return None
        if np.any(ends - begins < 6) or np.any(ends > origins):
            raise ValueError("var1 needs at least 6 windows to fit, each before the window it forecasts")
        y, x = series.y, series.require_x(self.name)
        design = np.column_stack([np.ones(y.size - 1), y[:-1], x[:-1]])
        fit = rolling_ols(design, y[1:], begins, ends - 1)
        loc = fit.beta[:, 0] + fit.beta[:, 1] * y[origins - 1] + fit.beta[:, 2] * x[origins - 1]
        return Normal(loc, np.sqrt(np.maximum(fit.ssr / (fit.n - 3), 1e-12)))

    def location_scale(self, query: Ahead) -> tuple[FloatArray, FloatArray]:
        hist = query.history
        z = np.array([hist.y[-1], hist.require_x(self.name)[-1]])
        power = np.eye(2)
        cov = np.zeros((2, 2))
        loc, var = [], []
        for _ in range(query.steps):
            cov = cov + power @ self.sigma @ power.T  # MSE(h) = sum_{j<h} A^j Sigma A^j'
            power = self.a @ power
            z = self.c + self.a @ z
            loc.append(z[0])
            var.append(cov[0, 0])
        return np.asarray(loc), np.sqrt(np.asarray(var))

    def one_step_location_scale(self, series: Series, origins: IntArray) -> tuple[FloatArray, FloatArray]:
        x = series.require_x(self.name)
        loc = self.c[0] + self.a[0, 0] * series.y[origins - 1] + self.a[0, 1] * x[origins - 1]
        return loc, np.full(origins.size, np.sqrt(self.sigma[0, 0]))
