"""The capacity model's adaptive level (level_weight lam > 0): the update by hand, the engine's level from the feed,
the oracles and per-round C' at the level against exact enumeration, truthfulness; lam = 0 is the fixed mean."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from mechanism.capacity import CapacityModel
from mechanism.engine import Engine
from mechanism.failure import MonteCarloOracle
from mechanism.failure_exact import ExactOracle
from mechanism.failure_literal import literal_failure
from mechanism.platform import Platform, hoeffding_radius
from tests.conftest import random_sow, small_platform
from tests.mechanism.test_capacity import assert_no_misreport_wins, exact_quantiles, model
from tests.mechanism.test_failure import random_residuals


def levelled(lam: float = 0.5, **kw: object) -> CapacityModel:
    params: dict[str, object] = {"mean": 4.0, "phi": 0.8, "errors": (-1.0, 0.0, 1.0), "weights": (0.2, 0.6, 0.2),
                                 "high": 6, "level_weight": lam}
    params.update(kw)
    return model(**params)  # type: ignore[arg-type]


def platform(lam: float = 0.5, samples: int = 4000, seed: int = 7, **kw: object) -> Platform:
    return small_platform(C=4, samples=samples, seed=seed, capacity=levelled(lam), **kw)


# ---- the model ----

def test_the_level_update_smooths_the_clamped_report() -> None:
    m = levelled(0.25)
    assert m.next_level(4.0, 6) == 0.75 * 4.0 + 0.25 * 6  # mu_{t+1} = (1 - lam) mu_t + lam C_t
    assert m.next_level(4.5, 2) == 0.75 * 4.5 + 0.25 * 2
    assert m.next_level(6.0, 100) == 6.0  # the report is read clamped into [low, high] = [0, 6]
    assert levelled(0.9, low=2).next_level(2.0, 0) == 2.0
    assert m.at_level(5.5).mean == 5.5 and m.at_level(9.0).mean == 6.0 and m.at_level(-1.0).mean == 0.0
    assert m.at_level(None) is m
    fixed = levelled(0.0)
    assert fixed.at_level(5.5) is fixed  # lam = 0: the fixed mean whatever the level


def test_a_fixed_mean_dumps_as_before_and_a_level_weight_round_trips() -> None:
    assert "level_weight" not in levelled(0.0).model_dump() and "level_weight" not in levelled(0.0).model_dump_json()
    m = levelled(0.3)
    assert m.model_dump()["level_weight"] == 0.3 and CapacityModel.model_validate(m.model_dump()) == m
    assert CapacityModel.model_validate_json(m.model_dump_json()) == m


@pytest.mark.parametrize(("lam", "match"), [(1.0, "level_weight"), (-0.1, "level_weight"), ("x", "level_weight")])
def test_bad_level_weights_are_refused(lam: object, match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        levelled(lam)  # type: ignore[arg-type]


def test_the_one_step_law_at_a_level_reverts_toward_that_level() -> None:
    m = levelled(0.5, phi=0.5)
    d = m.at_level(5.0).path_distribution(last=2, horizon=1)
    # X_1 = 5 + 0.5 (2 - 5) + e = 3.5 + e: nodes floor(2.5 + 1/2) = 3, 4, floor(4.5 + 1/2) = 5
    assert d == pytest.approx({(3,): 0.2, (4,): 0.6, (5,): 0.2})


# ---- the engine's level ----

def test_the_engine_level_smooths_the_reports_and_holds_the_last_one() -> None:
    e = Engine(platform(0.5))
    assert e.capacity_level == 4.0  # mu_0 = mean
    e.report_capacity(0, 2)
    e.advance()
    assert e.capacity_level == 3.0
    e.advance()  # no report: the last capacity (2) stays
    assert e.capacity_level == 2.5
    e.report_capacity(2, 99)  # read as high = 6
    e.advance()
    assert e.capacity_level == 4.25
    assert Engine(platform(0.0)).capacity_level is None and Engine(small_platform()).capacity_level is None


def test_prices_use_the_quantiles_at_the_current_level() -> None:
    p = platform(0.5, C_m=2, samples=200)
    e = Engine(p)
    for c in (1, 1, 1):
        e.report_capacity(e.now, c)
        e.advance()
    mu = 4.0
    for _ in range(3):
        mu = 0.5 * mu + 0.5 * 1
    assert e.capacity_level == mu
    m = p.capacity
    assert m is not None
    want = np.array(exact_quantiles(m.at_level(mu), 1, p.horizon)) * (1 - p.epsilon / 10)
    got = e.price_capacities(e.now, p.horizon)
    assert got is not None and np.allclose(got, np.maximum(want, 1 - p.epsilon / 10), rtol=1e-12)
    fixed_mean = Engine(platform(0.0, C_m=2, samples=200))
    for c in (1, 1, 1):
        fixed_mean.report_capacity(fixed_mean.now, c)
        fixed_mean.advance()
    stale = fixed_mean.price_capacities(e.now, p.horizon)
    assert stale is not None and not np.array_equal(got, stale)


def engine_after_drops(p: Platform, rng: np.random.Generator) -> Engine:
    e = Engine(p)
    for i, c in enumerate((2, 1, 2)):
        e.submit(f"bg{i}", random_sow(rng, p, max_outcomes=2))
        e.report_capacity(e.now, c)
        e.advance()
    return e


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_engine_quotes_at_the_level_are_within_the_hoeffding_bound_of_exact_enumeration(seed: int) -> None:
    p = platform(0.5, samples=6000, seed=seed, D_m=2, S_m=3)
    e = engine_after_drops(p, np.random.default_rng(seed))
    assert e.capacity_level is not None and e.capacity_level < 3.0
    rs = e.residuals()
    exact = ExactOracle(p)
    exact.reset(e.now, rs, e.capacity_last, None, e.capacity_level)
    assert exact.combinations() <= exact.max_combinations
    stale = ExactOracle(p)
    stale.reset(e.now, rs, e.capacity_last)  # the fitted mean 4 instead of the level
    radius = hoeffding_radius(p.sample_count, p.D_m, p.S_m, p.delta0)
    for c in (1, 2, 3):
        diff = np.abs(e._current_oracle().estimates(c) - exact.estimates(c))
        assert diff.max() <= radius, (c, diff.max(), radius)
    assert not np.array_equal(exact.estimates(2), stale.estimates(2))  # the level matters here


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 4), st.integers(1, 3), st.floats(0.0, 6.0),
       st.one_of(st.none(), st.integers(0, 9)))
def test_sampled_estimates_at_a_level_equal_the_literal_procedure(seed: int, n_jobs: int, c: int, level: float,
                                                                  current: int | None) -> None:
    p = platform(0.5, samples=400, seed=seed % 89)
    rs = random_residuals(np.random.default_rng(seed), p, n_jobs)
    oracle = MonteCarloOracle(p)
    oracle.reset(3, rs, 2, current, level)
    est = oracle.estimates(c)
    rng = np.random.default_rng(seed + 1)
    for _ in range(4):
        s, d = int(rng.integers(0, p.S_m)), int(rng.integers(1, p.D_m + 1))
        assert est[s, d - 1] == literal_failure(p, 3, rs, c, s, d, p.sample_count, 2, current, level)


def test_a_level_changes_nothing_at_level_weight_zero() -> None:
    p = platform(0.0, samples=500, seed=3)
    rs = random_residuals(np.random.default_rng(3), p, n_jobs=4)
    a, b = MonteCarloOracle(p), MonteCarloOracle(p)
    a.reset(2, rs, 1)
    b.reset(2, rs, 1, None, 0.5)
    assert np.array_equal(a.estimates(2), b.estimates(2))


def test_replaying_the_feed_rebuilds_the_level_and_the_digest() -> None:
    p = platform(0.4, samples=300, seed=5, C_m=3)
    rng = np.random.default_rng(5)
    sows = [random_sow(rng, p) for _ in range(4)]

    def run() -> tuple[float | None, str, list[tuple[float | None, ...]]]:
        e = Engine(p)
        out = []
        for i, sow in enumerate(sows):
            out.append(tuple(o.failure_raw for o in e.submit(f"j{i}", sow).plan.outcomes))
            e.report_capacity(e.now, (3, 1, 6, 2)[i])
            e.advance()
        return e.capacity_level, e.digest(), out

    assert run() == run()
    level_digest = run()[1]
    e = Engine(platform(0.0, samples=300, seed=5, C_m=3))
    for i, sow in enumerate(sows):
        e.submit(f"j{i}", sow)
        e.report_capacity(e.now, (3, 1, 6, 2)[i])
        e.advance()
    assert e.digest() != level_digest


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 6))
def test_truthful_plan_is_never_beaten_by_a_misreport_with_an_adaptive_level(seed: int, drop: int) -> None:
    # The level is a function of the feed (exogenous), so the menu and the estimates are as in section 9.
    p = platform(0.5, samples=300, seed=seed % 1000)
    rng = np.random.default_rng(seed)
    e = Engine(p)
    for i in range(int(rng.integers(0, 5))):
        e.submit(f"bg{i}", random_sow(rng, p))
        if rng.random() < 0.5:
            e.report_capacity(e.now, int(rng.integers(0, 7)))
            e.advance()
    e.report_capacity(e.now, drop)
    assert_no_misreport_wins(e, p, rng)
