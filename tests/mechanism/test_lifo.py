"""The literal LIFO reference (docs/model.md sections 5 and 6): hand-played rounds and a brute-force cross-check."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism.lifo import fails_given_loads, lifo_loads


def test_without_overflow_the_load_is_the_sum_of_running_jobs_and_nobody_goes() -> None:
    # (start, length, concurrency): A runs rounds 0-1, B rounds 1-2, C never runs.
    loads, removed = lifo_loads([(0, 2, 1), (1, 2, 2), (-1, 3, 3)], horizon=4, capacity=4)
    assert loads == [1, 3, 2, 0]
    assert removed == [None, None, None]


def test_a_job_occupies_its_start_round_through_start_plus_length_minus_one() -> None:
    # A job starting in round 2 with length 1 demands round 2 only; one starting in round 0 with length 3, 0-2.
    loads, _ = lifo_loads([(2, 1, 1), (0, 3, 2)], horizon=4, capacity=10)
    assert loads == [2, 2, 3, 0]


def test_a_load_equal_to_capacity_evicts_nobody() -> None:
    loads, removed = lifo_loads([(0, 2, 2), (0, 2, 2)], horizon=2, capacity=4)
    assert loads == [4, 4]
    assert removed == [None, None]


def test_the_newest_runner_goes_and_stays_gone_in_later_rounds() -> None:
    # Round 0: 3 + 2 = 5 > 4, B (newer) is evicted; rounds 1-2 see only A's 3.
    loads, removed = lifo_loads([(0, 3, 3), (0, 3, 2)], horizon=3, capacity=4)
    assert loads == [5, 3, 3]
    assert removed == [None, 0]


def test_evictions_go_newest_first_until_the_load_fits() -> None:
    # Round 0: 2 + 2 + 2 + 2 = 8 > 3: D, then C, then B go (load 6, 4, 2); A stays.
    loads, removed = lifo_loads([(0, 1, 2), (0, 1, 2), (0, 1, 2), (0, 1, 2)], horizon=1, capacity=3)
    assert loads == [8]
    assert removed == [None, 0, 0, 0]


def test_a_completed_job_is_no_longer_active_so_an_overflow_skips_it() -> None:
    # D (newest) runs only in round 0 and has completed by round 2, where A + B = 5 > 4: B goes, not D.
    loads, removed = lifo_loads([(2, 1, 3), (2, 1, 2), (0, 1, 1)], horizon=3, capacity=4)
    assert loads == [1, 0, 5]
    assert removed == [None, 2, None]


def test_a_waiting_job_newer_than_the_overflow_is_cancelled_first_remark_2() -> None:
    # Round 0: A + B = 5 > 4. C (newest, starts in round 2) goes first without lowering the load, then B.
    loads, removed = lifo_loads([(0, 3, 3), (0, 3, 2), (2, 1, 1)], horizon=3, capacity=4)
    assert loads == [5, 3, 3]
    assert removed == [None, 0, 0]


def test_a_never_running_job_newer_than_the_overflow_goes_without_relieving_it() -> None:
    loads, removed = lifo_loads([(0, 1, 3), (0, 1, 2), (-1, 1, 1)], horizon=1, capacity=4)
    assert loads == [5]
    assert removed == [None, 0, 0]


def test_a_job_starting_at_round_0_counts_and_a_never_job_does_not() -> None:
    loads, _ = lifo_loads([(0, 1, 2), (-1, 2, 5)], horizon=2, capacity=10)
    assert loads == [2, 0]


def test_a_newer_job_fails_iff_earlier_jobs_overflow_while_it_waits() -> None:
    loads = [5, 3, 3]
    assert fails_given_loads(loads, start=1, duration=1, concurrency=1, capacity=4)  # round 0 overflows
    assert not fails_given_loads([4, 3, 3], start=1, duration=1, concurrency=1, capacity=4)  # 4 is not > 4


def test_a_newer_job_fits_exactly_at_capacity_and_fails_one_node_above() -> None:
    assert not fails_given_loads([1, 3, 1], start=0, duration=3, concurrency=1, capacity=4)  # 3 + 1 = 4 fits
    assert fails_given_loads([1, 3, 1], start=0, duration=3, concurrency=2, capacity=4)  # 3 + 2 = 5 does not
    assert not fails_given_loads([1, 3, 1], start=2, duration=1, concurrency=3, capacity=4)  # only round 2 counts


def _runs(job: tuple[int, int, int], tau: int) -> bool:
    return job[0] >= 0 and job[0] <= tau < job[0] + job[1]


def _survivors(jobs: list[tuple[int, int, int]], active: list[int], tau: int, capacity: int,
               demanding: bool) -> list[int]:
    """The rule as a recursion: while the running demand exceeds capacity, drop the newest active job (with
    `demanding`, the newest active job that runs in round tau)."""
    if sum(jobs[k][2] for k in active if _runs(jobs[k], tau)) <= capacity:
        return active
    victim = max(k for k in active if _runs(jobs[k], tau)) if demanding else active[-1]
    return _survivors(jobs, [k for k in active if k != victim], tau, capacity, demanding)


def _brute_lifo(jobs: list[tuple[int, int, int]], horizon: int, capacity: int,
                demanding: bool = False) -> list[int | None]:
    """Removal rounds by set arithmetic: each round, drop the completed jobs, then remove by the recursion."""
    alive = list(range(len(jobs)))
    removed: list[int | None] = [None] * len(jobs)
    for tau in range(horizon):
        alive = [k for k in alive if not (jobs[k][0] >= 0 and tau >= jobs[k][0] + jobs[k][1])]
        survivors = _survivors(jobs, alive, tau, capacity, demanding)
        for k in set(alive) - set(survivors):
            removed[k] = tau
        alive = survivors
    return removed


job = st.tuples(st.integers(-1, 4), st.integers(1, 3), st.integers(1, 3))


@settings(max_examples=200, deadline=None)
@given(st.lists(job, min_size=0, max_size=5), st.integers(1, 5))
def test_removals_equal_the_recursive_statement_of_the_rule(jobs: list[tuple[int, int, int]], capacity: int) -> None:
    _, removed = lifo_loads(jobs, horizon=8, capacity=capacity)
    assert removed == _brute_lifo(jobs, 8, capacity)
    _, removed = lifo_loads(jobs, horizon=8, capacity=capacity, cancels_waiting=False)
    assert removed == _brute_lifo(jobs, 8, capacity, demanding=True)


def test_under_newest_demanding_a_waiting_job_newer_than_the_overflow_is_spared() -> None:
    # A (c = 3) and B (c = 2) collide in round 0 (C = 4); C waits for round 2. Remark 2 cancels C, then B; the
    # newest_demanding rule evicts B alone, and C runs.
    jobs = [(0, 3, 3), (0, 3, 2), (2, 1, 1)]
    assert lifo_loads(jobs, horizon=3, capacity=4)[1] == [None, 0, 0]
    loads, removed = lifo_loads(jobs, horizon=3, capacity=4, cancels_waiting=False)
    assert removed == [None, 0, None] and loads == [5, 3, 4]
    assert fails_given_loads([5, 3, 3], start=2, duration=1, concurrency=1, capacity=4)  # round 0 overflows
    assert not fails_given_loads([5, 3, 3], start=2, duration=1, concurrency=1, capacity=4, cancels_waiting=False)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_every_subset_of_concurrencies_loads_match_a_direct_sum_when_nothing_overflows(n: int) -> None:
    for cs in itertools.product([1, 2], repeat=n):
        jobs = [(0, 2, c) for c in cs]
        loads, removed = lifo_loads(jobs, horizon=3, capacity=100)
        assert loads == [sum(cs), sum(cs), 0]
        assert removed == [None] * n
