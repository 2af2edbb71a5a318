"""EASY backfilling driven by runtime predictions (EASY++ and risk-aware variants), as the predictsim simulator runs.

The event order at one instant follows predictsim's pyss: predictions that run out are corrected first, then
submissions, then terminations; the scheduler runs once per instant, after its last event (pyss's
RunSchedulerEvent, lowest in the order), when a termination or a submission asked for it.
A pass starts queue heads while they fit, reserves the first blocked job at the earliest instant the predicted
ends of the running jobs free enough nodes (the shadow time; every job predicted to end then frees its nodes,
as pyss's CPU snapshot counts them), and backfills the rest of the queue in the policy's order: a candidate
starts if it fits now and either ends (predicted) by the shadow time or uses only the nodes the head leaves
spare ("extra"); a risk-aware policy replaces the first test with a probability.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from models.hpc.jobs import Workload

# Event kinds in their order at one instant (pyss EVENTS_ORDER: prediction over, submission, termination).
PREDICTION_OVER, SUBMISSION, TERMINATION = 0, 1, 2
_KIND = 48  # an event key's bits: its counter below _KIND (far more events than any trace makes), its kind's
_TIME = _KIND + 2  # two bits above, its time (>= 0, as every submission is) from _TIME up
_COUNTER = (1 << _KIND) - 1


class BackfillPolicy(Protocol):
    """What a prediction-driven EASY needs: predictions, corrections, learning, the backfill order and test."""

    def on_submit(self, index: int, now: int) -> int:
        """The predicted runtime (seconds, >= 1) of job `index` submitted at `now`."""
        ...

    def on_prediction_over(self, index: int, now: int, elapsed: int) -> int:
        """The corrected predicted runtime (> elapsed) of a job that has run `elapsed` seconds."""
        ...

    def on_complete(self, index: int, now: int) -> None:
        """Job `index` completed at `now` (its runtime may now be learned)."""
        ...

    def backfill_key(self, index: int) -> float:
        """Backfill candidates are tried in ascending key order (ties: submission order)."""
        ...

    def ends_by(self, index: int, now: int, shadow: int) -> bool:
        """May job `index` start at `now` as a job that ends by the head's reservation at `shadow`?"""
        ...

    def on_reservation(self, head: int, share: float) -> None:
        """A pass reserves for job `head`, which needs `share` of the machine (before its `ends_by` calls)."""
        ...


@dataclass
class BackfillResult:
    """Start time b_j of every job and counters of the run."""

    starts: tuple[int, ...]
    passes: int
    backfilled: int
    corrections: int
    extras: dict[str, int] = field(default_factory=dict)


@dataclass
class _State:
    nodes: int
    queue: list[int] = field(default_factory=list)
    predicted_end: list[int] = field(default_factory=list)  # per job, while it runs
    busy: int = 0
    ending: dict[int, int] = field(default_factory=dict)  # predicted end -> nodes of the running jobs ending then
    passes: int = 0
    backfilled: int = 0


def _free_now(state: _State, now: int) -> int:
    """Nodes free at `now` by the predicted ends (a job predicted to end at `now` frees its nodes now).

    No running job is predicted to end before `now`: a prediction that runs out is corrected (to a later end)
    before anything else happens at that instant, and a job that ends before its prediction has left (at a
    pass, so has a job that ends at its prediction: the pass comes after the instant's terminations).
    """
    return state.nodes - state.busy + state.ending.get(now, 0)


def _move_end(state: _State, size: int, old: int | None, new: int | None) -> None:
    """A running job of `size` nodes is now predicted to end at `new` instead of `old` (None: not running)."""
    if old is not None:
        left = state.ending[old] - size
        if left:
            state.ending[old] = left
        else:
            del state.ending[old]
    if new is not None:
        state.ending[new] = state.ending.get(new, 0) + size


def _shadow(state: _State, now: int, free: int, size: int) -> tuple[int, int]:
    """The head's reservation: the earliest predicted end at which `size` nodes are free, and the spare nodes."""
    available = free
    for end in sorted(e for e in state.ending if e > now):
        available += state.ending[end]  # every job predicted to end then frees its nodes then
        if available >= size:
            return end, available - size
    raise ValueError(f"t={now}: a job of {size} nodes never fits on {state.nodes} nodes")


def _start(state: _State, index: int, size: int, now: int, predicted: int, starts: list[int]) -> None:
    starts[index] = now
    state.predicted_end[index] = now + predicted
    state.busy += size
    _move_end(state, size, None, now + predicted)


