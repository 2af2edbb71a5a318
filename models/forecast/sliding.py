"""Seed 003 Alg. 2: a forecaster's error law fitted on its own sliding-window forecast errors (GMM by default)."""

from __future__ import annotations

from typing import Self

import numpy as np

from models.arrays import FloatArray, IntArray
from models.forecast.base import Ahead, Forecaster
from models.forecast.errors import ErrorModel, GMMErrors
from models.forecast.series import Series
from models.predictive import Predictive


def sliding_errors(base: Forecaster, data: Series, horizon: int, fit_windows: int, stride: int = 1,
                   refit: bool = True) -> FloatArray:
    """delta = actual - point forecast, for every origin t with fit_windows windows before it and horizon after.

    At each origin the base forecaster is refitted on the fit_windows windows before t (refit=False: fitted once,
    on the first fit_windows, and only conditioned on each origin's history) and forecasts the next `horizon`;
    rows are origins, columns steps ahead.
    """
    if horizon < 1 or fit_windows < 1 or stride < 1:
        raise ValueError(f"horizon={horizon}, fit_windows={fit_windows} and stride={stride} must be >= 1")
    origins = range(fit_windows, len(data) - horizon + 1, stride)
    if not origins:
        raise ValueError(f"{len(data)} windows leave no origin with {fit_windows} windows before and "
                         f"{horizon} after")
    rows = []
    if not refit:
        base.fit(data.window(0, fit_windows))
    for t in origins:
        history = data.window(t - fit_windows, t)
        if refit:
            base.fit(history)
        rows.append(data.y[t:t + horizon] - base.predict(Ahead(history, horizon)).mean())
    return np.asarray(rows, dtype=np.float64)


class SlidingErrors(Forecaster):
    """The base forecaster's point forecast plus an error law (GMM) fitted on its sliding-window errors.

    fit(data): collect the errors of `sliding_errors`, fit the error model on all of them (pooled over steps,
    as Alg. 2 adds one error law to every step), then fit the base on the whole of data.
    predict(query): the base's mean for the next steps + the error law.
    """

    def __init__(self, base: Forecaster, horizon: int, fit_windows: int, errors: ErrorModel | None = None,
                 stride: int = 1, refit: bool = True) -> None:
        self.base = base
        self.horizon = horizon
        self.fit_windows = fit_windows
        self.stride = stride
        self.refit = refit
        self.errors = errors if errors is not None else GMMErrors()
        self.name = f"{base.name}+{self.errors.name}"
        self.min_history = base.min_history
        self.deltas = np.zeros((0, horizon))

    def fit(self, data: Series) -> Self:
        self.deltas = sliding_errors(self.base, data, self.horizon, self.fit_windows, self.stride, self.refit)
        self.errors.fit(self.deltas.ravel())
        self.base.fit(data)
        return self

    def predict(self, query: Ahead) -> Predictive:
        self._check_history(query.history)
        loc = self.base.predict(query).mean()
        return self.errors.law(loc, np.ones_like(loc))

    def one_step(self, series: Series, origins: IntArray) -> Predictive:
        loc = self.base.one_step(series, origins).mean()
        return self.errors.law(loc, np.ones_like(loc))
