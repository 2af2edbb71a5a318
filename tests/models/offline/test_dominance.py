"""Left-shift dominance: the restricted schedules keep the brute-force optimum; left_shift never loses value."""

from __future__ import annotations

import itertools
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.offline.brute import solve_brute
from models.offline.dominance import is_semi_active, left_shift
from models.offline.hindsight import HindsightInstance, HindsightJob
from models.offline.instances import random_instance
from tests.offline_cases import HAND, HAND_OPTIMUM, HAND_SCHEDULE, TINY, enumerable


def _feasible(instance: HindsightInstance, starts: dict[str, int | None]) -> bool:
    try:
        instance.check_schedule(starts)
    except ValueError:
        return False
    return True


def _starts_at_arrival_or_an_end(instance: HindsightInstance, starts: dict[str, int | None]) -> bool:
    jobs = instance.by_id()
    ends = {s + jobs[j].duration for j, s in starts.items() if s is not None}
    return all(s is None or s == jobs[j].arrival or s in ends for j, s in starts.items())


def _best_restricted(instance: HindsightInstance) -> float:
    """Enumerate every assignment; keep the feasible ones whose run jobs start at arrival or at another's end."""
    options = [[None, *job.starts()] for job in instance.jobs]
    best = 0.0
    for choice in itertools.product(*options):
        starts = {job.id: s for job, s in zip(instance.jobs, choice, strict=True)}
        if _starts_at_arrival_or_an_end(instance, starts) and _feasible(instance, starts):
            best = max(best, instance.schedule_value(starts))
    return best


def _random_schedule(instance: HindsightInstance, seed: int) -> dict[str, int | None]:
    """Jobs in random order, each at a random valuable start that still fits, or not run."""
    rng = random.Random(seed)
    starts: dict[str, int | None] = {j.id: None for j in instance.jobs}
    for job in rng.sample(list(instance.jobs), len(instance.jobs)):
        options = list(job.starts())
        rng.shuffle(options)
        for s in options:
            if _feasible(instance, {**starts, job.id: s}):
                starts[job.id] = s
                break
    return starts


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(1, 5))
def test_restricting_starts_to_arrivals_and_ends_keeps_the_brute_force_optimum(seed: int, n: int) -> None:
    inst = enumerable(seed, n, 20_000)
    assert _best_restricted(inst) == pytest.approx(solve_brute(inst).value, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(1, 8))
def test_left_shift_is_feasible_semi_active_and_never_loses_value(seed: int, n: int) -> None:
    inst = random_instance(n, seed, TINY)
    schedule = _random_schedule(inst, seed)
    shifted = left_shift(inst, schedule)
    inst.check_schedule(shifted)
    assert is_semi_active(inst, shifted)
    assert _starts_at_arrival_or_an_end(inst, shifted)
    assert inst.schedule_value(shifted) >= inst.schedule_value(schedule) - 1e-9
    assert all((shifted[j] is None) == (s is None) for j, s in schedule.items())
    for j, s in schedule.items():
        moved = shifted[j]
        assert s is None or (moved is not None and moved <= s)


def test_hand_optimum_is_semi_active_and_a_late_start_is_shifted_to_arrival() -> None:
    assert is_semi_active(HAND, HAND_SCHEDULE)
    assert left_shift(HAND, HAND_SCHEDULE) == HAND_SCHEDULE
    late = {"A": None, "B": 3, "C": None}  # B alone, three rounds after its arrival (value 0 there)
    assert not is_semi_active(HAND, late)
    assert left_shift(HAND, late) == {"A": None, "B": 0, "C": None}
    assert HAND.schedule_value(left_shift(HAND, late)) == 8.0 < HAND_OPTIMUM


def test_left_shift_of_a_benchmark_size_schedule_stays_feasible() -> None:
    inst = random_instance(60, 7)
    schedule = _random_schedule(inst, 7)
    shifted = left_shift(inst, schedule)
    inst.check_schedule(shifted)
    assert is_semi_active(inst, shifted)
    assert inst.schedule_value(shifted) >= inst.schedule_value(schedule)
    assert math.isfinite(inst.schedule_value(shifted))


def test_left_shift_rejects_an_infeasible_schedule() -> None:
    with pytest.raises(ValueError, match="round 0 load=3 exceeds the bound capacity=2"):
        left_shift(HAND, {"A": 0, "B": 0})


def test_a_start_one_round_late_is_semi_active_only_when_the_round_before_is_too_full() -> None:
    # W takes the whole platform (C = 2) for one round from its arrival 0. At start 1 with round 0 empty it fits
    # exactly one round earlier (load 0 + 2 = C), so the schedule is not semi-active; behind a 1-node blocker in
    # round 0 (load 1 + 2 > C) it is.
    w = HindsightJob("W", 0, 0, 1, 2, ((9, 5.0),))
    blocker = HindsightJob("b", 0, 0, 1, 1, ((9, 1.0),))
    inst = HindsightInstance(2, (w, blocker))
    assert not is_semi_active(inst, {"W": 1, "b": None})
    assert left_shift(inst, {"W": 1, "b": None}) == {"W": 0, "b": None}
    assert is_semi_active(inst, {"W": 1, "b": 0})
