"""Jobs as explicit state machines: SUBMITTED -> WAITING -> RUNNING -> COMPLETED, or one of the failure ends."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TypeVar

from mechanism.executor import ExecutorInfo
from mechanism.launch_plan import LaunchPlan
from mechanism.pricing import PriceMenu
from mechanism.sow import Signal, SoW

T = TypeVar("T")


class JobState(enum.Enum):
    SUBMITTED = "SUBMITTED"  # quoted, not arrived yet
    WAITING = "WAITING"  # arrived, scheduled to start
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    EVICTED = "EVICTED"  # removed while running (LIFO overload, or ran past its longest declared duration)
    CANCELLED = "CANCELLED"  # removed by LIFO before it started
    EXPIRED = "EXPIRED"  # its last possible arrival passed unreported
    NOT_SCHEDULED = "NOT_SCHEDULED"  # arrived in a group whose plan says never

    @property
    def active(self) -> bool:
        return self in (JobState.SUBMITTED, JobState.WAITING, JobState.RUNNING)


ALLOWED: dict[JobState, frozenset[JobState]] = {
    JobState.SUBMITTED: frozenset({JobState.WAITING, JobState.NOT_SCHEDULED, JobState.CANCELLED, JobState.EXPIRED}),
    JobState.WAITING: frozenset({JobState.RUNNING, JobState.CANCELLED}),
    JobState.RUNNING: frozenset({JobState.COMPLETED, JobState.EVICTED}),
}


class IllegalTransition(RuntimeError):
    """A job was asked to move between states that its life cycle does not connect."""


class Released(RuntimeError):
    """Something only an active job holds was asked of a job that ended and released it."""


@dataclass
class Job:
    """One admitted SoW and everything the engine has observed about it.

    While active it holds its SoW, its frozen price menu and its plan; once it ends, `release` drops what no
    read needs any more (a completed job keeps its plan: its invoice line quotes it), so a long history costs
    little memory.
    """

    id: str
    seq: int  # birth order across the whole engine: LIFO evicts the largest seq first
    birth: int
    concurrency: int
    held_sow: SoW | None = field(repr=False)
    held_menu: PriceMenu | None = field(repr=False)
    held_plan: LaunchPlan | None = field(repr=False)
    state: JobState = JobState.SUBMITTED
    arrival: int | None = None
    signal: Signal = None
    start: int | None = None
    finish: int | None = None  # completion round f = s + d (completed jobs only)
    ended: int | None = None  # round of the transition into a terminal state
    charge: float = 0.0
    value: float = 0.0
    pending_arrival: tuple[int, Signal] | None = field(default=None, repr=False)
    pending_completion: int | None = field(default=None, repr=False)
    # Kept after the job ends (the mechanism ignores them): its payload, its parents (engine keys) and where it ran.
    command: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()  # sorted by name
    after: tuple[str, ...] = ()
    parents_left: int = 0  # parents not completed yet; at 0 the server reports its arrival (docs/workloads-and-sows.md)
    executor: ExecutorInfo | None = None
    longest: int | None = None  # max_duration, fixed when it starts and kept after it ends (the executor's limit)

    @property
    def sow(self) -> SoW:
        return self._held(self.held_sow, "SoW")

    @property
    def menu(self) -> PriceMenu:
        return self._held(self.held_menu, "price menu")

    @property
    def plan(self) -> LaunchPlan:
        return self._held(self.held_plan, "plan")

    def _held(self, thing: T | None, name: str) -> T:
        if thing is None:
            raise Released(f"job {self.id} ended ({self.state.value}) and no longer holds its {name}")
        return thing

    def release(self) -> None:
        """Drop the SoW and the menu (and the plan unless it completed); only an ended job may."""
        if self.state.active:
            raise IllegalTransition(f"job {self.id} is {self.state.value}: only an ended job releases its SoW")
        self.held_sow = self.held_menu = None
        if self.state is not JobState.COMPLETED:
            self.held_plan = None

    def move(self, new: JobState, round_: int) -> None:
        if new not in ALLOWED.get(self.state, frozenset()):
            raise IllegalTransition(f"job {self.id}: {self.state.value} -> {new.value} is not allowed")
        self.state = new
        if not new.active:
            self.ended = round_

    @property
    def max_duration(self) -> int:
        """Longest declared duration of the observed (arrival, signal) group."""
        offset = (self.arrival or 0) - self.birth
        return max(o.duration for o, s in zip(self.sow.outcomes, self.sow.signals, strict=True)
                   if o.arrival_offset == offset and s == self.signal)

    def last_arrival(self) -> int:
        return self.birth + max(o.arrival_offset for o in self.sow.outcomes)
