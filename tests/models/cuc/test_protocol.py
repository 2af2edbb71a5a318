"""The split, the leak-free error windows, Alg. 2's error law and the quantile constraint."""

import numpy as np
import pytest
from scipy import stats

from models.cuc.jobs import JobConfig
from models.cuc.protocol import (
    MIN_FIT,
    ForecastBank,
    Split,
    constraint,
    fit_error_law,
    inner_origins,
    make_samples,
)
from models.law import Law
from models.predictive import Mixture


def test_split_is_the_seeds() -> None:
    split = Split(14 * 24)
    assert split.train_origins == range(120, 264)  # days 6-11, one sample per hour: 144 samples
    assert len(split.train_origins) == 144
    assert split.test_origins == range(288, 313)  # scopes inside the last two days
    assert split.test_origins[-1] + split.T == 14 * 24
    with pytest.raises(ValueError, match="the split needs at least 336"):
        Split(300)
    with pytest.raises(ValueError, match="fit_hours=40"):
        Split(336, fit_hours=40)
    with pytest.raises(ValueError, match=r"train_hours=0 must be >= 1 \(a training origin\)"):
        Split(336, train_hours=0)


def test_inner_origins_see_only_the_past() -> None:
    for origin in (120, 200, 288):
        inner = inner_origins(origin, 72, 24)
        assert inner[-1] + 24 <= origin  # every error's targets are observed before the origin
        assert inner.start >= MIN_FIT and len(inner) <= 72
    assert inner_origins(200, 72, 24) == range(105, 177)


@pytest.mark.filterwarnings("ignore::Warning")  # statsmodels flags the noiseless season's rank-deficient AR fit
def test_forecast_bank_errors_are_truth_minus_forecast() -> None:
    y = 100 + 10 * np.sin(np.arange(200) * 2 * np.pi / 24)
    bank = ForecastBank(y, 24)
    e = bank.errors("tsdec", 96, range(100, 103))
    assert e.shape == (3, 24)
    assert np.allclose(e[1], y[101:125] - bank.get("tsdec", 96, 101))
    assert np.abs(e).max() < 1e-6  # a pure daily season is forecast exactly


def test_error_law_on_gaussian_errors_is_one_standard_normal() -> None:
    rng = np.random.default_rng(0)
    sigma = np.linspace(1, 3, 24)
    deltas = rng.standard_normal((400, 24)) * sigma
    law = fit_error_law(deltas, 3, 0)
    assert isinstance(law.z, Mixture) and law.z.weights.size == 1  # BIC keeps one component
    assert np.allclose(law.scale, sigma, rtol=0.1) and not law.loc.any()
    assert law.z_quantile(0.01) == pytest.approx(stats.norm.ppf(0.01), abs=0.15)


def test_constraint_is_the_p_quantile() -> None:
    law = Law.mixture(np.array([1.0]), np.array([0.0]), np.array([1.0]), loc=np.zeros(2), scale=np.array([1.0, 2.0]))
    forecast = np.array([100.0, 50.0])
    z = stats.norm.ppf(0.05)
    assert np.allclose(constraint(forecast, law, 0.05, 1.0), forecast + np.array([1.0, 2.0]) * z)
    assert np.allclose(constraint(forecast, law, 0.05, 2.0), forecast + 2 * np.array([1.0, 2.0]) * z)
    assert np.array_equal(constraint(forecast, None, 0.05, 1.0), forecast)  # no uncertainty: Ã = F
    assert constraint(np.array([1.0]), Law.mixture(np.ones(1), np.zeros(1), np.ones(1), np.zeros(1), np.array([5.0])),
                      0.01, 1.0).tolist() == [0.0]  # floored at zero


def test_mixture_quantile_matches_its_cdf() -> None:
    law = Law.mixture(np.array([0.7, 0.3]), np.array([0.0, -3.0]), np.array([1.0, 2.0]), np.zeros(1), np.ones(1))
    q = law.z_quantile(0.02)
    cdf = 0.7 * stats.norm.cdf(q) + 0.3 * stats.norm.cdf(q, -3.0, 2.0)
    assert cdf == pytest.approx(0.02, abs=1e-9)


def test_samples_are_seeded_per_origin() -> None:
    y = np.full(400, 1000.0)
    a = make_samples(y, range(120, 122), 24, JobConfig(), 5)
    b = make_samples(y, range(121, 122), 24, JobConfig(), 5)
    assert np.array_equal(a[1].jobs.c, b[0].jobs.c)  # the jobs of an origin do not depend on the others
    assert not np.array_equal(a[0].jobs.c[:10], a[1].jobs.c[:10])


@pytest.mark.filterwarnings("ignore::Warning")
def test_newest_errors_are_observed_before_the_origin() -> None:
    rng = np.random.default_rng(5)
    t = np.arange(200)
    y = 500 + 30 * np.sin(2 * np.pi * t / 24) + rng.normal(0, 5, t.size)
    origin, windows = 150, 20
    bank = ForecastBank(y, 24)
    deltas = bank.newest_errors("ar1", 72, origin, windows)
    assert deltas.shape == (20, 24)  # as many errors per step as whole inner windows
    # the last step can only use whole windows: it equals the "full" set's last column
    full = bank.errors("ar1", 72, inner_origins(origin, windows, 24))
    assert np.allclose(deltas[:, -1], full[:, -1])
    # step 0 of the newest origin o - 1 is the error of hour o - 1, by hand
    assert deltas[-1, 0] == pytest.approx(y[origin - 1] - bank.get("ar1", 72, origin - 1)[0])
    # every column by the definition: the 20 newest origins o' with o' + h < origin, oldest first
    for h in range(24):
        newest = [o for o in range(MIN_FIT, origin) if o + h < origin][-20:]
        assert np.allclose(deltas[:, h], [y[o + h] - bank.get("ar1", 72, o)[h] for o in newest])
    # nothing at or after the origin is read: a different future gives the same errors
    future = y.copy()
    future[origin:] += rng.normal(0, 100, y.size - origin)
    assert np.array_equal(ForecastBank(future, 24).newest_errors("ar1", 72, origin, windows), deltas)
