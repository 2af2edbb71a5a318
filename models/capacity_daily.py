"""A capacity forecast with a daily profile: the AR(1) on the series less its 24-hour profile, scored held out.

The hourly Azure series cycle daily (2017 t1str's autocorrelation is -0.77 at 12 h, +0.81 at 24 h), which an AR(1)
about one mean cannot follow. Here the profile s_h (h = row mod 24) is statsmodels' additive `seasonal_decompose`
of the fit rows (period 24: the per-hour mean of the series less its centred 24-hour moving average, summing to 0),
and the deseasonalised rows d = y - s are fitted as the capacity model fits a series (mean the rows' mean, phi by
`persistence`). Its k-step forecast from a known C_t is

    mean + s_{(t+k) mod 24} + phi^k (C_t - s_{t mod 24} - mean),

against the AR(1)'s mean + phi^k (C_t - mean) (`fit_capacity_model`'s mean and phi). `held_out_errors` scores both
on rows the fit never saw.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from models.capacity_fit import PERSISTENCE_LAGS, persistence

PERIOD = 24  # rows (hours) per day


@dataclass(frozen=True)
class DailyAR1:
    """C_t = mean + profile[t mod 24] + X_t with X an AR(1) of persistence phi about 0 (row t of the series)."""

    mean: float
    phi: float
    profile: np.ndarray  # float64 (24,), sums to 0

    def forecast(self, origin: np.ndarray, known: np.ndarray, k: int) -> np.ndarray:
        """E[C_{origin + k} | C_origin = known] for rows `origin` (absolute row numbers: they set the hour)."""
        s = self.profile
        return self.mean + s[(origin + k) % PERIOD] + self.phi**k * (known - s[origin % PERIOD] - self.mean)


def fit_daily(rows: np.ndarray) -> DailyAR1:
    """The profile by statsmodels' additive seasonal decomposition (period 24) of `rows` (row 0 at hour 0), and the
    AR(1) of the deseasonalised rows (mean their mean, phi by `persistence` over PERSISTENCE_LAGS lags)."""
    from statsmodels.tsa.seasonal import seasonal_decompose

    y = np.asarray(rows, dtype=np.float64)
    if y.size < 2 * PERIOD:
        raise ValueError(f"rows has {y.size} values: a daily profile needs at least {2 * PERIOD} (two days)")
    seasonal = np.asarray(seasonal_decompose(y, model="additive", period=PERIOD).seasonal, dtype=np.float64)
    profile = seasonal[:PERIOD].copy()  # seasonal[t] = profile[t mod 24]
    d = y - seasonal
    return DailyAR1(mean=float(d.mean()), phi=persistence(d, PERSISTENCE_LAGS), profile=profile)


def held_out_errors(series: np.ndarray, fit_rows: int, horizons: tuple[int, ...]) -> dict[str, Any]:
    """Root mean squared k-step forecast errors on rows [fit_rows, n) of the AR(1) and the daily model, both fitted
    on rows [0, fit_rows); every origin t >= fit_rows whose target t + k exists (origins inside the held-out rows
    only, so nothing scored was seen by either fit). Also the fit rows' autocorrelation at 12 and 24 rows
    (None for constant rows)."""
    import warnings

    from statsmodels.tsa.stattools import acf

    from models.capacity_fit import fit_capacity_model

    y = np.asarray(series, dtype=np.float64)
    ar1 = fit_capacity_model(y[:fit_rows].astype(np.int64))
    daily = fit_daily(y[:fit_rows])
    rows: dict[str, list[float]] = {"ar1": [], "daily": []}
    for k in horizons:
        origin = np.arange(fit_rows, y.size - k)
        if origin.size == 0:
            raise ValueError(f"horizon {k} leaves no held-out origin in {y.size - fit_rows} rows")
        target = y[origin + k]
        plain = ar1.mean + ar1.phi**k * (y[origin] - ar1.mean)
        rows["ar1"].append(float(np.sqrt(np.mean((target - plain) ** 2))))
        rows["daily"].append(float(np.sqrt(np.mean((target - daily.forecast(origin, y[origin], k)) ** 2))))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rho = acf(y[:fit_rows], nlags=PERIOD, fft=False)
    return {"horizons": list(horizons), "rmse": rows, "ar1": {"mean": ar1.mean, "phi": ar1.phi},
            "fit_acf": {str(k): float(rho[k]) if np.isfinite(rho[k]) else None for k in (PERIOD // 2, PERIOD)},
            "daily": {"mean": daily.mean, "phi": daily.phi, "profile": [float(x) for x in daily.profile]}}
