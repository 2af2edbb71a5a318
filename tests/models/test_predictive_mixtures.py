"""SkewNormal, Mixture and the scaled Empirical against scipy and closed forms."""

import numpy as np
import pytest
from scipy import stats

from models.predictive import Empirical, Mixture, Normal, Predictive, SkewNormal


def test_skewnormal_against_scipy() -> None:
    s = SkewNormal(np.array([0.0, 5.0]), np.array([1.0, 2.0]), 3.0)
    assert isinstance(s, Predictive)
    assert s.quantile(0.9) == pytest.approx(stats.skewnorm.ppf(0.9, 3.0, [0, 5], [1, 2]))
    assert s.cdf(np.array([0.5, 6.0])) == pytest.approx(stats.skewnorm.cdf([0.5, 6.0], 3.0, [0, 5], [1, 2]))
    assert s.mean() == pytest.approx(stats.skewnorm.mean(3.0, [0, 5], [1, 2]))
    draws = s.sample(50_000, np.random.default_rng(0))
    assert draws.mean(axis=0) == pytest.approx(s.mean(), abs=0.03)
    with pytest.raises(ValueError, match="positive"):
        SkewNormal(np.array([0.0]), np.array([0.0]), 1.0)
    with pytest.raises(ValueError, match="finite"):
        SkewNormal(np.array([0.0]), np.array([1.0]), float("nan"))


def test_mixture_cdf_and_quantile_against_scipy_sum() -> None:
    w = np.array([0.3, 0.7])
    means = np.array([[0.0, 4.0], [10.0, 10.0]])
    sds = np.array([[1.0, 0.5], [2.0, 2.0]])
    m = Mixture(w, means, sds)
    x = np.array([3.5, 9.0])
    direct = [w @ stats.norm.cdf(x[i], means[i], sds[i]) for i in range(2)]
    assert m.cdf(x) == pytest.approx(direct)
    for q in (0.001, 0.2, 0.5, 0.95, 0.999):
        assert m.cdf(m.quantile(q)) == pytest.approx([q, q], abs=1e-9)
    # equal components collapse to one normal
    assert m.quantile(0.975)[1] == pytest.approx(stats.norm.ppf(0.975, 10, 2))
    assert m.mean() == pytest.approx([2.8, 10.0])
    draws = m.sample(40_000, np.random.default_rng(2))
    assert draws.mean(axis=0) == pytest.approx([2.8, 10.0], abs=0.05)


@pytest.mark.parametrize(("weights", "match"), [([0.5, 0.6], "sum to 1"), ([1.0], "components")])
def test_mixture_refuses_bad_weights(weights: list[float], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Mixture(np.array(weights), np.zeros((1, 2)), np.ones((1, 2)))


def test_mixture_refuses_bad_sds() -> None:
    with pytest.raises(ValueError, match="positive"):
        Mixture(np.array([1.0]), np.zeros((1, 1)), np.zeros((1, 1)))


def test_empirical_scale_is_a_location_scale_transform() -> None:
    e = Empirical(np.array([10.0, 0.0]), np.array([-1.0, 0.0, 1.0, 3.0]), np.array([2.0, 1.0]))
    assert e.quantile(0.51) == pytest.approx([12.0, 1.0])
    assert e.cdf(np.array([12.0, 0.5])) == pytest.approx([0.75, 0.5])
    assert e.mean() == pytest.approx([10.0 + 2 * 0.75, 0.75])
    with pytest.raises(ValueError, match="non-negative"):
        Empirical(np.array([0.0]), np.array([1.0]), -1.0)
    assert Normal(np.array([0.0]), np.array([1.0])).quantile(0.5) == pytest.approx([0.0])
