"""Reduced-cost fixing: weak duality by hand and at random prices, and every better schedule obeys the fixing."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.offline import cpsat, rcfix
from models.offline.brute import solve_brute
from models.offline.cpsat import CpSatParams, Model, solve_cpsat, solve_fixed
from models.offline.greedy import density_greedy
from models.offline.hindsight import HindsightInstance, OfflineResult
from models.offline.instances import random_instance
from models.offline.milp import build, lp_bound
from models.offline.rcfix import Fixing, LpPrices, fix, lp_prices, price, split_jobs
from tests.offline_cases import HAND, HAND_OPTIMUM, HAND_SCHEDULE, TINY, enumerable

FAST = CpSatParams(time_limit=10.0, workers=1)


def feasible_schedules(instance: HindsightInstance) -> Iterator[dict[str, int | None]]:
    """Every assignment of a valuable start or None per job that respects capacity (independent of brute.py)."""
    options = [[None, *job.starts()] for job in instance.jobs]
    for choice in itertools.product(*options):
        starts = {job.id: s for job, s in zip(instance.jobs, choice, strict=True)}
        try:
            instance.check_schedule(starts)
        except ValueError:
            continue
        yield starts


def respects(fixing: Fixing, starts: dict[str, int | None]) -> bool:
    """No start fixed to 0 is taken, every start fixed to 1 is."""
    taken = {(j, s) for j, s in starts.items() if s is not None}
    return not (taken & fixing.zero) and fixing.one <= taken


def test_reduced_costs_beyond_the_gap_fix_their_columns() -> None:
    # Duals: job A's row 4, round 1's row 3. r = (A@0: 10-4-2*3=0, A@1: 5-4-2*3=-5, A@2: 5-4=1, B@0: 8-3=5,
    # C@1: 3-3=0) and B(y) = 4 + 2*3 + 1 + 5 = 16, the LP optimum.
    prices = lp_prices(HAND)
    assert prices.bound == pytest.approx(HAND_OPTIMUM)
    assert prices.reduced.tolist() == pytest.approx([0.0, -5.0, 1.0, 5.0, 0.0])
    # L = 13: |r| > 16 - 13 fixes A@1 to 0 and B@0 to 1; L = 15.9 also A@2 to 1; L = 10 fixes nothing.
    assert (fix(prices, 13.0).zero, fix(prices, 13.0).one) == ({("A", 1)}, {("B", 0)})
    assert fix(prices, 15.9).one == {("A", 2), ("B", 0)}
    assert fix(prices, 10.0).fixed == 0
    assert fix(prices, 10.0).max_reduced_cost == pytest.approx(5.0)
    assert split_jobs(prices) == (3, 0)



def test_any_row_prices_give_reduced_costs_c_minus_at_y_and_the_bound_bt_y() -> None:
    # Every row priced 10. A^T y per column: A@s is 10 (job row) + 2 * 10 * 2 (two rounds, 2 nodes) = 50,
    # B@0 10 + 10 + 10 = 30, C@1 10 + 10 = 20; r = c - A^T y = (-40, -45, -45, -22, -17).
    # B(y) = b^T y = 10 * (1 + 1 + 1) + 10 * 2 * 4 = 110 (no positive r).
    model = build(HAND)
    prices = price(model, np.zeros(model.n_cols), np.full(model.n_rows, 10.0))
    assert prices.reduced.tolist() == pytest.approx([-40.0, -45.0, -45.0, -22.0, -17.0])
    assert prices.bound == pytest.approx(110.0)
    # The largest |r| is that of a negative reduced cost; nothing is fixed below B(y) - 45 = 65, all of it at 111.
    assert fix(prices, 60.0).max_reduced_cost == pytest.approx(45.0)
    assert fix(prices, 65.0 - 1e-9).fixed == 0
    assert fix(prices, 111.0).zero == {("A", 0), ("A", 1), ("A", 2), ("B", 0), ("C", 1)}


def test_fixing_keeps_a_float_margin_below_the_incumbent() -> None:
    # The hand case's B(y) - |r| is 15 for A@2 (r = 1): an incumbent at 15 or within the margin above it (or
    # 0.01 below it) fixes only B@0 (B(y) - 5 = 11); 15 + 1e-3 is clearly above and fixes A@2 to 1 too.
    prices = lp_prices(HAND)
    for incumbent in (14.99, 15.0, 15.0 + 1e-9):
        assert fix(prices, incumbent).one == {("B", 0)}
    assert fix(prices, 15.0 + 1e-3).one == {("A", 2), ("B", 0)}


def test_split_jobs_counts_whole_and_spread_jobs_of_the_lp_solution() -> None:
    # Columns A@0, A@1, A@2, B@0, C@1. A at 0.5 on one start is neither whole nor spread; on two starts it is
    # spread; B and C at 1 are whole; a value within tol of 0 is no support.
    model = build(HAND)
    y = np.zeros(model.n_rows)
    assert split_jobs(price(model, np.array([0.5, 0.0, 0.0, 1.0, 1.0]), y)) == (2, 0)
    assert split_jobs(price(model, np.array([0.5, 0.25, 0.0, 1.0, 1.0]), y)) == (2, 1)
    assert split_jobs(price(model, np.array([0.0, 1e-9, 1.0, 1.0, 0.0]), y)) == (2, 0)

@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(1, 5), price_seed=st.integers(0, 1000))
def test_bound_of_any_nonnegative_prices_is_at_least_the_brute_force_optimum(seed: int, n: int,
                                                                             price_seed: int) -> None:
    inst = enumerable(seed, n, 100_000)
    model = build(inst)
    y = np.random.default_rng(price_seed).uniform(0.0, 10.0, size=model.n_rows)
    prices = price(model, np.zeros(model.n_cols), y)
    assert prices.bound >= solve_brute(inst).value - 1e-9


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(1, 5), rank=st.integers(0, 5))
def test_every_schedule_worth_more_than_the_incumbent_respects_the_fixing(seed: int, n: int, rank: int) -> None:
    inst = enumerable(seed, n, 20_000)
    schedules = list(feasible_schedules(inst))
    values = sorted({inst.schedule_value(s) for s in schedules}, reverse=True)
    incumbent = values[min(rank, len(values) - 1)]  # the optimum, or a value below it
    fixing = fix(lp_prices(inst), incumbent)
    for starts in schedules:
        if inst.schedule_value(starts) > incumbent + 1e-9:
            assert respects(fixing, starts)


def test_fixing_bites_below_the_optimum_and_keeps_every_better_schedule() -> None:
    # Not vacuous: at L = the second-best schedule value, fixing removes starts in many tiny instances, and the
    # optimal schedules (the only ones worth more) all respect it.
    bitten = 0
    for seed in range(20):
        inst = random_instance(4, seed, TINY)
        schedules = list(feasible_schedules(inst))
        values = sorted({inst.schedule_value(s) for s in schedules}, reverse=True)
        if len(values) < 2:
            continue
        fixing = fix(lp_prices(inst), values[1])
        bitten += fixing.fixed > 0
        assert all(respects(fixing, s) for s in schedules if inst.schedule_value(s) > values[1] + 1e-9)
    assert bitten >= 5


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(1, 6), model=st.sampled_from(["channel", "indexed"]),
       incumbent=st.sampled_from(["empty", "greedy", "optimum"]))
def test_fixed_model_optimum_or_incumbent_equals_brute_force(seed: int, n: int, model: Model,
                                                              incumbent: str) -> None:
    inst = enumerable(seed, n)
    exact = solve_brute(inst).value
    value = {"empty": 0.0, "greedy": inst.schedule_value(density_greedy(inst)), "optimum": exact}[incumbent]
    result = solve_fixed(inst, FAST, model, fix(lp_prices(inst), value))
    if result is None:  # no schedule is worth more than the incumbent
        assert value == pytest.approx(exact)
        return
    inst.check_schedule(result.starts)
    assert result.status == "optimal"
    assert max(value, result.value) == pytest.approx(exact, abs=1e-6)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(1, 6))
def test_two_phase_with_rc_fixing_proves_the_brute_force_optimum(seed: int, n: int) -> None:
    inst = enumerable(seed, n)
    exact = solve_brute(inst)
    result = solve_cpsat(inst, CpSatParams(time_limit=10.0, workers=1, rc_fixing=True, bound_model="indexed"))
    assert result.status == "optimal"
    assert result.value == pytest.approx(exact.value, abs=1e-6)
    assert result.bound >= exact.value - 1e-6
    inst.check_schedule(result.starts)



@pytest.mark.parametrize("model", ["channel", "indexed"])
def test_solve_fixed_obeys_the_fixed_columns(model: Model) -> None:
    def fixing(zero: set[tuple[str, int]], one: set[tuple[str, int]]) -> Fixing:
        return Fixing(incumbent=0.0, bound=16.0, zero=frozenset(zero), one=frozenset(one), columns=5,
                      max_reduced_cost=5.0)

    # A@0 forced: it fills rounds 0 and 1, so B and C cannot run: 10. B@0 forbidden: A@0 alone is best: 10.
    forced = solve_fixed(HAND, FAST, model, fixing(set(), {("A", 0)}))
    assert forced is not None and forced.value == 10.0 and forced.starts == {"A": 0, "B": None, "C": None}
    barred = solve_fixed(HAND, FAST, model, fixing({("B", 0)}, set()))
    assert barred is not None and barred.value == 10.0 and barred.starts["B"] is None
    # The fixing at L = 13 (A@1 to 0, B@0 to 1) keeps the optimum 16.
    kept = solve_fixed(HAND, FAST, model, fix(lp_prices(HAND), 13.0))
    assert kept is not None and kept.value == HAND_OPTIMUM
    # A@0 and B@0 together overload round 0: no schedule at all.
    assert solve_fixed(HAND, FAST, model, fixing(set(), {("A", 0), ("B", 0)})) is None


def test_rc_fixing_phase_fixes_at_the_plain_value_and_finds_the_better_schedule(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The plain phase stops at B@0 + A@2 (13, not proven); fixing at 13 keeps the optimum 16.
    plain = OfflineResult(13.0, 21.0, 8 / 21, "feasible", 0.1, {"A": 2, "B": 0, "C": None}, "cpsat")
    incumbents: list[float] = []
    real_fix = rcfix.fix

    def recording_fix(prices: LpPrices, incumbent: float) -> Fixing:
        incumbents.append(incumbent)
        return real_fix(prices, incumbent)

    monkeypatch.setattr(cpsat, "solve_model", lambda *a, **k: plain)
    monkeypatch.setattr(rcfix, "fix", recording_fix)
    result = solve_cpsat(HAND, CpSatParams(time_limit=10.0, workers=1, rc_fixing=True))
    assert incumbents == [13.0]
    assert result.optimal and result.value == HAND_OPTIMUM and result.starts == HAND_SCHEDULE


def test_rc_fixing_phase_without_a_better_schedule_proves_the_plain_one_optimal(
        monkeypatch: pytest.MonkeyPatch) -> None:
    plain = OfflineResult(HAND_OPTIMUM, 21.0, 5 / 21, "feasible", 0.1, dict(HAND_SCHEDULE), "cpsat")
    monkeypatch.setattr(cpsat, "solve_model", lambda *a, **k: plain)
    monkeypatch.setattr(cpsat, "solve_fixed", lambda *a, **k: None)
    result = solve_cpsat(HAND, CpSatParams(time_limit=10.0, workers=1, rc_fixing=True))
    assert (result.status, result.value, result.bound, result.gap) == ("optimal", HAND_OPTIMUM, HAND_OPTIMUM, 0.0)
    assert result.starts == HAND_SCHEDULE

def test_lp_prices_of_an_instance_without_valuable_starts_are_empty() -> None:
    inst = random_instance(0, 1, TINY)
    prices = lp_prices(inst)
    assert prices.bound == 0.0 and fix(prices, 0.0).fixed == 0 and split_jobs(prices) == (0, 0)


def test_bound_with_optimal_duals_is_the_lp_bound_on_a_benchmark_sized_instance() -> None:
    inst = random_instance(60, 7)
    assert lp_prices(inst).bound == pytest.approx(lp_bound(inst).bound, rel=1e-7)


def test_negative_or_infinite_prices_are_refused_naming_the_bound() -> None:
    model = build(HAND)
    with pytest.raises(ValueError, match=r"y has min=-1.0, below the bound 0"):
        price(model, np.zeros(model.n_cols), np.full(model.n_rows, -1.0))
    with pytest.raises(ValueError, match=r"y has min=inf, below the bound 0 \(or not finite\)"):
        price(model, np.zeros(model.n_cols), np.full(model.n_rows, np.inf))


def test_prices_of_the_wrong_length_are_refused() -> None:
    model = build(HAND)
    with pytest.raises(ValueError, match=r"y has shape \(2,\), expected one price per row \(7,\)"):
        price(model, np.zeros(model.n_cols), np.zeros(2))


def test_a_non_finite_incumbent_is_refused() -> None:
    with pytest.raises(ValueError, match="incumbent=nan is not a finite schedule value"):
        fix(lp_prices(HAND), float("nan"))


def test_rc_fixing_needs_two_phase() -> None:
    with pytest.raises(ValueError, match=r"rc_fixing=True needs strategy='two_phase'.*not 'channel'"):
        CpSatParams(strategy="channel", rc_fixing=True)


def test_the_plain_model_has_no_starts_to_fix() -> None:
    with pytest.raises(ValueError, match="model='plain' has no time-indexed starts to fix"):
        solve_fixed(HAND, FAST, "plain", fix(lp_prices(HAND), 13.0))


def test_a_fixed_start_outside_the_instance_is_refused() -> None:
    fixing = Fixing(incumbent=0.0, bound=16.0, zero=frozenset({("A", 9)}), one=frozenset(), columns=5,
                    max_reduced_cost=5.0)
    with pytest.raises(ValueError, match=r"fixed start \('A', 9\) is not a valuable start of the instance"):
        solve_fixed(HAND, FAST, "indexed", fixing)
