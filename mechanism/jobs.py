"""Jobs as explicit state machines: SUBMITTED -> WAITING -> RUNNING -> COMPLETED, or one of the failure ends."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from mechanism.launch_plan import LaunchPlan
from mechanism.pricing import Menu
from mechanism.sow import Signal, SoW


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


@dataclass
class Job:
    """One admitted SoW and everything the engine has observed about it."""

    id: str
    seq: int  # birth order across the whole engine: LIFO evicts the largest seq first
    birth: int
    sow: SoW
    menu: Menu
    plan: LaunchPlan
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
