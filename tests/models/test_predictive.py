"""The shared predictive distributions against closed forms and scipy."""

import numpy as np
import pytest
from scipy import stats

from models.predictive import Discrete, Empirical, Normal, Predictive, mix


def test_discrete_mean_quantile_and_cdf_follow_their_definitions() -> None:
    d = Discrete(np.array([1.0, 2.0, 4.0]), np.array([[0.2, 0.5, 0.3], [1.0, 0.0, 0.0]]))
    assert d.mean() == pytest.approx([0.2 + 1.0 + 1.2, 1.0])
    assert list(d.quantile(0.2)) == [1.0, 1.0]
    assert list(d.quantile(0.21)) == [2.0, 1.0]
    assert list(d.quantile(0.95)) == [4.0, 1.0]
    assert d.cdf(3.0) == pytest.approx([0.7, 1.0])
    assert d.cdf(0.5) == pytest.approx([0.0, 0.0])
    assert isinstance(d, Predictive)


def test_discrete_point_is_degenerate() -> None:
    d = Discrete.point([3.0, 1.0, 3.0])
    assert list(d.support) == [1.0, 3.0]
    assert list(d.mean()) == [3.0, 1.0, 3.0]
    assert list(d.quantile(0.01)) == [3.0, 1.0, 3.0]


def test_discrete_sample_frequencies_match_probs() -> None:
    d = Discrete(np.array([0.0, 1.0]), np.array([[0.25, 0.75]]))
    draws = d.sample(40_000, np.random.default_rng(1))
    assert draws.shape == (40_000, 1)
    assert draws.mean() == pytest.approx(0.75, abs=0.01)


@pytest.mark.parametrize(("support", "probs", "match"), [
    ([], [[]], "non-empty"),
    ([2.0, 1.0], [[0.5, 0.5]], "strictly increasing"),
    ([1.0, 2.0], [[1.0]], "columns"),
    ([1.0, 2.0], [[0.7, 0.7]], "sum to 1"),
])
def test_discrete_refuses_bad_laws(support: list[float], probs: list[list[float]], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Discrete(np.array(support), np.array(probs))


def test_normal_against_scipy() -> None:
    n = Normal(np.array([0.0, 10.0]), np.array([1.0, 2.0]))
    assert n.quantile(0.975) == pytest.approx(stats.norm.ppf(0.975, [0, 10], [1, 2]))
    assert n.cdf(np.array([1.0, 9.0])) == pytest.approx(stats.norm.cdf([1, 9], [0, 10], [1, 2]))
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        n.quantile(1.0)
    with pytest.raises(ValueError, match="non-negative"):
        Normal(np.array([0.0]), np.array([-1.0]))


def test_empirical_quantile_is_the_order_statistic() -> None:
    e = Empirical(np.array([10.0]), np.array([3.0, -1.0, 0.0, 1.0]))
    assert e.quantile(0.5) == pytest.approx([10.0])
    assert e.quantile(0.51) == pytest.approx([11.0])
    assert e.cdf(10.5) == pytest.approx([0.5])
    assert e.mean() == pytest.approx([10.75])


def test_a_mixture_weights_each_row_on_the_union_of_the_supports() -> None:
    a = Discrete(np.array([1.0, 3.0]), np.array([[0.5, 0.5], [1.0, 0.0]]))
    b = Discrete.point([2.0, 3.0])
    m = mix(a, b, np.array([0.25, 1.0]))
    assert np.array_equal(m.support, [1.0, 2.0, 3.0])
    # row 0: 0.25 (0.5 at 1, 0.5 at 3) + 0.75 (1 at 2); row 1: all of a's point at 1
    assert np.array_equal(m.probs, [[0.125, 0.75, 0.125], [1.0, 0.0, 0.0]])
    assert np.array_equal(mix(a, b, 0.0).probs, [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])  # a scalar weight: b itself
