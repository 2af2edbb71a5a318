"""The platform's own reserve (docs/model.md 10.9): the rule by hand, the oracle it gives, prices of fixed C,
truthfulness kept, replay identity, and a platform without it unchanged."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from mechanism.engine import Engine
from mechanism.failure import MonteCarloOracle
from mechanism.platform import Platform
from mechanism.reserve import Reserve
from mechanism.sow import SoW
from tests.conftest import small_platform
from tests.mechanism.test_capacity import assert_no_misreport_wins, busy_engine, model, one_round_sow


def reserved(C: int = 4, up: float = 2.5, down: float = 1.0, most: int = 3, **kw: Any) -> Platform:
    return small_platform(C=C, reserve=Reserve(up=up, down=down, most=most), **kw)


def overloaded_engine(p: Platform) -> Engine:
    """Two jobs of 1 node start in round 0 and run 3 rounds; round 0's capacity is reported at 1, so step 3 of
    round 0 removes the newer one."""
    e = Engine(p)
    for i in range(2):  # worth 40 only if done by round 3: each starts at once
        e.submit(f"j{i}", SoW.parse({"concurrency": 1, "value_steps": [[3, 40.0]], "outcomes": [[0, 3, 1.0]]}, p))
        e.report_arrival(f"j{i}", None)
    e.report_capacity(0, 1)
    return e


# ---- the rule ----

@pytest.mark.parametrize(("before", "overloaded", "after"), [
    (0.0, True, 2.5), (2.5, True, 3.0), (3.0, True, 3.0),  # up, capped at most
    (3.0, False, 2.0), (0.5, False, 0.0), (0.0, False, 0.0),  # down, floored at 0
])
def test_the_reserve_rises_by_up_after_an_overload_and_falls_by_down_after_any_other_round_within_0_and_most(
        before: float, overloaded: bool, after: float) -> None:
    assert Reserve(up=2.5, down=1.0, most=3).next(before, overloaded) == after


def test_the_oracle_holds_back_the_whole_nodes_of_the_reserve_as_a_point_priced_at_c() -> None:
    rule = Reserve(up=1.0, down=0.5, most=7)
    assert rule.oracle_model(8, 0.9) is None  # under one node: fixed C
    m = rule.oracle_model(8, 2.7)
    assert m is not None and (m.mean, m.low, m.high, m.errors, m.price_floor) == (6.0, 6, 6, (0.0,), 8.0)


@pytest.mark.parametrize(("field", "value", "match"), [
    ("up", 0.0, "greater than 0"), ("down", -1.0, "greater than 0"), ("most", 0, "greater than or equal to 1"),
    ("up", "2", "text, not a number"), ("down", True, "a boolean, not a number"),
    ("up", float("inf"), "finite number"),
])
def test_a_bad_rule_is_refused_naming_the_field(field: str, value: object, match: str) -> None:
    fields: dict[str, object] = {"up": 1.0, "down": 1.0, "most": 2, field: value}
    with pytest.raises(ValidationError, match=rf"{field}[\s\S]*{match}"):
        Reserve(**fields)


def test_a_reserve_of_c_or_more_nodes_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"reserve.most=4 exceeds the bound C - 1 = 3"):
        reserved(C=4, most=4)


def test_a_reserve_beside_a_capacity_model_is_refused() -> None:
    with pytest.raises(ValidationError, match="reserve needs a fixed capacity"):
        small_platform(C=4, capacity=model(mean=4.0), reserve=Reserve(up=1.0, down=1.0, most=3))


def test_a_platform_without_a_reserve_dumps_without_the_field_and_one_with_it_round_trips() -> None:
    assert "reserve" not in small_platform().model_dump() and "reserve" not in small_platform().model_dump_json()
    p = reserved()
    assert Platform.model_validate(json.loads(p.model_dump_json())) == p


# ---- the engine ----

def test_an_overload_raises_the_reserve_and_quiet_rounds_lower_it() -> None:
    e = overloaded_engine(reserved(up=2.5, down=1.0))
    assert e.reserve == 0.0
    events = e.advance().events
    assert [(ev.type, ev.job, ev.data["reason"]) for ev in events if ev.type in ("cancel", "evict")] == [
        ("cancel", "j1", "overload")]
    assert e.reserve == 2.5  # H_1
    e.advance()  # capacity stays 1 (the last report), j0 alone fits: no overload
    assert e.reserve == 1.5


def test_after_an_overload_the_oracle_holds_back_floor_h_nodes_by_hand() -> None:
    # Round 1 with H_1 = 2.5: the oracle assumes C - 2 = 2 nodes while j0 (1 node) runs in rounds 1-2. A new job
    # of 1 node never fails; one of 2 nodes fails if it overlaps j0 (starts 0 and 1 rounds ahead) and not after; one
    # of 3 nodes fails everywhere. Without the reserve (C = 4) none of them fails.
    e = overloaded_engine(reserved(up=2.5, down=0.25))
    e.advance()
    assert e.reserve == 2.5
    est = {c: e._current_oracle().estimates(c) for c in (1, 2, 3)}
    assert not est[1].any()
    assert np.all(est[2][:2] == 1.0) and not est[2][2:].any()
    assert np.all(est[3] == 1.0)
    plain = MonteCarloOracle(e.platform.model_copy(update={"reserve": None}))
    plain.reset(e.now, e.residuals())
    assert not any(plain.estimates(c).any() for c in (1, 2, 3))
    for _ in range(9):  # quiet rounds: 2.5 - 9 * 0.25 = 0.25 < 1, the oracle is fixed C's again
        e.advance()
    assert e.reserve == 0.25 and not e._current_oracle().estimates(3).any()


def test_the_reserve_leaves_the_prices_of_fixed_c() -> None:
    with_reserve, fixed = overloaded_engine(reserved()), overloaded_engine(small_platform(C=4))
    for e in (with_reserve, fixed):
        e.advance()
    assert with_reserve.reserve == 2.5
    assert np.array_equal(with_reserve.price_menu(1, 6)[1], fixed.price_menu(1, 6)[1])


def test_a_reserve_that_never_reaches_a_node_quotes_as_fixed_c() -> None:
    # Point laws realized as declared: no round overloads, the reserve stays 0 and every event is fixed C's.
    engines = [Engine(small_platform(C=4, samples=300)), Engine(reserved(C=4, up=0.5, down=0.5, samples=300))]
    for e in engines:
        ends: dict[int, list[str]] = {}
        for t, c in enumerate([1, 2, 2, 1, 2, 2, 1, 2]):
            e.submit(f"t{t}", one_round_sow(e.platform, c, 2))
            e.report_arrival(f"t{t}", None)
            start = e.jobs[f"t{t}"].plan.start_for(t, None)
            if start is not None:
                ends.setdefault(start + 1, []).append(f"t{t}")
            for job in ends.pop(e.now, []):
                e.report_completion(job)
            e.advance()
    fixed, reserve = engines
    assert reserve.reserve == 0.0
    assert [ev.to_dict() for ev in fixed.events] == [ev.to_dict() for ev in reserve.events]
    assert not any(ev.data.get("reason") == "overload" for ev in fixed.events)


def test_replaying_the_same_commands_gives_the_same_reserve_and_digest_and_the_reserve_is_hashed() -> None:
    def run(p: Platform) -> Engine:
        e = overloaded_engine(p)
        for t in range(2):
            e.submit(f"k{t}", one_round_sow(p, 1 + t % 2, 2))
            e.advance()
        return e

    first, again = run(reserved()), run(reserved())
    assert first.reserve == again.reserve and first.reserve is not None and first.reserve > 0
    assert first.digest() == again.digest()
    moved = run(reserved())
    moved.reserve = 0.0  # the same jobs and events, another reserve: another state
    assert moved.digest() != first.digest()


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 4))
def test_truthful_plan_is_never_beaten_by_a_misreport_with_a_reserve(seed: int, drop: int) -> None:
    # The reserve of round t is fixed before its first quote by the rounds before it: the menu a job sees at birth
    # depends on no report of its own, so section 9's argument holds as with a fixed capacity.
    p = reserved(C=4, up=2.0, down=0.5, most=3, samples=300, seed=seed % 1000)
    rng = np.random.default_rng(seed)
    e = busy_engine(p, rng)
    e.report_capacity(e.now, drop)
    e.advance()
    assert_no_misreport_wins(e, p, rng)
