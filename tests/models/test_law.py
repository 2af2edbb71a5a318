"""The one law type: its scalar operations on Z against brute force and closed forms, its rows as a Predictive."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from models.law import Law
from models.predictive import Discrete, Mixture, Predictive


@st.composite
def atom_laws(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    n = draw(st.integers(1, 8))
    support = np.cumsum(draw(st.lists(st.integers(1, 50), min_size=n, max_size=n))).astype(np.float64)
    weights = np.asarray(draw(st.lists(st.integers(0, 9), min_size=n, max_size=n)), dtype=np.float64)
    weights[draw(st.integers(0, n - 1))] += 1.0
    return support, weights / weights.sum()


@settings(max_examples=150, deadline=None)
@given(atom_laws(), st.floats(0.001, 0.999), st.floats(-5.0, 500.0))
def test_atom_law_scalars_are_the_discrete_laws_and_brute_force(law_: tuple[np.ndarray, np.ndarray], q: float,
                                                                  x: float) -> None:
    support, probs = law_
    law, discrete = Law.atoms(support, probs), Discrete(support, probs)
    assert law.z_quantile(q) == discrete.quantile(q)[0]
    assert law.z_cdf(x) == pytest.approx(discrete.cdf(x)[0], abs=1e-12)
    pairs = list(zip(support, probs, strict=True))
    assert law.z_excess(x) == pytest.approx(sum(p * max(s - x, 0.0) for s, p in pairs), abs=1e-9)
    above = [(s, p) for s, p in pairs if s > x and p > 0]  # Z given Z > x, enumerated
    tail = law.z_quantile_above(x, q)
    if not above:
        assert tail is None
    else:
        total, running = sum(p for _, p in above), 0.0
        expected = above[-1][0]
        for s, p in above:
            running += p
            if running / total >= q - 1e-9:
                expected = s
                break
        assert tail == expected


@settings(max_examples=150, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=40), st.integers(0, 10**6))
def test_valid_atoms_is_the_checked_law_bit_for_bit(raw: list[float], shift: int) -> None:
    # probabilities that sum to 1 only up to rounding, as a cluster's spread vector does
    total = sum(raw) or 1.0
    probs = [p / total for p in raw] if sum(raw) else [1.0] + [0.0] * (len(raw) - 1)
    support = [float(shift + 3 * k) for k in range(len(probs) - 1)] + [float("inf")]
    fast, checked = Law.valid_atoms(support, probs), Law.atoms(np.array(support), np.array(probs))
    assert fast._support == checked._support and fast._cum == checked._cum
    assert np.array_equal(fast.support, checked.support) and np.array_equal(fast.probs, checked.probs)
    assert fast._discrete().probs.shape == checked._discrete().probs.shape == (1, len(probs))
    assert fast.support.dtype == checked.support.dtype == np.float64
    assert fast.loc is checked.loc and fast.scale is checked.scale


def _quantile_above_in_numpy(support: np.ndarray, probs: np.ndarray, x: float, q: float) -> float | None:
    """The reference conditional quantile: numpy's cumulative sums over numpy's total, searched by numpy."""
    first = int(np.searchsorted(support, x, side="right"))
    mass = probs[first:].copy()
    if mass.sum() <= 1e-12:
        return None
    cum = np.cumsum(mass) / mass.sum()
    return float(support[first:][min(int(np.searchsorted(cum, q - 1e-12)), cum.size - 1)])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=60), st.floats(0.001, 0.999), st.floats(-5.0, 200.0))
def test_quantile_above_in_lists_is_the_numpy_answer_bit_for_bit(raw: list[float], q: float, x: float) -> None:
    weights = np.asarray(raw) + 1e-4
    probs = weights / weights.sum()
    support = 1.0 + 3.0 * np.arange(probs.size, dtype=np.float64)
    assert Law.atoms(support, probs).z_quantile_above(x, q) == _quantile_above_in_numpy(support, probs, x, q)


def test_a_job_law_by_hand() -> None:
    # X = 10 w.p. 0.2, 100 w.p. 0.3, 1000 w.p. 0.5
    law = Law.atoms(np.array([10.0, 100.0, 1000.0]), np.array([0.2, 0.3, 0.5]))
    assert [law.z_quantile(q) for q in (0.1, 0.2, 0.4, 0.5, 0.9)] == [10.0, 10.0, 100.0, 100.0, 1000.0]
    assert [law.z_cdf(x) for x in (5, 10, 99, 100, 1000)] == pytest.approx([0.0, 0.2, 0.2, 0.5, 1.0])
    assert law.z_excess(100) == pytest.approx(0.5 * 900)
    assert law.z_quantile_above(10, 0.5) == 1000.0  # given X > 10: 100 w.p. 0.375, 1000 w.p. 0.625
    assert law.z_quantile_above(10, 0.3) == 100.0
    assert law.z_quantile_above(1000, 0.5) is None
    assert law.mean().tolist() == pytest.approx([2 + 30 + 500])


def test_mixture_law_scalars_match_the_mixture_and_integration() -> None:
    w, m, s = np.array([0.7, 0.3]), np.array([0.0, -3.0]), np.array([1.0, 2.0])
    law = Law.mixture(w, m, s, loc=np.zeros(1), scale=np.ones(1))
    mixture = Mixture(w, m[None, :], s[None, :])
    assert law.z_quantile(0.02) == mixture.quantile(0.02)[0]
    assert law.z_cdf(-1.0) == pytest.approx(0.7 * stats.norm.cdf(-1.0) + 0.3 * stats.norm.cdf(-1.0, -3.0, 2.0))
    density = lambda z: float(0.7 * stats.norm.pdf(z) + 0.3 * stats.norm.pdf(z, -3.0, 2.0))  # noqa: E731
    excess = integrate.quad(lambda z: (z - 0.5) * density(z), 0.5, np.inf)[0]
    assert law.z_excess(0.5) == pytest.approx(excess, rel=1e-7)
    tail = law.z_quantile_above(0.5, 0.4)
    assert tail is not None
    given = (mixture.cdf(tail)[0] - mixture.cdf(0.5)[0]) / (1.0 - mixture.cdf(0.5)[0])
    assert given == pytest.approx(0.4, abs=1e-8)


def test_the_capacity_constraint_is_the_error_laws_formula_bit_for_bit() -> None:
    # Alg. 2 as it was written before the law type was shared: F + mu + kappa sigma Φ_Z^{-1}(p), Φ_Z^{-1} the
    # mixture's own bisection; the law's quantile is loc + scale Φ_Z^{-1}(q)
    rng = np.random.default_rng(3)
    sigma, mu, forecast = rng.uniform(1, 5, 24), rng.normal(0, 2, 24), rng.uniform(50, 100, 24)
    w, m, s = np.array([0.6, 0.4]), np.array([-0.5, 0.75]), np.array([0.8, 1.3])
    law = Law.mixture(w, m, s, mu, sigma)
    zq = float(Mixture(w, m[None, :], s[None, :]).quantile(0.05)[0])
    assert np.array_equal(forecast + law.loc + 1.5 * law.scale * law.z_quantile(0.05),
                          forecast + mu + 1.5 * sigma * zq)
    assert np.array_equal(law.quantile(0.05), mu + sigma * zq)
    assert law.cdf(law.quantile(0.05)) == pytest.approx(np.full(24, 0.05), abs=1e-9)
    assert isinstance(law, Predictive) and len(law) == 24
    draws = law.sample(4000, np.random.default_rng(0))
    assert draws.shape == (4000, 24)
    assert np.allclose(draws.mean(axis=0), law.mean(), atol=0.35)


def test_a_law_refuses_a_standard_law_of_several_rows_mismatched_rows_and_negative_scales() -> None:
    with pytest.raises(ValueError, match="z has 2 rows"):
        Law(Discrete.point([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"loc has shape \(2,\) and scale \(3,\)"):
        Law(Discrete.point([1.0]), np.zeros(2), np.ones(3))
    with pytest.raises(ValueError, match="scale must be finite and non-negative"):
        Law(Discrete.point([1.0]), np.zeros(1), -np.ones(1))
    with pytest.raises(ValueError, match="support and probs are defined for atoms only"):
        _ = Law.mixture(np.ones(1), np.zeros(1), np.ones(1), np.zeros(1), np.ones(1)).support
