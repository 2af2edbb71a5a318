"""TSDec on a seasonal series, the error models, and seed 003 Alg. 2's sliding-window GMM."""

import numpy as np
import pytest
from scipy import stats

from models.forecast.base import Ahead
from models.forecast.errors import EmpiricalErrors, GMMErrors, NormalErrors, SkewNormalErrors, make_errors
from models.forecast.series import Series
from models.forecast.sliding import SlidingErrors, sliding_errors
from models.forecast.tsdec import TSDec


def seasonal_series(days: int, noise: float, seed: int) -> np.ndarray:
    t = np.arange(24 * days)
    return 100 + 20 * np.sin(2 * np.pi * t / 24) + np.random.default_rng(seed).normal(0, noise, t.size)


@pytest.mark.parametrize("method", ["stl", "classical"])
def test_tsdec_recovers_the_season_and_keeps_phase_on_slices(method: str) -> None:
    y = seasonal_series(8, 1.0, 0)
    s = Series(y)
    model = TSDec(24, method=method).fit(s.head(120))
    truth = 100 + 20 * np.sin(2 * np.pi * np.arange(120, 144) / 24)
    assert np.abs(model.predict(Ahead(s.head(120), 24)).mean() - truth).max() < 3.0
    # a slice starting mid-period forecasts the same phases
    shifted = model.predict(Ahead(s.window(7, 120), 24)).mean()
    assert shifted == pytest.approx(model.predict(Ahead(s.head(120), 24)).mean())
    fast = model.one_step(s, np.arange(130, 150)).mean()
    slow = [model.predict(Ahead(s.head(int(t)), 1)).mean()[0] for t in range(130, 150)]
    assert fast == pytest.approx(slow)


def test_tsdec_refuses_short_histories_and_bad_settings() -> None:
    with pytest.raises(ValueError, match="two periods"):
        TSDec(24).fit(Series(np.arange(40.0)))
    with pytest.raises(ValueError, match="period=1"):
        TSDec(1)
    with pytest.raises(ValueError, match="method='x'"):
        TSDec(24, method="x")
    with pytest.raises(ValueError, match="odd integer"):
        TSDec(24, seasonal=8)


def test_gmm_picks_two_components_for_a_bimodal_sample_by_bic() -> None:
    rng = np.random.default_rng(4)
    z = np.concatenate([rng.normal(-3, 0.5, 1500), rng.normal(2, 0.7, 1000)])
    gmm = GMMErrors().fit(z)
    assert gmm.components == 2
    assert min(gmm.bic, key=gmm.bic.__getitem__) == 2
    assert sorted(gmm.means) == pytest.approx([-3, 2], abs=0.1)
    law = gmm.law(np.array([10.0]), np.array([2.0]))
    # the law of 10 + 2 Z: its median is 10 + 2 * (median of Z)
    assert law.cdf(10 + 2 * np.median(z)) == pytest.approx([0.5], abs=0.02)
    with pytest.raises(ValueError, match="max_components=0"):
        GMMErrors(max_components=0)
    with pytest.raises(ValueError, match="at least 2 finite"):
        GMMErrors().fit(np.array([1.0]))


def test_skewnormal_and_empirical_error_laws() -> None:
    z = stats.skewnorm.rvs(4.0, size=4000, random_state=np.random.default_rng(1))
    sk = SkewNormalErrors().fit(z)
    assert sk.shape == pytest.approx(4.0, rel=0.35)
    law = sk.law(np.array([1.0]), np.array([3.0]))
    assert law.quantile(0.9) == pytest.approx(1 + 3 * np.quantile(z, 0.9), rel=0.03)
    emp = EmpiricalErrors().fit(np.array([-1.0, 0.0, 2.0]))
    assert emp.law(np.array([5.0]), np.array([2.0])).quantile(0.9) == pytest.approx([9.0])
    assert NormalErrors().fit(z).law(np.array([0.0]), np.array([1.0])).quantile(0.5) == pytest.approx([0.0])
    with pytest.raises(ValueError, match="residuals='t'"):
        make_errors("t")


def test_sliding_errors_are_actual_minus_forecast_and_gmm_covers() -> None:
    y = seasonal_series(12, 3.0, 7)
    s = Series(y)
    deltas = sliding_errors(TSDec(24), s.head(180), horizon=24, fit_windows=120, stride=12)
    assert deltas.shape == (4, 24)  # origins 120, 132, 144, 156
    first = TSDec(24).fit(s.window(0, 120)).predict(Ahead(s.window(0, 120), 24)).mean()
    assert deltas[0] == pytest.approx(y[120:144] - first)
    model = SlidingErrors(TSDec(24), horizon=24, fit_windows=120, stride=6).fit(s.head(216))
    law = model.predict(Ahead(s.window(96, 216), 24))
    covered = np.mean(y[216:240] <= law.quantile(0.95))
    assert covered >= 0.75
    with pytest.raises(ValueError, match="no origin"):
        sliding_errors(TSDec(24), s.head(100), horizon=24, fit_windows=120)
