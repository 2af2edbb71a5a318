"""AR1, AR1X and ARI11 against statsmodels' own forecasts and the coverage of simulated AR(1) data."""

import warnings

import numpy as np
import pytest
from statsmodels.tsa.arima.model import ARIMA

from models.capacity_fit import fit_capacity_model
from models.forecast.ar import AR1, AR1X, ARI11, fit_ar1_ols
from models.forecast.base import Ahead
from models.forecast.series import Series


def simulate_ar1(n: int, mu: float, phi: float, sigma: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y = np.empty(n)
    y[0] = mu + rng.normal(0, sigma / np.sqrt(1 - phi ** 2))
    for t in range(1, n):
        y[t] = mu + phi * (y[t - 1] - mu) + rng.normal(0, sigma)
    return y


def _sm(y: np.ndarray, order: tuple[int, int, int], exog: np.ndarray | None = None) -> ARIMA:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ARIMA(y, exog=exog, order=order, trend="c" if order[1] == 0 else "n").fit()


def test_ar1_matches_statsmodels_forecast_and_its_intervals() -> None:
    y = simulate_ar1(300, 40.0, 0.6, 3.0, seed=3)
    model = AR1().fit(Series(y))
    forecast = _sm(y, (1, 0, 0)).get_forecast(4)
    law = model.predict(Ahead(Series(y), 4))
    assert law.mean() == pytest.approx(forecast.predicted_mean, rel=1e-6)
    upper = forecast.conf_int(alpha=0.1)[:, 1]
    assert law.quantile(0.95) == pytest.approx(upper, rel=1e-6)


def test_ar1_closed_form_and_coverage_on_simulated_data() -> None:
    y = simulate_ar1(3000, 30.0, 0.7, 2.0, seed=11)
    model = AR1().fit(Series(y[:1000]))
    assert model.phi == pytest.approx(0.7, abs=0.06)
    assert model.mu == pytest.approx(30.0, abs=0.7)
    assert np.sqrt(model.sigma2) == pytest.approx(2.0, abs=0.1)
    law = model.one_step(Series(y), np.arange(1000, 3000))
    for q in (0.9, 0.99):
        covered = np.mean(y[1000:] <= law.quantile(q))
        se = np.sqrt(q * (1 - q) / 2000)
        assert abs(covered - q) < 4 * se + 0.01


def test_ar1_ols_is_conditional_least_squares() -> None:
    y = simulate_ar1(500, 10.0, 0.5, 1.0, seed=5)
    model = AR1(method="ols").fit(Series(y))
    slope, intercept = np.polyfit(y[:-1], y[1:], 1)
    assert model.phi == pytest.approx(slope)
    assert model.mu * (1 - model.phi) == pytest.approx(intercept)
    with pytest.raises(ValueError, match="method='css' is not one of"):
        AR1(method="css")


def test_the_ar1_least_squares_fit_is_polyfit_and_the_capacity_model_uses_it() -> None:
    y = simulate_ar1(400, 20.0, 0.6, 1.5, seed=8)
    fit = fit_ar1_ols(y)
    slope, intercept = np.polyfit(y[:-1], y[1:], 1)
    assert (fit.phi, fit.const) == pytest.approx((slope, intercept))
    assert fit.resid == pytest.approx(y[1:] - intercept - slope * y[:-1], abs=1e-9)
    assert fit.sigma2 == pytest.approx(float(np.mean(fit.resid ** 2)))
    assert fit.mean(unit_root=0.0) == pytest.approx(intercept / (1 - slope))
    capacity = fit_capacity_model(y, persistence_lags=1)
    assert (capacity.phi, capacity.mean) == pytest.approx((slope, intercept / (1 - slope)))


def test_one_step_equals_the_predict_loop() -> None:
    y = simulate_ar1(200, 20.0, 0.4, 1.5, seed=8)
    x = 0.5 * y + np.random.default_rng(0).normal(0, 1, 200)
    s = Series(y, x)
    origins = np.arange(150, 200)
    for model in (AR1().fit(s), AR1X().fit(s), ARI11().fit(s)):
        fast = model.one_step(s, origins)
        slow = [model.predict(Ahead(s.head(int(t)), 1)).quantile(0.99)[0] for t in origins]
        assert fast.quantile(0.99) == pytest.approx(slow)


def test_ar1x_and_ari11_match_statsmodels() -> None:
    y = simulate_ar1(300, 50.0, 0.5, 4.0, seed=2)
    x = 0.4 * y + np.random.default_rng(9).normal(0, 2, 300)
    s = Series(y, x)
    f = _sm(y[1:], (1, 0, 0), x[:-1]).get_forecast(1, exog=x[-1:])
    law = AR1X().fit(s).predict(Ahead(s, 1))
    assert law.mean() == pytest.approx(f.predicted_mean, rel=1e-6)
    assert law.quantile(0.975) == pytest.approx(f.conf_int(alpha=0.05)[:, 1], rel=1e-6)
    g = _sm(y, (1, 1, 0)).get_forecast(5)
    law = ARI11().fit(s).predict(Ahead(s, 5))
    assert law.mean() == pytest.approx(g.predicted_mean, rel=1e-6)
    assert law.quantile(0.975) == pytest.approx(g.conf_int(alpha=0.05)[:, 1], rel=1e-6)


def test_bad_histories_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 4 windows"):
        AR1().fit(Series(np.array([1.0, 2.0])))
    with pytest.raises(ValueError, match="needs the window averages"):
        AR1X().fit(Series(np.arange(10.0)))
    with pytest.raises(ValueError, match="constant differences"):
        ARI11().fit(Series(np.arange(10.0)))
    with pytest.raises(ValueError, match="steps=0"):
        Ahead(Series(np.arange(3.0)), 0)


def test_rolling_least_squares_refits_equal_autoreg_refits() -> None:
    y = simulate_ar1(300, 50.0, 0.9, 2.0, seed=12)
    s = Series(y)
    origins = np.arange(100, 300)
    ends = origins - origins % 7  # refit every 7 windows, forecast with the last fit
    begins = np.maximum(0, ends - 60)
    law = AR1(method="ols").rolling_one_step(s, origins, begins, ends)
    assert law is not None
    for i in (0, 5, 77, 199):
        ref = AR1(method="ols").fit(s.window(int(begins[i]), int(ends[i]))).one_step(s, origins[i:i + 1])
        assert law.quantile(0.99)[i] == pytest.approx(ref.quantile(0.99)[0], rel=1e-9)
    assert AR1(method="mle").rolling_one_step(s, origins, begins, ends) is None


def test_ari11_rolling_least_squares_equals_autoreg_on_differences() -> None:
    y = np.cumsum(simulate_ar1(300, 0.0, 0.5, 1.0, seed=13)) + 50
    s = Series(y)
    origins = np.arange(100, 300)
    ends = origins - origins % 4
    begins = np.maximum(0, ends - 50)
    law = ARI11(method="ols").rolling_one_step(s, origins, begins, ends)
    assert law is not None
    for i in (0, 9, 120, 199):
        ref = ARI11(method="ols").fit(s.window(int(begins[i]), int(ends[i]))).one_step(s, origins[i:i + 1])
        assert law.quantile(0.95)[i] == pytest.approx(ref.quantile(0.95)[0], rel=1e-9)
    assert ARI11().rolling_one_step(s, origins, begins, ends) is None
    with pytest.raises(ValueError, match="method='x'"):
        ARI11(method="x")


def test_steps_ahead_equals_predict_at_every_origin() -> None:
    y = simulate_ar1(200, 20.0, 0.7, 1.5, seed=14)
    s = Series(y, 0.5 * y)
    origins = np.arange(120, 200, 9)
    for model in (AR1().fit(s), ARI11().fit(s)):  # closed form, generic loop
        law = model.steps_ahead(s, origins, 4)
        slow = np.concatenate([model.predict(Ahead(s.head(int(t)), 4)).quantile(0.9) for t in origins])
        assert law.quantile(0.9) == pytest.approx(slow)