def _pass(
    state: _State, now: int, sizes: Sequence[int], predicted: list[int], policy: BackfillPolicy, starts: list[int]
) -> list[int]:
    """One scheduling pass; returns the jobs started."""
    state.passes += 1
    started: list[int] = []
    free = _free_now(state, now)
    queue = state.queue
    while queue and sizes[queue[0]] <= free:
        head = queue.pop(0)
        _start(state, head, sizes[head], now, predicted[head], starts)
        started.append(head)
        free -= sizes[head]
    if len(queue) <= 1:
        return started
    # only a job that fits the nodes free now can be backfilled (free only shrinks during the pass)
    candidates = [i for i in queue[1:] if sizes[i] <= free]
    if not candidates:
        return started
    shadow, extra = _shadow(state, now, free, sizes[queue[0]])
    policy.on_reservation(queue[0], sizes[queue[0]] / state.nodes)
    candidates.sort(key=policy.backfill_key)  # stable: ties stay in submission order, as the queue is
    chosen: set[int] = set()
    for index in candidates:
        size = sizes[index]
        if size > free:
            continue
        if policy.ends_by(index, now, shadow):
            pass
        elif size <= extra:
            extra -= size
        else:
            continue
        free -= size
        _start(state, index, size, now, predicted[index], starts)
        chosen.add(index)
        started.append(index)
    if chosen:
        state.backfilled += len(chosen)
        state.queue = [i for i in queue if i not in chosen]
    return started


def simulate_backfill(workload: Workload, policy: BackfillPolicy, pass_if_new_fits: bool = False) -> BackfillResult:
    """Replay the workload under prediction-driven EASY: one scheduling pass per instant, after its last event.

    A termination always asks for the instant's pass; a submission does too, except that with
    `pass_if_new_fits` (pyss's plain EASY) it asks only when the submitted job fits the free nodes.
    """
    jobs = workload.jobs
    sizes = [j.size for j in jobs]
    runtimes = [j.runtime for j in jobs]
    predicted = [0] * len(jobs)
    starts = [-1] * len(jobs)
    state = _State(workload.nodes, predicted_end=[0] * len(jobs))
    pend = state.predicted_end
    # an event is one int, (time, kind, counter) in heap order: counter's bits below _KIND, the kind's two bits
    # below _TIME; `owner[counter]` is its job (a submission's counter is its job's index)
    events = [(j.submit << _TIME) | (SUBMISSION << _KIND) | i for i, j in enumerate(jobs)]
    heapq.heapify(events)
    owner = list(range(len(jobs)))
    push, pop = heapq.heappush, heapq.heappop
    corrections = 0

    def launch(started: list[int], now: int) -> None:
        for index in started:
            push(events, (now + runtimes[index]) << _TIME | TERMINATION << _KIND | len(owner))
            owner.append(index)
            if predicted[index] < runtimes[index]:
                push(events, (now + predicted[index]) << _TIME | PREDICTION_OVER << _KIND | len(owner))
                owner.append(index)

    wanted = False  # has an event of this instant asked for a pass (pyss's RunSchedulerEvent)?
    while events:
        key = pop(events)
        now, kind, index = key >> _TIME, (key >> _KIND) & 3, owner[key & _COUNTER]
        if kind == PREDICTION_OVER:
            elapsed = now - starts[index]
            new = policy.on_prediction_over(index, now, elapsed)
            if new <= elapsed:
                raise ValueError(f"job {jobs[index].id}: corrected prediction {new} is not above elapsed {elapsed}")
            corrections += 1
            predicted[index] = new
            _move_end(state, sizes[index], pend[index], starts[index] + new)
            pend[index] = starts[index] + new
            if new < runtimes[index]:
                push(events, (starts[index] + new) << _TIME | PREDICTION_OVER << _KIND | len(owner))
                owner.append(index)
        elif kind == SUBMISSION:
            predicted[index] = max(1, int(policy.on_submit(index, now)))
            state.queue.append(index)
            wanted = wanted or not pass_if_new_fits or sizes[index] <= _free_now(state, now)
        else:
            state.busy -= sizes[index]
            _move_end(state, sizes[index], pend[index], None)
            policy.on_complete(index, now)
            wanted = True
        if wanted and not (events and events[0] >> _TIME == now):  # the instant's last event: its one pass
            wanted = False
            launch(_pass(state, now, sizes, predicted, policy, starts), now)
    if state.queue:
        raise ValueError(f"simulation ended with {len(state.queue)} jobs never started")
    return BackfillResult(tuple(starts), state.passes, state.backfilled, corrections)
