"""Event-driven simulator: one round per event instant, estimates, and refusal of impossible decisions."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from models.hpc.jobs import Job, Workload
from models.hpc.simulator import RoundState, SchedulerError, simulate


def workload(nodes: int, *jobs: tuple[int, int, int, int]) -> Workload:
    """Jobs as (submit, runtime, size, requested)."""
    return Workload(tuple(Job(i, s, d, r, q) for i, (s, d, r, q) in enumerate(jobs)), nodes)


class Recorder:
    """Starts every queued job that fits now, in submit order, and records every round it sees."""

    def __init__(self) -> None:
        self.states: list[RoundState] = []

    def __call__(self, state: RoundState) -> Sequence[int]:
        self.states.append(state)
        free, chosen = state.free, []
        for w in state.queue:
            if w.size <= free:
                chosen.append(w.index)
                free -= w.size
        return chosen


def test_one_round_per_instant_even_with_simultaneous_events() -> None:
    # job 0 ends at 10 exactly when jobs 1 and 2 arrive: a single round at t = 10
    w = workload(2, (0, 10, 2, 10), (10, 5, 1, 5), (10, 5, 1, 5))
    rec = Recorder()
    result = simulate(w, rec)
    assert [s.now for s in rec.states] == [0, 10]
    assert result.starts == (0, 10, 10)
    assert result.rounds == 2


def test_round_sees_free_nodes_queue_in_submit_order_and_running_estimates() -> None:
    w = workload(4, (0, 10, 3, 30), (1, 5, 2, 8), (2, 5, 1, 8))
    rec = Recorder()
    simulate(w, rec, estimates="requested")
    at2 = next(s for s in rec.states if s.now == 2)
    assert at2.free == 1  # 4 nodes minus job 0's 3; job 1 (2 nodes) could not start at t = 1
    assert [q.index for q in at2.queue] == [1, 2]
    assert [q.estimate for q in at2.queue] == [8, 8]
    assert [(r.index, r.end) for r in at2.running] == [(0, 30)]


def test_jobs_complete_at_their_true_runtime_not_the_estimate() -> None:
    w = workload(1, (0, 4, 1, 100), (0, 3, 1, 100))
    result = simulate(w, Recorder(), estimates="requested")
    assert result.starts == (0, 4)


def test_starting_a_job_not_in_the_queue_is_refused() -> None:
    w = workload(1, (0, 4, 1, 4))
    with pytest.raises(SchedulerError, match=r"t=0: job index 7 is not in the queue"):
        simulate(w, lambda state: [7])


def test_starting_a_job_twice_is_refused() -> None:
    w = workload(2, (0, 4, 1, 4))
    with pytest.raises(SchedulerError, match=r"job index 0 started twice"):
        simulate(w, lambda state: [0, 0])


def test_exceeding_the_free_nodes_is_refused() -> None:
    w = workload(2, (0, 4, 2, 4), (0, 4, 1, 4))
    with pytest.raises(SchedulerError, match=r"starts need 3 nodes, only 2 free"):
        simulate(w, lambda state: [q.index for q in state.queue])


def test_a_scheduler_that_never_starts_a_job_is_reported() -> None:
    w = workload(2, (0, 4, 1, 4))
    with pytest.raises(SchedulerError, match=r"1 jobs never started"):
        simulate(w, lambda state: [])


def test_max_queue_is_the_longest_queue_any_round_saw() -> None:
    # R = 1: job 0 runs [0, 10); jobs 1-3 arrive at 1, 2, 3 and wait: the round at t = 3 sees all three
    w = workload(1, (0, 10, 1, 10), (1, 5, 1, 5), (2, 5, 1, 5), (3, 5, 1, 5))
    rec = Recorder()
    result = simulate(w, rec)
    assert [len(s.queue) for s in rec.states] == [1, 1, 2, 3, 3, 2, 1]
    assert (result.max_queue, result.rounds) == (3, 7)
    assert result.starts == (0, 10, 15, 20)
