"""Recalibrated laws: R o F by hand, untouched before enough completions, capped where the inner law is, calibrated
coverage, validation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Self

import numpy as np
import pytest

from models.predict.evaluate import make_predictor, replay
from models.predict.jobs import JobTable
from models.predict.recalibrate import Recalibrated, cdf_probs
from models.predictive import Discrete
from tests.models.predict.conftest import make_table

SUPPORT = np.arange(1.0, 101.0)


@dataclass
class Fixed:
    """A predictor that always answers one law (uniform on 1..100 seconds unless told otherwise)."""

    probs: np.ndarray
    name: str = "fixed"

    def fit(self, data: JobTable) -> Self:
        return self

    def observe(self, index: int) -> None:
        pass

    def predict(self, query: Sequence[int]) -> Discrete:
        return Discrete(SUPPORT[: self.probs.size], np.tile(self.probs, (len(query), 1)))


def uniform(k: int) -> Fixed:
    return Fixed(np.full(k, 1.0 / k))


def spaced(runtime: Sequence[int]) -> JobTable:
    """Jobs 1,000 s apart, each done before the next is submitted."""
    return make_table(submit=[1000 * i for i in range(len(runtime))], runtime=runtime)


def learn(model: Recalibrated, n: int) -> None:
    """Predict and complete jobs 0, ..., n - 1 in turn."""
    for i in range(n):
        model.predict([i])
        model.observe(i)


def test_the_recalibrated_cdf_is_the_empirical_pit_cdf_of_the_raw_cdf() -> None:
    # Raw law uniform on {1, 2, 3, 4}; runtimes 1, 1, 2, 4 give u = 0.25, 0.25, 0.5, 1.0, so
    # R(0.25) = 1/2, R(0.5) = 3/4, R(0.75) = 3/4, R(1) = 1: probabilities 1/2, 1/4, 0, 1/4.
    table = spaced([1, 1, 2, 4, 3])
    model = Recalibrated(uniform(4), min_observed=4).fit(table)
    learn(model, 4)
    np.testing.assert_allclose(model.predict([4]).probs, [[0.5, 0.25, 0.0, 0.25]])


def test_laws_are_the_inner_laws_until_min_observed_completions() -> None:
    table = spaced([1, 1, 1, 1])
    model = Recalibrated(uniform(4), min_observed=3).fit(table)
    learn(model, 2)
    np.testing.assert_array_equal(model.predict([2]).probs, [[0.25] * 4])


def test_a_job_observed_without_a_prediction_adds_no_pit() -> None:
    table = spaced([1, 1, 1])
    model = Recalibrated(uniform(4), min_observed=1).fit(table)
    model.observe(0)
    np.testing.assert_array_equal(model.predict([1]).probs, [[0.25] * 4])


def test_a_mapped_law_puts_no_mass_above_the_last_atom_of_the_inner_law() -> None:
    # the second row's law ends at its third atom; a mapped CDF short of 1 there must not spill onto the fourth
    probs = np.array([[0.25, 0.25, 0.25, 0.25], [0.5, 0.25, 0.25, 0.0]])
    mapped = np.array([[0.1, 0.2, 0.3, 0.4], [0.4, 0.8, 0.9, 0.9]])
    np.testing.assert_allclose(cdf_probs(mapped, probs), [[0.1, 0.1, 0.1, 0.7], [0.4, 0.4, 0.2, 0.0]])


def test_a_recalibrated_law_stays_capped_when_its_cdf_sums_short_of_one() -> None:
    # four u's of exactly 1.0, then a law of ten 0.1's on 12 atoms, whose cumulative sum is 0.999...: R maps every
    # atom to 0, and the whole mass goes to the law's last atom (10), not the support's (12)
    table = spaced([4, 4, 4, 4, 10])
    model = Recalibrated(uniform(4), min_observed=4).fit(table)
    learn(model, 4)
    assert isinstance(model.inner, Fixed)
    model.inner.probs = np.array([0.1] * 10 + [0.0, 0.0])
    assert np.cumsum(model.inner.probs)[-1] < 1.0
    np.testing.assert_array_equal(model.predict([4]).probs, [[0.0] * 9 + [1.0, 0.0, 0.0]])


def test_recalibration_brings_a_miscalibrated_law_to_its_stated_coverage() -> None:
    rng = np.random.default_rng(7)
    runtime = np.minimum(100, np.ceil(rng.lognormal(3.0, 0.6, size=3000))).astype(int).tolist()
    table = spaced(runtime)
    covered: dict[str, list[bool]] = {"raw": [], "recalibrated": []}
    for name, model in (("raw", uniform(100)), ("recalibrated", Recalibrated(uniform(100), min_observed=200))):
        def keep(batch: list[int], law: Discrete, out: list[bool] = covered[name]) -> None:
            out.extend(bool(table.runtime[i] <= q) for i, q in zip(batch, law.quantile(0.9), strict=True))
        replay(table, model, keep)
    late = slice(500, None)  # past the first recalibration's noise
    assert np.mean(covered["raw"][late]) == pytest.approx(1.0, abs=0.01)  # the uniform law is far too wide
    assert np.mean(covered["recalibrated"][late]) == pytest.approx(0.9, abs=0.02)


def test_learned_calibrated_is_registered_by_name() -> None:
    model = make_predictor("learned-calibrated")
    assert isinstance(model, Recalibrated)
    assert model.name == "learned-calibrated"


@pytest.mark.parametrize(("min_observed", "window", "match"), [
    (0, 10, "min_observed=0 must be >= 1"),
    (20, 10, "window=10 must be >= min_observed=20"),
])
def test_bad_settings_are_refused(min_observed: int, window: int, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Recalibrated(uniform(4), min_observed=min_observed, window=window)


def test_observe_before_fit_is_refused() -> None:
    with pytest.raises(ValueError, match="must be fitted"):
        Recalibrated(uniform(4)).observe(0)
