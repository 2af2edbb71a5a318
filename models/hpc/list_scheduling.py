"""List scheduling (seed 001, Alg. 1): queue orders, STRICT / GREEDY / BACKFILL, conservative and EASY."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from models.hpc.simulator import RoundState, Waiting


class Order(StrEnum):
    """Line 1 of Alg. 1: how the waiting jobs are arranged (ties broken FCFS)."""

    FCFS = "fcfs"  # earliest submit first (List-REG)
    SJF = "sjf"  # ascending E_j
    SAF = "saf"  # ascending r_j E_j
    LAF = "laf"  # descending r_j E_j
    SPF = "spf"  # ascending r_j E_j^2


class Option(StrEnum):
    """Line 6 of Alg. 1: what to do with a job that cannot start right away."""

    STRICT = "strict"
    GREEDY = "greedy"
    BACKFILL = "backfill"


def order_key(order: Order) -> Callable[[Waiting], tuple[int, ...]]:
    """Sort key of a waiting job for `order`."""
    keys: dict[Order, Callable[[Waiting], tuple[int, ...]]] = {
        Order.FCFS: lambda w: (w.submit, w.index),
        Order.SJF: lambda w: (w.estimate, w.submit, w.index),
        Order.SAF: lambda w: (w.size * w.estimate, w.submit, w.index),
        Order.LAF: lambda w: (-w.size * w.estimate, w.submit, w.index),
        Order.SPF: lambda w: (w.size * w.estimate * w.estimate, w.submit, w.index),
    }
    return keys[order]


class FreeProfile:
    """Free nodes over time as breakpoints: free[i] nodes on [times[i], times[i+1]); the last lasts forever."""

    def __init__(self, state: RoundState) -> None:
        self.nodes = state.nodes
        releases: dict[int, int] = {}
        for run in state.running:
            releases[run.end] = releases.get(run.end, 0) + run.size
        self.times = [state.now]
        self.free = [state.free]
        for end in sorted(releases):
            if end <= state.now:
                self.free[0] += releases[end]
                continue
            self.times.append(end)
            self.free.append(self.free[-1] + releases[end])

    def fits(self, start_index: int, size: int, duration: int) -> int:
        """-1 if `size` nodes are free on [times[i], times[i] + duration), else the first blocking index."""
        times, free = self.times, self.free
        end = times[start_index] + duration
        k = start_index
        while k < len(times) and times[k] < end:
            if free[k] < size:
                return k
            k += 1
        return -1

    def earliest(self, size: int, duration: int) -> int:
        """The earliest breakpoint at which `size` nodes stay free for `duration` seconds."""
        if size > self.nodes:
            raise ValueError(f"size={size} exceeds nodes={self.nodes}")
        i = 0
        while True:
            if self.free[i] < size:
                i += 1
                continue
            blocked = self.fits(i, size, duration)
            if blocked < 0:
                return self.times[i]
            i = blocked + 1

    def _breakpoint(self, t: int) -> int:
        i = bisect_left(self.times, t)
        if i == len(self.times) or self.times[i] != t:
            self.times.insert(i, t)
            self.free.insert(i, self.free[i - 1])
        return i

    def reserve(self, start: int, size: int, duration: int) -> None:
        """Take `size` nodes on [start, start + duration)."""
        if start < self.times[0]:
            raise ValueError(f"start={start} is before the profile origin {self.times[0]}")
        first = self._breakpoint(start)
        last = self._breakpoint(start + duration)
        for k in range(first, last):
            self.free[k] -= size
            if self.free[k] < 0:
                raise ValueError(f"reservation of {size} nodes at t={start} overflows the machine")


@dataclass(frozen=True)
class RoundPlan:
    """Jobs started now (in list order) and the planned start b_j of every placed job."""

    started: tuple[int, ...]
    plan: dict[int, int]


def list_round(
    state: RoundState,
    order: Order,
    option: Option,
    reservations: int | None = None,
    full_plan: bool = False,
) -> RoundPlan:
    """Alg. 1 over the queue; BACKFILL reserves for at most `reservations` blocked jobs (None: all).

    Unless `full_plan`, the round stops as soon as no remaining job is small enough for the nodes free
    now: later reservations cannot change which jobs start now.
    """
    profile = FreeProfile(state)
    ordered = sorted(state.queue, key=order_key(order))
    suffix_min = [0] * (len(ordered) + 1)
    suffix_min[-1] = state.nodes + 1
    for pos in range(len(ordered) - 1, -1, -1):
        suffix_min[pos] = min(ordered[pos].size, suffix_min[pos + 1])
    started: list[int] = []
    plan: dict[int, int] = {}
    reserved = 0
    for pos, w in enumerate(ordered):
        if not full_plan and profile.free[0] < suffix_min[pos]:
            break
        if profile.free[0] >= w.size and profile.fits(0, w.size, w.estimate) < 0:
            profile.reserve(state.now, w.size, w.estimate)
            started.append(w.index)
            plan[w.index] = state.now
        elif option is Option.STRICT:
            break
        elif option is Option.BACKFILL and (reservations is None or reserved < reservations):
            begin = profile.earliest(w.size, w.estimate)
            profile.reserve(begin, w.size, w.estimate)
            plan[w.index] = begin
            reserved += 1
    return RoundPlan(started=tuple(started), plan=plan)


@dataclass(frozen=True)
class ListScheduler:
    """A list scheduler: order + option (+ reservation depth: None conservative, 1 EASY)."""

    order: Order
    option: Option = Option.BACKFILL
    reservations: int | None = None

    def __call__(self, state: RoundState) -> Sequence[int]:
        return list_round(state, self.order, self.option, self.reservations).started

    def plan(self, state: RoundState) -> dict[int, int]:
        """The full plan of the round: a start time for every queued job (conservative only)."""
        return list_round(state, self.order, self.option, self.reservations, full_plan=True).plan


def conservative(order: Order) -> ListScheduler:
    """Backfilling with a reservation for every job."""
    return ListScheduler(order, Option.BACKFILL, None)


def easy(order: Order = Order.FCFS) -> ListScheduler:
    """EASY backfilling: a reservation for the first blocked job only, then greedy."""
    return ListScheduler(order, Option.BACKFILL, 1)
