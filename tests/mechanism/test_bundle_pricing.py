"""Lemma E.2's bundle prices in the engine: prices by hand, R_k, the signal rule, determinism and replay."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from mechanism.bundle_pricing import BundleBook, BundleMenu
from mechanism.engine import Engine, EngineError
from mechanism.platform import Platform
from mechanism.sow import SoW
from tests.conftest import random_sow, small_platform


def bundle_platform(samples: int = 4000) -> Platform:
    """C_m = 2, H = 50; bundle 0 holds rounds 0-3 at 5 a node, bundle 1 rounds 1-2 and 5 at 3, bundle 2 rounds
    0-9 at 20."""
    bundles = [{"price": 5.0, "rounds": [[0, 4]]}, {"price": 3.0, "rounds": [[1, 3], [5, 6]]},
               {"price": 20.0, "rounds": [[0, 10]]}]
    return small_platform(C=6, C_m=2, samples=samples, pricing="stochastic", bundles=bundles)


def menu_at(book: BundleBook, birth: int = 0) -> BundleMenu:
    return book.menu(birth)


def test_a_run_is_priced_at_the_cheapest_bundle_holding_all_its_rounds() -> None:
    book = BundleBook(bundle_platform())
    m = menu_at(book)
    assert m.price(1, 2, 2).tolist() == 6.0  # rounds 1-2: bundles 0, 1 and 2 hold them; 1 is cheapest (3 a node)
    assert m.price(0, 1, 2).tolist() == 5.0  # rounds 0-1: bundle 1 lacks round 0, so bundle 0
    assert m.price(3, 2, 3).tolist() == 40.0  # rounds 3-5: only bundle 2
    assert m.price(np.array([5, 6]), 1, 1).tolist() == [3.0, 20.0]
    assert m.bundle(np.array([1, 0, 3]), 1, np.array([2, 2, 3])).tolist() == [1, 0, 2]
    # Bundle 1 with R_1 = 2.5: a run of 1 node still fits (2.5 + 1 <= 2 C_m = 4), one of 2 does not: bundle 0.
    book.load[1] = 2.5
    m = menu_at(book)
    assert m.price(1, 1, 2).tolist() == 3.0 and m.price(1, 2, 2).tolist() == 10.0
    book.load[:] = 4.0  # every bundle full: the run costs 2 H c
    assert menu_at(book).price(1, 2, 2).tolist() == 200.0
    # Rounds past the last bundle are held by none.
    assert menu_at(book, birth=4).price(np.array([10, 11]), 1, 1).tolist() == [100.0, 100.0]


def test_menu_window_is_checked() -> None:
    m = menu_at(BundleBook(bundle_platform()), birth=2)
    with pytest.raises(ValueError, match="leaves the menu's"):
        m.price(1, 1, 1)
    with pytest.raises(ValueError, match="leaves the menu's"):
        m.price(2, 1, m.cover.shape[1])


def duration_sow(p: Platform, c: int, outcomes: list[list[float]], value: float = 40.0) -> SoW:
    return SoW.parse({"concurrency": c, "value_steps": [[6, value]], "outcomes": outcomes,
                      "signal_mode": "duration"}, p)


def test_a_plan_adds_lambda_c_to_the_bundle_it_was_priced_at() -> None:
    e = Engine(bundle_platform(samples=200))
    assert e.bundles is not None
    q = e.submit("a", duration_sow(e.platform, 2, [[1, 2, 0.25], [0, 1, 0.75]]))
    starts = {(o.arrival, o.duration): (o.start, o.price) for o in q.plan.outcomes}
    # (1, 2) starts at 1 in bundle 1 (6 for 2 nodes); (0, 1) starts at 0: bundle 0 (10) or at 1 in bundle 1 (6).
    assert starts[(1, 2)] == (1, 6.0) and starts[(0, 1)] == (1, 6.0)
    assert e.bundles.load.tolist() == [0.0, 2.0, 0.0]  # 0.25 * 2 + 0.75 * 2
    e.submit("b", duration_sow(e.platform, 2, [[1, 2, 1.0]]))
    assert e.bundles.load.tolist() == [0.0, 4.0, 0.0]  # 2 + 2 <= 2 C_m: still bundle 1
    q = e.submit("c", duration_sow(e.platform, 1, [[1, 2, 1.0]]))
    assert q.plan.outcomes[0].price == 5.0 and e.bundles.load.tolist() == [1.0, 4.0, 0.0]


def test_the_bill_is_the_frozen_bundle_price() -> None:
    e = Engine(bundle_platform(samples=200))
    q = e.submit("a", duration_sow(e.platform, 2, [[0, 2, 1.0]]))
    # Rounds 0-1 cost 10 (bundle 0), rounds 1-2 cost 6 (bundle 1) for the same value: the plan waits a round.
    assert (q.plan.outcomes[0].start, q.plan.outcomes[0].price) == (1, 6.0)
    e.report_arrival("a", "2")
    e.advance()
    e.advance()
    e.report_completion("a")
    e.advance()
    assert (e.ledger.charges[-1].start, e.ledger.charges[-1].amount) == (1, 6.0)


def test_no_bundle_holds_more_than_2_c_m() -> None:
    rng = np.random.default_rng(3)
    e = Engine(bundle_platform(samples=100))
    for i in range(40):
        e.submit(f"j{i}", random_sow(rng, e.platform, max_outcomes=3, signal_mode="duration"))
        if i % 5 == 4:
            e.advance()
    assert e.bundles is not None and float(e.bundles.load.max()) <= 2 * e.platform.C_m + 1e-9


def test_any_signal_but_the_duration_is_refused_and_changes_nothing() -> None:
    e = Engine(bundle_platform(samples=100))
    before = e.digest()
    blind = SoW.parse({"concurrency": 1, "value_steps": [[6, 9.0]], "outcomes": [[0, 1, 0.5], [0, 2, 0.5]]},
                      e.platform)
    with pytest.raises(EngineError, match=r"pricing 'stochastic' needs the duration revealed at arrival .* "
                                          r"use signal_mode 'duration'"):
        e.submit("x", blind)
    assert e.digest() == before and "x" not in e.jobs


def run_engine(p: Platform, seed: int) -> Engine:
    rng = np.random.default_rng(seed)
    e = Engine(p)
    for i in range(12):
        sow = random_sow(rng, p, max_outcomes=3, signal_mode="duration")
        q = e.submit(f"j{i}", sow)
        for g in q.plan.groups:
            if g.start is not None and g.arrival == e.now:
                e.report_arrival(f"j{i}", g.signal)
                break
        e.advance()
    return e


def test_same_inputs_same_digest_and_events() -> None:
    p = bundle_platform(samples=300)
    a, b = run_engine(p, 11), run_engine(p, 11)
    assert a.digest() == b.digest()
    assert [x.to_dict() for x in a.events] == [x.to_dict() for x in b.events]
    assert a.bundles is not None and b.bundles is not None and a.bundles.load.tobytes() == b.bundles.load.tobytes()
    # The bundles' state is part of the digest: a different R_k is a different state.
    b.bundles.load[0] += 1.0
    assert a.digest() != b.digest()


def test_platform_fields() -> None:
    p = small_platform()
    assert "pricing" not in p.model_dump() and "bundles" not in p.model_dump_json()
    q = bundle_platform()
    assert q.model_dump(mode="json")["pricing"] == "stochastic"
    assert Platform.model_validate(q.model_dump(mode="json")) == q
    with pytest.raises(ValidationError, match="pricing='stochastic' needs bundles"):
        small_platform(pricing="stochastic")
    with pytest.raises(ValidationError, match=r"bundles \(1\) are given but pricing is 'exponential'"):
        small_platform(bundles=[{"price": 1.0, "rounds": [[0, 1]]}])
    with pytest.raises(ValidationError, match=r"rounds\[1\]=\[2, 3\) must satisfy 3 <= lo < hi"):
        small_platform(pricing="stochastic", bundles=[{"price": 1.0, "rounds": [[0, 2], [2, 3]]}])
    with pytest.raises(ValidationError, match="Input should be 'exponential' or 'stochastic'"):
        small_platform(pricing="flat")
    with pytest.raises(ValidationError, match="is text, not a number"):
        small_platform(H="4")


def test_a_per_round_unit_price_menu_is_refused_under_bundle_prices() -> None:
    # GetPriceMenu's p(y) of eq. 7 is not what a bundle-priced engine charges: it refuses instead of misleading
    from mechanism.engine import NoUnitPrices

    e = Engine(bundle_platform(samples=300))
    with pytest.raises(NoUnitPrices, match=r"pricing='stochastic' has no per-round unit prices") as exc:
        e.price_menu(0, 3)
    assert exc.value.code == "FAILED_PRECONDITION"
    y, price = Engine(small_platform()).price_menu(0, 3)  # exponential pricing: the menu as before
    assert y.tolist() == [0.0, 0.0, 0.0] and price.size == 3
