"""Event-driven simulator of rigid jobs on R identical nodes: one scheduling round per event instant."""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from models.hpc.jobs import Estimates, Workload, estimate


@dataclass(frozen=True, slots=True)
class Waiting:
    """A queued job as the scheduler sees it: index into the workload, s_j, r_j and the estimate E_j."""

    index: int
    submit: int
    size: int
    estimate: int


@dataclass(frozen=True, slots=True)
class Running:
    """A running job: its nodes are busy until the estimated end b_j + E_j (never before the true end)."""

    index: int
    size: int
    end: int


@dataclass(frozen=True, slots=True)
class RoundState:
    """Everything a scheduler may use at one round: the time, R, the free nodes, the queue (submit order)."""

    now: int
    nodes: int
    free: int
    queue: tuple[Waiting, ...]
    running: tuple[Running, ...]


class Scheduler(Protocol):
    """A scheduling round: returns the indices of queued jobs to start at `state.now`."""

    def __call__(self, state: RoundState) -> Sequence[int]: ...


class SchedulerError(ValueError):
    """A scheduler asked for something the machine cannot do."""


@dataclass(frozen=True)
class SimulationResult:
    """Start time b_j of every job (aligned with workload.jobs) and round statistics."""

    starts: tuple[int, ...]
    rounds: int
    max_queue: int


def _validate(state: RoundState, chosen: Sequence[int]) -> int:
    queued = {w.index: w.size for w in state.queue}
    used = 0
    seen: set[int] = set()
    for index in chosen:
        if index not in queued:
            raise SchedulerError(f"round at t={state.now}: job index {index} is not in the queue")
        if index in seen:
            raise SchedulerError(f"round at t={state.now}: job index {index} started twice")
        seen.add(index)
        used += queued[index]
    if used > state.free:
        raise SchedulerError(f"round at t={state.now}: starts need {used} nodes, only {state.free} free")
    return used


def simulate(workload: Workload, scheduler: Scheduler, estimates: Estimates = "exact") -> SimulationResult:
    """Replay arrivals; at each submission or completion instant run one round (if the queue is non-empty)."""
    jobs = workload.jobs
    est = [estimate(j, estimates) for j in jobs]
    starts = [-1] * len(jobs)
    queue: list[Waiting] = []
    running: dict[int, Running] = {}
    completions: list[tuple[int, int]] = []
    free = workload.nodes
    arrival = rounds = max_queue = 0
    inf = float("inf")
    while arrival < len(jobs) or completions:
        now = int(min(jobs[arrival].submit if arrival < len(jobs) else inf, completions[0][0] if completions else inf))
        while completions and completions[0][0] == now:
            _, index = heapq.heappop(completions)
            free += running.pop(index).size
        while arrival < len(jobs) and jobs[arrival].submit == now:
            job = jobs[arrival]
            queue.append(Waiting(arrival, job.submit, job.size, est[arrival]))
            arrival += 1
        if not queue:
            continue
        rounds += 1
        max_queue = max(max_queue, len(queue))
        state = RoundState(now, workload.nodes, free, tuple(queue), tuple(running.values()))
        chosen = list(scheduler(state))
        if not chosen:
            continue
        free -= _validate(state, chosen)
        for index in chosen:
            starts[index] = now
            running[index] = Running(index, jobs[index].size, now + est[index])
            heapq.heappush(completions, (now + jobs[index].runtime, index))
        picked = set(chosen)
        queue = [w for w in queue if w.index not in picked]
    if queue:
        raise SchedulerError(f"simulation ended with {len(queue)} jobs never started")
    return SimulationResult(starts=tuple(starts), rounds=rounds, max_queue=max_queue)
