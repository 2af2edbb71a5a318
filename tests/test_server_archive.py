"""The archive's reads cost what they return, not the size of the archive (they run under the scheduler's lock)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mechanism.events import Event
from mechanism.history import History, HistoryMarks
from server.archive import SCHEMA, Archive


def archive_of(owners: list[str]) -> Archive:
    """An archive of one event per entry of `owners` (the tenant of that event's job), all of them visible."""
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.executescript(SCHEMA)
    archive = Archive(db, Path("memory.db"))
    events = [Event(seq=i, round=i // 10, type="start", job=f"j{i}", data={"start": i // 10})
              for i in range(len(owners))]
    archive.add(History(HistoryMarks(0, 0, 0), [], events, []), {f"j{i}": t for i, t in enumerate(owners)})
    archive.show(archive.marks())
    return archive


def steps(archive: Archive, read: Callable[[Archive], Any]) -> int:
    """SQLite virtual machine steps (in thousands) that `read` takes: a measure of work that no clock disturbs."""
    count = [0]

    def tick() -> int:
        count[0] += 1
        return 0
    archive._db.set_progress_handler(tick, 1000)
    read(archive)
    archive._db.set_progress_handler(None, 1000)
    return count[0]


def test_a_tenants_archived_events_are_read_without_scanning_every_other_tenants() -> None:
    def read(a: Archive) -> Any:
        return a.events(0, 256, "globex")
    few, many = archive_of(["acme"] * 100 + ["globex"] * 5), archive_of(["acme"] * 50_000 + ["globex"] * 5)
    assert [e.seq for e in read(many)] == list(range(50_000, 50_005))
    assert steps(many, read) <= steps(few, read) + 5
