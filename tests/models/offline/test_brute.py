"""Brute force: the hand-computed optimum, a refusal above its size bound, feasibility of what it returns."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.offline.brute import combinations, solve_brute
from models.offline.hindsight import HindsightInstance, HindsightJob
from models.offline.instances import random_instance
from tests.offline_cases import HAND, HAND_OPTIMUM, HAND_SCHEDULE, TINY


def test_brute_force_returns_the_optimum_with_a_zero_gap() -> None:
    result = solve_brute(HAND)
    assert result.value == HAND_OPTIMUM
    assert result.starts == HAND_SCHEDULE
    assert result.status == "optimal" and result.gap == 0.0 and result.bound == HAND_OPTIMUM


def test_brute_force_counts_one_plus_valuable_starts_per_job() -> None:
    # A: starts 0, 1, 2; B: 0; C: 1 -> 4 * 2 * 2.
    assert combinations(HAND) == 16


def test_brute_force_refuses_above_its_size_bound() -> None:
    big = random_instance(12, 0, TINY)
    with pytest.raises(ValueError, match=r"start combinations \(12 jobs\), above the bound max_combinations=100"):
        solve_brute(big, max_combinations=100)


def test_brute_force_enumerates_exactly_max_combinations_and_refuses_one_more() -> None:
    # The hand case has 16 start combinations: a bound of 16 admits it, 15 refuses it.
    assert solve_brute(HAND, max_combinations=16).value == HAND_OPTIMUM
    with pytest.raises(ValueError, match=r"16 start combinations \(3 jobs\), above the bound max_combinations=15"):
        solve_brute(HAND, max_combinations=15)


def test_brute_force_runs_a_lone_job_at_its_first_start() -> None:
    inst = HindsightInstance(1, (HindsightJob("x", 0, 1, 1, 1, ((3, 2.0), (5, 1.0))),))
    result = solve_brute(inst)
    assert result.value == 2.0 and result.starts["x"] in (1, 2)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(0, 5))
def test_brute_force_schedule_is_feasible_and_worth_its_value(seed: int, n: int) -> None:
    inst = random_instance(n, seed, TINY)
    result = solve_brute(inst)
    inst.check_schedule(result.starts)
    assert result.value == pytest.approx(inst.schedule_value(result.starts))
