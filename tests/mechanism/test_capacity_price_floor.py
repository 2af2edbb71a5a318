"""The prices' capacity floor: each round's capacity quantile at least the floor, by hand and against the exact
conditional quantiles; the failure estimates unchanged; truthfulness kept; a model without it dumps as before."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from mechanism.engine import Engine
from mechanism.platform import Platform
from tests.conftest import small_platform
from tests.mechanism.test_capacity import assert_no_misreport_wins, busy_engine, capped, exact_quantiles, model


def dropping(floor: float = 0.0) -> Engine:
    """C = 6 with a model of mean 6, and a drop to 3 reported for round 0."""
    m = model(mean=6.0, phi=0.7, errors=(-2.0, 0.0, 1.0), weights=(0.24, 0.52, 0.24), high=10, price_floor=floor)
    e = Engine(capped(C=6, cap=m, C_m=2, samples=200))
    e.report_capacity(0, 3)
    return e


@pytest.mark.parametrize(("last", "current", "floor"), [(9, None, 7.0), (3, None, 5.0), (6, 2, 6.0), (0, 9, 4.0)])
def test_each_rounds_price_capacity_is_the_exact_quantile_or_the_floor_whichever_is_larger(
        last: int, current: int | None, floor: float) -> None:
    m = model(mean=6.0, phi=0.7, errors=(-2.0, 0.0, 1.0), weights=(0.24, 0.52, 0.24), high=10, price_floor=floor)
    got = m.price_capacities(last, 6, current)
    assert got.tolist() == [max(q, floor) for q in exact_quantiles(m, last, 6, current)]
    assert not got.flags.writeable


def test_the_stationary_price_capacity_has_the_floor_too() -> None:
    m = model(mean=40.0, phi=0.0, errors=(-10.0, 0.0, 10.0), weights=(0.2, 0.6, 0.2), high=60, quantile=0.1)
    assert m.price_capacity() == 30.0
    assert m.model_copy(update={"price_floor": 35.0}).price_capacity() == 35.0
    assert m.model_copy(update={"price_floor": 25.0}).price_capacity() == 30.0  # below the quantile: no effect


@pytest.mark.parametrize(("floor", "match"), [(-1.0, "greater than or equal to 0"),
                                              (2_000_000.0, "less than or equal to 1000000"),
                                              ("6", "text, not a number")])
def test_a_bad_floor_is_refused_naming_the_field(floor: object, match: str) -> None:
    with pytest.raises(ValidationError, match=rf"price_floor[\s\S]*{match}"):
        model(price_floor=floor)


def test_a_model_without_a_floor_dumps_without_the_field_and_one_with_it_round_trips() -> None:
    assert "price_floor" not in model().model_dump() and "price_floor" not in model().model_dump_json()
    p = capped(C=4, cap=model(price_floor=4.0))
    assert p.capacity is not None and p.capacity.model_dump()["price_floor"] == 4.0
    assert Platform.model_validate(json.loads(p.model_dump_json())) == p


def test_with_the_floor_at_c_a_drop_leaves_the_prices_of_fixed_c_and_the_estimates_of_the_model() -> None:
    floored, plain = dropping(floor=6.0), dropping()
    fixed = Engine(small_platform(C=6, C_m=2, samples=200))
    y = np.linspace(0.5, 3.0, fixed.platform.horizon)
    for e in (floored, plain, fixed):
        e.prices.commit(0, y)
    # the drop's quantiles lie at or below 6, so the floor gives every round fixed C's price
    assert np.array_equal(floored.price_menu(0, 8)[1], fixed.price_menu(0, 8)[1])
    assert np.all(plain.price_menu(0, 8)[1] >= floored.price_menu(0, 8)[1])
    assert plain.price_menu(0, 1)[1][0] > floored.price_menu(0, 1)[1][0]  # round 0 (capacity 3) was dearer
    # the failure estimates come from the model, with or without the floor
    for c in (1, 2):
        assert np.array_equal(floored._current_oracle().estimates(c), plain._current_oracle().estimates(c))


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 6), st.sampled_from([2.0, 4.0, 5.0]))
def test_truthful_plan_is_never_beaten_by_a_misreport_with_a_price_floor(seed: int, drop: int, floor: float) -> None:
    # The floor is a constant of the model: the menu still depends on the feed only, so truthfulness holds.
    p = capped(C=4, samples=300, seed=seed % 1000, cap=model(mean=4.0, price_floor=floor))
    rng = np.random.default_rng(seed)
    e = busy_engine(p, rng)
    e.report_capacity(e.now, drop)
    assert_no_misreport_wins(e, p, rng)
