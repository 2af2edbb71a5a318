"""Prices: eq. 7 at hand-computed points, frozen menus, y never decreasing, monotone in c and d."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mechanism.engine import Engine
from mechanism.platform import Platform
from mechanism.pricing import PriceBook, plan_usage, unit_price
from tests.conftest import random_sow, small_platform

P = Platform(C=100, C_m=10, D_m=4, S_m=8, H=10.0, epsilon=0.1)  # C' = 99, 4 H D_m = 160


def test_unit_price_at_zero_usage_is_one_over_two_dm() -> None:
    assert float(unit_price(0.0, P)) == pytest.approx(1.0 / 8.0, rel=1e-15)


def test_unit_price_at_simulator_capacity_is_two_h() -> None:
    assert float(unit_price(99.0, P)) == pytest.approx(20.0, rel=1e-12)


def test_the_unit_price_at_half_capacity_is_the_root_of_4hdm_over_2dm() -> None:
    # p(49.5) = 160^(1/2) / 8 = 12.6491106... / 8
    assert float(unit_price(49.5, P)) == pytest.approx(math.sqrt(160.0) / 8.0, rel=1e-12)


def test_window_price_is_c_times_sum_of_unit_prices() -> None:
    book = PriceBook(P)
    book.commit(0, np.array([0.0, 10.0, 20.0, 30.0]))
    menu = book.menu(0)
    expected = 3 * sum(float(unit_price(y, P)) for y in (10.0, 20.0, 30.0))
    assert float(menu.price(1, 3, 3)) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(("start", "duration"), [
    (-1, 2), (5, 0), (P.horizon - 1, 2), (np.array([0, 3]), np.array([1, P.horizon])),
    (np.array([-1, 2]), np.array([1, 1])),  # one window before birth among valid ones (every start is checked)
    (np.array([0, 2]), np.array([0, 3])),  # one empty window among valid ones (every duration is checked)
])
def test_a_window_outside_the_menu_or_empty_is_refused(start: object, duration: object) -> None:
    with pytest.raises(ValueError, match=r"leaves the menu's \d+ rounds or is empty"):
        PriceBook(P).menu(0).price(start, 1, duration)  # type: ignore[arg-type]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0.0, 1.5), min_size=12, max_size=12), st.integers(1, 5))
def test_a_window_price_is_its_unit_prices_added_left_to_right_alone_or_among_many(shares: list[float], c: int) -> None:
    # The charge (one window) must equal the quote's price of the same window (a table of many) bit for bit.
    p = Platform(C=10, C_m=10, D_m=4, S_m=8, H=1e12, samples=10)
    book = PriceBook(p)
    book.commit(0, np.array(shares) * p.sim_capacity)
    menu = book.menu(0)
    starts, durations = np.meshgrid(np.arange(p.S_m), np.arange(1, p.D_m + 1), indexing="ij")
    table = menu.price(starts, c, durations)
    for s in range(p.S_m):
        for d in range(1, p.D_m + 1):
            total = 0.0
            for x in menu.unit[s:s + d].tolist():
                total += x
            assert float(menu.price(s, c, d)) == float(table[s, d - 1]) == c * total


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.3, 1.0, 1.5, 2.5, 4.0]), min_size=12, max_size=12), st.integers(1, 5),
       st.lists(st.integers(1, 4), min_size=0, max_size=9), st.integers(1, 8), st.floats(1.0, 1e12))
def test_the_compiled_start_prices_are_the_menus_price_of_every_start_and_duration_bit_for_bit(
        shares: list[float], c: int, durations: list[int], n_starts: int, h: float) -> None:
    # The plan's grid of window prices (compiled) against Menu.price's plain cumsum table, unit prices spread over
    # up to 50 orders of magnitude (where a different order of additions would round differently).
    p = Platform(C=10, C_m=10, D_m=4, S_m=8, H=h, samples=10)
    book = PriceBook(p)
    book.commit(0, np.array(shares) * p.sim_capacity)
    menu = book.menu(0)
    d = np.array(durations, dtype=np.int64)
    want = menu.price(np.arange(n_starts, dtype=np.int64)[:, None], c, d[None, :])
    got = menu.start_prices(n_starts, c, d)
    assert got.shape == want.shape and got.tobytes() == want.tobytes()


@pytest.mark.parametrize(("n_starts", "durations"), [(P.horizon + 1, [1]), (2, [P.horizon]), (3, [1, 0])])
def test_start_prices_outside_the_menu_or_empty_are_refused(n_starts: int, durations: list[int]) -> None:
    with pytest.raises(ValueError, match=r"leaves the menu's \d+ rounds or is empty"):
        PriceBook(P).menu(0).start_prices(n_starts, 1, np.array(durations, dtype=np.int64))


def test_menu_is_frozen_at_birth() -> None:
    book = PriceBook(P)
    menu = book.menu(0)
    before = float(menu.price(0, 2, 4))
    book.commit(0, np.full(8, 50.0))
    assert float(menu.price(0, 2, 4)) == before
    assert float(book.menu(0).price(0, 2, 4)) > before


def test_plan_usage_adds_c_times_probability_over_each_window() -> None:
    inc = plan_usage(2, np.array([0.25, 0.75]), np.array([1, -1]), np.array([2, 3]), 5)
    assert inc.tolist() == [0.0, 0.5, 0.5, 0.0, 0.0]


def test_negative_usage_increment_is_refused_and_changes_nothing() -> None:
    book = PriceBook(P)
    with pytest.raises(ValueError, match="non-negative"):
        book.commit(0, np.array([1.0, -1.0]))
    assert book.usage(0, 2).tolist() == [0.0, 0.0]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31), st.integers(1, 12))
def test_prices_never_decrease_as_sows_are_admitted(seed: int, n_jobs: int) -> None:
    p = small_platform(C=6, samples=200, seed=seed % 1000)
    rng = np.random.default_rng(seed)
    engine = Engine(p)
    horizon = 3 * p.horizon
    last_y = engine.price_menu(0, horizon)[0]
    for i in range(n_jobs):
        engine.submit(f"j{i}", random_sow(rng, p))
        if rng.random() < 0.3:
            engine.advance()
        y = engine.price_menu(0, horizon)[0]
        assert np.all(y[engine.now:] >= last_y[engine.now:])
        last_y = y


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0.0, 200.0), min_size=8, max_size=8), st.integers(0, 7), st.integers(1, 9),
       st.integers(1, 3))
def test_price_is_monotone_in_concurrency_and_duration(ys: list[float], s: int, c: int, d: int) -> None:
    book = PriceBook(P)
    book.commit(0, np.array(ys))
    menu = book.menu(0)
    d = min(d, P.horizon - s - 1)
    if d < 1:
        return
    assert float(menu.price(s, c + 1, d)) >= float(menu.price(s, c, d))
    assert float(menu.price(s, c, d + 1)) >= float(menu.price(s, c, d))


def test_reading_usage_far_ahead_is_zero_and_changes_nothing() -> None:
    p = small_platform()
    book = PriceBook(p)
    book.commit(0, np.full(3, 0.5))
    size, state = book._y.size, book.state_bytes(0)
    far = book.usage(10**7, 5)
    assert far.tolist() == [0.0] * 5 and book._y.size == size and book.state_bytes(0) == state
    around = book.usage(book._y.size - 2, 4)  # straddles the end of the stored span
    assert around.tolist() == [0.0] * 4
    assert book.usage(-2, 4).tolist() == [0.0, 0.0, 0.5, 0.5]  # before round 0 reads as 0


def test_a_window_price_does_not_absorb_the_rounding_of_expensive_earlier_rounds() -> None:
    # H = 1e12 (the bound allows it): 9.5 expected nodes in round 0 price it near 1e11, rounds 1.. keep y = 0, so
    # pi(s, 1, 1) = p(0) = 1/(2 D_m) = 1/6 for every s >= 1 before and after the commit (docs/model.md section 4).
    p = Platform(C=10, C_m=1, D_m=3, S_m=20, H=1e12, samples=10)
    book = PriceBook(p)
    before = [float(book.menu(0).price(s, 1, 1)) for s in range(1, 20)]
    book.commit(0, np.array([9.5]))
    after = [float(book.menu(0).price(s, 1, 1)) for s in range(1, 20)]
    assert after == pytest.approx([1.0 / 6.0] * 19, rel=1e-12)
    assert all(a >= b * (1.0 - 1e-12) for a, b in zip(after, before, strict=True))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 1.5), min_size=26, max_size=26), st.integers(0, 19), st.integers(1, 7),
       st.integers(1, 10))
def test_window_price_is_c_times_the_exact_sum_of_unit_prices_at_any_price_spread(
        shares: list[float], s: int, d: int, c: int) -> None:
    # Usage up to 1.5 C' in some rounds and 0 in others: unit prices from 1/(2 D_m) to about 1e20 side by side.
    p = Platform(C=10, C_m=10, D_m=7, S_m=20, H=1e12, samples=10)
    y = np.array(shares) * p.sim_capacity
    book = PriceBook(p)
    book.commit(0, y)
    expected = c * math.fsum(unit_price(y[s:s + d], p).tolist())
    assert float(book.menu(0).price(s, c, d)) == pytest.approx(expected, rel=1e-12)


def test_plan_usage_is_exactly_zero_in_rounds_no_outcome_occupies() -> None:
    # Outcomes in rounds [0, 1) and [2, 3): round 1 and rounds from 3 on hold none of them, so y gains nothing
    # there (docs/model.md section 4), not the running sum's rounding (0.1 + 0.2 + 0.7 - 0.1 - 0.2 - 0.7 != 0).
    inc = plan_usage(2, np.array([0.1, 0.2, 0.7]), np.array([0, 0, 2]), np.array([1, 1, 1]), 6)
    assert inc.tolist() == [0.6000000000000001, 0.0, 1.4, 0.0, 0.0, 0.0]
    rng = np.random.default_rng(1)
    for _ in range(300):
        n = int(rng.integers(1, 8))
        p = rng.uniform(0.1, 1.0, n)
        p /= p.sum()
        start, d = rng.integers(-1, 6, n), rng.integers(1, 4, n)
        inc = plan_usage(2, p, start, d, 10)
        covered = [any(0 <= s <= t < s + k for s, k in zip(start, d, strict=True)) for t in range(10)]
        assert all(v == 0.0 for v, c in zip(inc.tolist(), covered, strict=True) if not c)
        assert inc == pytest.approx(
            [2 * math.fsum(q for q, s, k in zip(p, start, d, strict=True) if 0 <= s <= t < s + k) for t in range(10)],
            abs=1e-15,
        )


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31), st.integers(1, 10))
@example(4081, 6)  # found by CI: prefix sums with TwoSum residues still fell by 4e-14 at 1/6 behind 1e19 rounds
def test_every_window_price_never_falls_as_sows_are_admitted_even_at_h_1e12(seed: int, n_jobs: int) -> None:
    # Within one round each SoW commits load (Remark 1): the menu of the next one prices every (s, c, d) at least
    # as high (up to the last bits of the sum), whatever the spread of unit prices.
    p = small_platform(C=4, samples=50, seed=seed % 1000, H=1e12)
    rng = np.random.default_rng(seed)
    engine = Engine(p)
    starts = np.arange(p.S_m)[:, None]
    durations = np.arange(1, p.D_m + 1)[None, :]
    last = engine.prices.menu(0).price(starts, 1, durations)
    for i in range(n_jobs):
        engine.submit(f"j{i}", random_sow(rng, p))
        now = engine.prices.menu(0).price(starts, 1, durations)
        assert np.all(now >= last * (1.0 - 1e-14))
        last = now


def test_the_digest_bytes_are_y_from_now_to_its_last_non_zero_round_whatever_the_past() -> None:
    book = PriceBook(small_platform())
    book.commit(0, np.array([1.0, 2.0, 3.0, 0.0, 0.0]))
    assert book.state_bytes(0) == np.array([1.0, 2.0, 3.0]).tobytes()
    assert book.state_bytes(1) == np.array([2.0, 3.0]).tobytes()  # round 0 is the past: not hashed
    assert book.state_bytes(3) == b""
    book.forget_before(2)  # dropping the past or not changes nothing from `now` on
    assert book.state_bytes(2) == np.array([3.0]).tobytes()


@pytest.mark.parametrize("seed", range(5))
def test_y_read_back_equals_a_plain_array_of_every_commit_over_many_rounds_of_forgetting(seed: int) -> None:
    # The store shifts and grows as rounds pass; a plain array indexed by absolute round is the reference.
    p = small_platform()
    rng = np.random.default_rng(seed)
    book, plain = PriceBook(p), np.zeros(30 * p.horizon + p.horizon)
    for now in range(30 * p.horizon):
        if rng.random() < 0.5:
            inc = rng.uniform(0.0, 1.0, size=int(rng.integers(1, p.horizon + 1)))
            book.commit(now, inc)
            plain[now:now + inc.size] += inc
        assert book.usage(now, p.horizon).tolist() == plain[now:now + p.horizon].tolist()
        book.forget_before(now + 1)


def test_committing_far_beyond_the_stored_span_grows_it() -> None:
    p = small_platform()
    book = PriceBook(p)
    far = 50 * p.horizon  # never forgotten up to here: the store must grow to hold it
    book.commit(far, np.array([1.0, 2.0]))
    assert book.usage(far - 1, 4).tolist() == [0.0, 1.0, 2.0, 0.0]


def test_plan_usage_never_goes_negative_where_only_tiny_outcomes_run() -> None:
    # Found by search: 0.15 and 0.3 cancel to -5.55e-17 in the running sum while 1e-20 outcomes still run in
    # rounds 2-4; the true usage there is 1e-20 or 2e-20, so the increment must be >= 0 (commit refuses < 0).
    prob = np.array([1e-20, 1e-20, 0.15, 1e-20, 0.3])
    inc = plan_usage(1, prob, np.array([0, 2, 0, 2, 0]), np.array([3, 3, 1, 3, 2]), 8)
    assert inc[:2].tolist() == pytest.approx([0.45, 0.3], rel=1e-12)
    assert all(0.0 <= x <= 3e-20 for x in inc[2:].tolist())
    PriceBook(small_platform()).commit(0, inc)  # accepted
