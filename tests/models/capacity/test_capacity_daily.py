"""The daily-profile capacity model: its profile against a by-hand seasonal decomposition, its AR(1) on the
deseasonalised rows, the k-step forecast by hand, and the held-out scoring against a hand-computed AR(1) error."""

from __future__ import annotations

import numpy as np
import pytest

from models.capacity_daily import PERIOD, DailyAR1, fit_daily, held_out_errors
from models.capacity_fit import fit_capacity_model, persistence


def daily_series(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    profile = 3.0 * np.sin(2 * np.pi * np.arange(PERIOD) / PERIOD)
    x = np.zeros(n)
    for t in range(1, n):
        x[t] = 0.7 * x[t - 1] + rng.normal(0.0, 0.5)
    return 40.0 + profile[np.arange(n) % PERIOD] + x, profile


def test_the_profile_is_the_per_hour_mean_of_the_series_less_its_centred_daily_moving_average() -> None:
    y, _ = daily_series(24 * 7)
    weights = np.r_[0.5, np.ones(PERIOD - 1), 0.5] / PERIOD  # the centred 2x24 moving average, by hand
    trend = np.full(y.size, np.nan)
    trend[PERIOD // 2: y.size - PERIOD // 2] = np.convolve(y, weights, mode="valid")
    by_hour = np.array([np.nanmean((y - trend)[h::PERIOD]) for h in range(PERIOD)])
    fit = fit_daily(y)
    assert fit.profile == pytest.approx(by_hour - by_hour.mean(), abs=1e-9)
    d = y - fit.profile[np.arange(y.size) % PERIOD]
    assert fit.mean == pytest.approx(float(d.mean())) and fit.phi == pytest.approx(persistence(d, 8))


def test_a_simulated_daily_cycle_is_recovered() -> None:
    y, profile = daily_series(24 * 60, seed=1)
    fit = fit_daily(y)
    assert np.max(np.abs(fit.profile - profile)) < 0.3 and abs(fit.phi - 0.7) < 0.06 and abs(fit.mean - 40.0) < 0.3


def test_the_k_step_forecast_moves_the_deseasonalised_gap_by_phi_to_the_k() -> None:
    profile = np.zeros(PERIOD)
    profile[3], profile[5] = 2.0, -1.0
    model = DailyAR1(mean=10.0, phi=0.5, profile=profile)
    # from row 27 (hour 3) at 14 nodes: gap 14 - 2 - 10 = 2; two rows later (hour 5): 10 - 1 + 0.25 * 2
    assert model.forecast(np.array([27]), np.array([14.0]), 2)[0] == pytest.approx(9.5)


def test_held_out_scoring_uses_only_the_later_rows_and_matches_the_ar1_by_hand() -> None:
    y, _ = daily_series(24 * 14, seed=2)
    y = np.floor(y + 0.5)
    scored = held_out_errors(y, 168, (1, 6))
    ar1 = fit_capacity_model(y[:168].astype(np.int64))
    t = np.arange(168, y.size - 6)
    by_hand = np.sqrt(np.mean((y[t + 6] - (ar1.mean + ar1.phi**6 * (y[t] - ar1.mean))) ** 2))
    assert scored["rmse"]["ar1"][1] == pytest.approx(by_hand)
    assert scored["rmse"]["daily"][1] < scored["rmse"]["ar1"][1]  # a real daily cycle
    changed = y.copy()
    changed[:168] += 1.0  # the fit rows moved: the scores move; the held-out rows alone are scored
    assert held_out_errors(changed, 168, (1,))["rmse"] != held_out_errors(y, 168, (1,))["rmse"]


def test_too_few_rows_for_a_profile_or_a_horizon_are_refused() -> None:
    with pytest.raises(ValueError, match="rows has 47 values: a daily profile needs at least 48"):
        fit_daily(np.ones(47))
    y, _ = daily_series(60)
    with pytest.raises(ValueError, match="horizon 12 leaves no held-out origin in 10 rows"):
        held_out_errors(y, 50, (12,))
