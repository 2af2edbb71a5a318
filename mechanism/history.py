"""History: what the engine never changes again (ended jobs, events, charges), and where it goes when forgotten."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from mechanism.events import Event
from mechanism.jobs import Job
from mechanism.ledger import Charge


@dataclass(frozen=True)
class HistoryMarks:
    """Lengths of the engine's append-only sequences: retired jobs, events, charges."""

    retired: int
    events: int
    charges: int

    def covers(self, other: HistoryMarks) -> bool:
        """True if every sequence here is at least as long as in `other`."""
        return self.retired >= other.retired and self.events >= other.events and self.charges >= other.charges


@dataclass(frozen=True)
class ChainPoint:
    """The engine's two hash chains after the first `marks.events` events and `marks.retired` retired jobs: a point
    up to which a restore has already checked the archive, so the next one hashes only what came after."""

    marks: HistoryMarks
    events: bytes
    retired: bytes


@dataclass
class History:
    """A consecutive piece of the append-only state, starting at `start`."""

    start: HistoryMarks
    jobs: list[Job]  # retired jobs, in retirement order
    events: list[Event]
    charges: list[Charge]


class HistoryLookup(Protocol):
    """Where the engine finds a job it has forgotten (`Engine.forget_history`): its final record, or None."""

    def job(self, job_id: str) -> Job | None: ...


class MemoryArchive:
    """A HistoryLookup that keeps forgotten history in memory, in order (tests; the server's is in SQLite)."""

    def __init__(self) -> None:
        self.jobs: list[Job] = []
        self.events: list[Event] = []
        self.charges: list[Charge] = []
        self._by_id: dict[str, Job] = {}

    @property
    def marks(self) -> HistoryMarks:
        return HistoryMarks(len(self.jobs), len(self.events), len(self.charges))

    def add(self, part: History) -> None:
        if part.start != self.marks:
            raise ValueError(f"history part starts at {part.start}, expected {self.marks}")
        self.jobs.extend(part.jobs)
        self.events.extend(part.events)
        self.charges.extend(part.charges)
        self._by_id.update((j.id, j) for j in part.jobs)

    def job(self, job_id: str) -> Job | None:
        return self._by_id.get(job_id)
