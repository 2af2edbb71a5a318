"""Density greedy: the hand-computed order and placement, feasibility, never above the optimum."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.offline.brute import combinations, solve_brute
from models.offline.greedy import density, density_greedy
from models.offline.hindsight import HindsightInstance, HindsightJob
from models.offline.instances import random_instance
from tests.offline_cases import HAND, TINY


def test_density_is_best_reachable_value_per_node_round() -> None:
    a, b, c = HAND.jobs
    assert (density(a), density(b), density(c)) == (10.0 / 4, 8.0 / 2, 3.0 / 1)


def test_greedy_places_dense_jobs_first_at_their_best_start() -> None:
    # Order B (4), C (3), A (2.5): B at 0, C at 1, then A's best start that fits is 2 (worth 5): 16.
    assert density_greedy(HAND) == {"A": 2, "B": 0, "C": 1}


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(1, 6))
def test_greedy_schedule_is_feasible_and_never_beats_the_optimum(seed: int, n: int) -> None:
    inst = random_instance(n, seed, TINY)
    starts = density_greedy(inst)
    inst.check_schedule(starts)
    if combinations(inst) <= 200_000:
        assert inst.schedule_value(starts) <= solve_brute(inst).value + 1e-9
    assert set(starts) == {j.id for j in inst.jobs}
    assert all(s is None or s in inst.by_id()[j].starts() for j, s in starts.items())


def test_greedy_on_an_empty_instance_is_empty() -> None:
    assert density_greedy(random_instance(0, 0, TINY)) == {}
    assert pytest.approx(0.0) == random_instance(0, 0, TINY).schedule_value({})


def test_greedy_breaks_density_ties_by_instance_order() -> None:
    # X and Y are equally dense and only one of them fits (C = 1, both earn only by completing at round 1).
    x = HindsightJob("X", 0, 0, 1, 1, ((1, 5.0),))
    y = HindsightJob("Y", 0, 0, 1, 1, ((1, 5.0),))
    assert density_greedy(HindsightInstance(1, (x, y))) == {"X": 0, "Y": None}
    assert density_greedy(HindsightInstance(1, (y, x))) == {"Y": 0, "X": None}


def test_greedy_takes_the_earliest_of_equally_valuable_starts() -> None:
    # Starts 1..4 all earn 2 (completion by round 5): the earliest, the arrival, is taken.
    lone = HindsightJob("x", 0, 1, 1, 1, ((5, 2.0),))
    assert density_greedy(HindsightInstance(1, (lone,))) == {"x": 1}


def test_greedy_takes_the_most_valuable_start_not_a_later_cheaper_one() -> None:
    # Starts 0 and 1 earn 9 (completion by round 2), starts 2..4 only 2: the lone job starts at 0.
    lone = HindsightJob("x", 0, 0, 1, 1, ((2, 9.0), (5, 2.0)))
    assert density_greedy(HindsightInstance(1, (lone,))) == {"x": 0}
