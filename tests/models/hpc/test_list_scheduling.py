"""List scheduling (Alg. 1): hand-computed traces per order and option, EASY vs conservative, invariants."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.hpc.jobs import Estimates, Job, Workload
from models.hpc.list_scheduling import (
    FreeProfile,
    ListScheduler,
    Option,
    Order,
    RoundPlan,
    conservative,
    easy,
    list_round,
    order_key,
)
from models.hpc.simulator import RoundState, Running, Waiting, simulate


def workload(nodes: int, *jobs: tuple[int, int, int]) -> Workload:
    """Jobs as (submit, runtime, size); requested = runtime."""
    return Workload(tuple(Job(i, s, d, r, d) for i, (s, d, r) in enumerate(jobs)), nodes)


# R = 4; job 0 fills the machine on [0, 10); then c (E 7, r 3), a (E 6, r 1), b (E 2, r 4) arrive.
# keys   FCFS: c, a, b   SJF: b 2, a 6, c 7   SAF: a 6, b 8, c 21   LAF: c, b, a   SPF: b 16, a 36, c 147
ORDERS_TRACE = workload(4, (0, 10, 4), (1, 7, 3), (2, 6, 1), (3, 2, 4))


@pytest.mark.parametrize(
    ("order", "starts"),
    [
        # c starts 10 (3 nodes), a fits beside it at 10, b needs all 4 nodes: after c at 17
        (Order.FCFS, (0, 10, 10, 17)),
        # b at 10 (all nodes, to 12), then a and c together at 12
        (Order.SJF, (0, 12, 12, 10)),
        # a at 10 (to 16), b reserved at 16 (to 18), c (3 nodes for 7 s) cannot fit beside a: 18
        (Order.SAF, (0, 18, 10, 16)),
        # c at 10, b reserved at 17, a (1 node, to 16) backfills beside c at 10
        (Order.LAF, (0, 10, 10, 17)),
        # same order as SJF here
        (Order.SPF, (0, 12, 12, 10)),
    ],
)
def test_conservative_backfilling_starts_each_job_at_its_reservation_in_queue_order(order: Order,
                                                                                  starts: tuple[int, ...]) -> None:
    assert simulate(ORDERS_TRACE, conservative(order)).starts == starts


def test_order_keys_sort_the_queue_as_defined() -> None:
    queue = [Waiting(1, 1, 3, 7), Waiting(2, 2, 1, 6), Waiting(3, 3, 4, 2)]
    expected = {
        Order.FCFS: [1, 2, 3],
        Order.SJF: [3, 2, 1],
        Order.SAF: [2, 3, 1],
        Order.LAF: [1, 3, 2],
        Order.SPF: [3, 2, 1],
    }
    for order, indices in expected.items():
        assert [w.index for w in sorted(queue, key=order_key(order))] == indices


def test_order_ties_are_broken_first_come_first_served() -> None:
    queue = [Waiting(5, 4, 2, 3), Waiting(4, 1, 2, 3)]
    for order in Order:
        assert [w.index for w in sorted(queue, key=order_key(order))] == [4, 5]


# R = 4; X holds 3 nodes on [0, 10). A (3 nodes, 5 s), B (4 nodes, 3 s), C (1 node, 20 s) arrive at 1, 2, 3.
# Conservative: A reserved [10, 15), B reserved [15, 18); C would overlap B, so it waits until 18.
# EASY: only A is protected; C fits beside X and A ([3, 23) on the spare node) and starts at 3,
# which delays B until C ends at 23.
EASY_TRACE = workload(4, (0, 10, 3), (1, 5, 3), (2, 3, 4), (3, 20, 1))


def test_easy_backfills_past_reservations_that_conservative_keeps() -> None:
    assert simulate(EASY_TRACE, conservative(Order.FCFS)).starts == (0, 10, 15, 18)
    assert simulate(EASY_TRACE, easy()).starts == (0, 10, 23, 3)


def test_strict_stops_at_the_first_blocked_job() -> None:
    assert simulate(EASY_TRACE, ListScheduler(Order.FCFS, Option.STRICT)).starts == (0, 10, 15, 18)


def test_greedy_skips_blocked_jobs_and_can_starve_the_head() -> None:
    # R = 2; X 1 node on [0, 10); A needs 2 nodes; C (1 node, 20 s) arrives at 2.
    trace = workload(2, (0, 10, 1), (1, 5, 2), (2, 20, 1))
    assert simulate(trace, ListScheduler(Order.FCFS, Option.GREEDY)).starts == (0, 22, 2)
    assert simulate(trace, easy()).starts == (0, 10, 15)


def state(now: int, nodes: int, running: Sequence[tuple[int, int]], queue: Sequence[tuple[int, int]]) -> RoundState:
    """running as (size, end), queue as (size, estimate) submitted at 0."""
    run = tuple(Running(100 + i, r, e) for i, (r, e) in enumerate(running))
    wait = tuple(Waiting(i, 0, r, e) for i, (r, e) in enumerate(queue))
    return RoundState(now, nodes, nodes - sum(r for r, _ in running), wait, run)


def test_free_profile_finds_earliest_hole_and_reserves() -> None:
    profile = FreeProfile(state(0, 4, [(3, 10), (1, 4)], []))
    assert (profile.times, profile.free) == ([0, 4, 10], [0, 1, 4])
    assert profile.earliest(1, 6) == 4
    assert profile.earliest(1, 7) == 4
    assert profile.earliest(2, 3) == 10
    profile.reserve(4, 1, 8)
    assert (profile.times, profile.free) == ([0, 4, 10, 12], [0, 0, 3, 4])
    assert profile.earliest(4, 1) == 12


def test_free_profile_rejects_impossible_requests() -> None:
    profile = FreeProfile(state(5, 2, [(2, 10)], []))
    with pytest.raises(ValueError, match=r"size=3 exceeds nodes=2"):
        profile.earliest(3, 1)
    with pytest.raises(ValueError, match=r"start=4 is before the profile origin 5"):
        profile.reserve(4, 1, 1)
    with pytest.raises(ValueError, match=r"reservation of 1 nodes at t=5 overflows the machine"):
        profile.reserve(5, 1, 1)


def test_full_plan_places_every_job_and_pruned_round_starts_the_same_jobs() -> None:
    s = state(0, 4, [(3, 10)], [(4, 5), (1, 3), (2, 2), (1, 30)])
    full = list_round(s, Order.FCFS, Option.BACKFILL, full_plan=True)
    assert full.plan == {0: 10, 1: 0, 2: 15, 3: 15}  # job 3 (1 node) fits beside job 2 at 15
    assert list_round(s, Order.FCFS, Option.BACKFILL).started == full.started == (1,)


def check_feasible(w: Workload, starts: Sequence[int]) -> None:
    events: list[tuple[int, int]] = []
    for job, b in zip(w.jobs, starts, strict=True):
        assert b >= job.submit, f"job {job.id} starts at {b} before its submit {job.submit}"
        events += [(b, job.size), (b + job.runtime, -job.size)]
    used = 0
    for _, delta in sorted(events, key=lambda e: (e[0], e[1])):
        used += delta
        assert used <= w.nodes, "capacity exceeded"


@st.composite
def traces(draw: st.DrawFn) -> tuple[Workload, Estimates]:
    nodes = draw(st.integers(1, 6))
    n = draw(st.integers(1, 14))
    rows = []
    for _ in range(n):
        runtime = draw(st.integers(1, 20))
        rows.append(
            (draw(st.integers(0, 40)), runtime, draw(st.integers(1, nodes)), runtime + draw(st.integers(0, 15)))
        )
    rows.sort()
    jobs = tuple(Job(i, s, d, r, q) for i, (s, d, r, q) in enumerate(rows))
    return Workload(jobs, nodes), draw(st.sampled_from(["exact", "requested"]))


SCHEDULERS = [conservative(o) for o in Order] + [
    easy(),
    ListScheduler(Order.SAF, Option.GREEDY),
    ListScheduler(Order.FCFS, Option.STRICT),
]


@settings(max_examples=150, deadline=None, derandomize=True)
@given(traces())
def test_capacity_is_never_exceeded_and_no_job_starts_before_submission(case: tuple[Workload, Estimates]) -> None:
    w, estimates = case
    for scheduler in SCHEDULERS:
        check_feasible(w, simulate(w, scheduler, estimates).starts)


class PlanRecorder:
    """FCFS conservative backfilling that remembers the first reservation b_j each job received."""

    def __init__(self) -> None:
        self.first: dict[int, int] = {}

    def __call__(self, state: RoundState) -> Sequence[int]:
        result = list_round(state, Order.FCFS, Option.BACKFILL, full_plan=True)
        for index, begin in result.plan.items():
            self.first.setdefault(index, begin)
        return result.started


@settings(max_examples=150, deadline=None, derandomize=True)
@given(traces())
def test_conservative_backfilling_never_delays_an_earlier_reservation(case: tuple[Workload, Estimates]) -> None:
    w, _ = case
    recorder = PlanRecorder()
    result = simulate(w, recorder, "exact")
    for index, start in enumerate(result.starts):
        assert start <= recorder.first[index]
    assert result.starts == simulate(w, conservative(Order.FCFS), "exact").starts


def test_order_keys_match_the_definitions_of_alg_1_on_random_queues() -> None:
    # the keys written out: E_j, r_j E_j, -r_j E_j, r_j E_j^2, then FCFS (submit, then arrival index)
    formula = {
        Order.FCFS: lambda w: 0,
        Order.SJF: lambda w: w.estimate,
        Order.SAF: lambda w: w.size * w.estimate,
        Order.LAF: lambda w: -(w.size * w.estimate),
        Order.SPF: lambda w: w.size * w.estimate**2,
    }
    rng = random.Random(11)
    for _ in range(300):
        submits = sorted(rng.randint(0, 5) for _ in range(rng.randint(1, 7)))
        queue = [Waiting(i, s, rng.randint(1, 12), rng.randint(1, 15)) for i, s in enumerate(submits)]
        rng.shuffle(queue)
        for order, key in formula.items():
            by_formula = sorted(queue, key=lambda w: (key(w), w.submit, w.index))
            assert sorted(queue, key=order_key(order)) == by_formula, (order, queue)


def test_spf_puts_a_wide_short_job_before_a_narrow_long_one_with_a_smaller_area() -> None:
    # (r, E) = (10, 3): r E^2 = 90, r E = 30; (1, 10): r E^2 = 100, r E = 10
    queue = [Waiting(0, 0, 1, 10), Waiting(1, 0, 10, 3)]
    assert [w.index for w in sorted(queue, key=order_key(Order.SPF))] == [1, 0]
    assert [w.index for w in sorted(queue, key=order_key(Order.SAF))] == [0, 1]


def test_running_jobs_past_or_at_their_estimated_end_free_their_nodes_from_now() -> None:
    # R = 4 at t = 10: estimated ends 5 and 10 are not in the future, so their 3 nodes count as free now;
    # only the end at 20 is a breakpoint.
    profile = FreeProfile(state(10, 4, [(2, 10), (1, 5), (1, 20)], []))
    assert (profile.times, profile.free) == ([10, 20], [3, 4])


def test_earliest_is_now_when_the_nodes_are_free_now_for_the_whole_duration() -> None:
    profile = FreeProfile(state(3, 4, [(2, 10)], []))
    assert (profile.times, profile.free) == ([3, 10], [2, 4])
    assert profile.earliest(2, 50) == 3
    assert profile.earliest(3, 1) == 10


def test_a_pruned_round_stops_at_the_first_job_after_which_nothing_fits_the_nodes_free_now() -> None:
    # R = 4, 3 nodes busy until 10. FCFS: job 0 (4 nodes) is reserved at 10, job 1 (1 node) starts now;
    # then 0 nodes are free and every remaining job needs at least 1: the round stops, jobs 2 and 3 unplaced.
    s = state(0, 4, [(3, 10)], [(4, 5), (1, 3), (2, 2), (1, 30)])
    assert list_round(s, Order.FCFS, Option.BACKFILL) == RoundPlan(started=(1,), plan={0: 10, 1: 0})
    # R = 4, 1 node busy until 10: 3 free now, and the only job needs all 4, so nothing is even reserved;
    # with a later 3-node job the round goes on: job 0 is reserved at 10 and job 1 fits before it.
    assert list_round(state(0, 4, [(1, 10)], [(4, 5)]), Order.FCFS, Option.BACKFILL) == RoundPlan((), {})
    assert list_round(state(0, 4, [(1, 10)], [(4, 5), (3, 2)]), Order.FCFS, Option.BACKFILL) == RoundPlan(
        started=(1,), plan={0: 10, 1: 0})


def test_conservative_backfilling_reserves_for_every_blocked_job_however_long_the_queue() -> None:
    # R = 1, busy until 10, 300 one-second jobs waiting: each gets its own slot, 10, 11, ..., 309
    s = state(0, 1, [(1, 10)], [(1, 1)] * 300)
    assert conservative(Order.FCFS).plan(s) == {i: 10 + i for i in range(300)}
