"""docs/stochastic.md section 7: when Lemma 4.3's condition C' < (1 - delta)(C - C_m) holds on the evaluation
platforms, under eq. 7's prices (C' = C_sim) and under bundle prices (relaxed load at most 2 x the bundles' units)."""

from __future__ import annotations

import math

import pytest

from models.workloads import make_workload


def bundle_units(name: str) -> int:
    """floor(floor(C_sim / 2) / C_m) C_m: the most units bundles hold in a round (docs/stochastic.md section 3)."""
    p = make_workload(name).platform
    return (math.floor(p.sim_capacity / 2.0 + 1e-9) // p.C_m) * p.C_m


@pytest.mark.parametrize(("name", "c_sim", "relaxed", "largest_delta"), [
    ("stochastic", 23.76, 20, 1 / 11), ("overload", 15.84, 0, None), ("pipelines", 31.68, 16, 1 / 3)])
def test_lemma_4_3_condition_fails_under_exponential_prices_and_is_weak_under_bundles(
        name: str, c_sim: float, relaxed: int, largest_delta: float | None) -> None:
    p = make_workload(name).platform
    assert p.sim_capacity == pytest.approx(c_sim) and c_sim >= p.C - p.C_m  # no delta > 0 works for eq. 7
    assert 2 * bundle_units(name) == relaxed
    if largest_delta is None:
        assert relaxed == 0  # not even one bundle fits a round
        return
    assert 1.0 - relaxed / (p.C - p.C_m) == pytest.approx(largest_delta)
    exponent = (p.C / p.C_m - 1.0) * largest_delta**2 / (1.0 + largest_delta)
    threshold = p.epsilon / 10.0 + p.eps0
    assert exponent < 0.3 < 7.0 < math.log(p.S_m**2 / threshold)  # the bound (6) is vacuous for a modest constant
