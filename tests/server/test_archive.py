"""The archive's reads cost what they return, not the size of the archive (they run under the scheduler's lock)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mechanism.events import Event
from mechanism.history import History, HistoryMarks
from mechanism.ledger import Charge
from server import namespace
from server.archive import SCHEMA, Archive
from tests.server.test_reads import lifecycle_commands
from tests.server.test_snapshot import everything, open_with


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


def test_a_read_only_open_beside_the_writer_reads_the_archive_only_up_to_its_own_snapshot(tmp_path: Path) -> None:
    # `sowsched state-digest --store` beside a running server: the writer goes on archiving after the reader's
    # snapshot, and the rows from the reader's marks on are history the reader still holds (or never saw)
    path = tmp_path / "s.db"
    writer = open_with(path, 3)
    for i, command in enumerate(lifecycle_commands(3, 120, writer.engine)):
        with contextlib.suppress(Exception):
            writer.execute(command[0], f"r{i}", command[1], command[2])
    reader = open_with(path, 3, read_only=True)
    marks, seen = reader.engine.forgotten, everything(reader)
    assert marks.retired and marks.events and marks.charges
    for i, command in enumerate(lifecycle_commands(4, 120, writer.engine)):
        with contextlib.suppress(Exception):
            writer.execute(command[0], f"s{i}", command[1], command[2])
    later = writer.store.archive.marks()
    assert later.retired > marks.retired and later.events > marks.events and later.charges > marks.charges
    assert everything(reader) == seen
    archive = reader.store.archive
    first_after = archive._db.execute("SELECT id, tenant FROM archived_jobs WHERE retired = ?",
                                      (marks.retired,)).fetchone()
    assert archive.job(first_after[0]) is None and archive.owner(first_after[0]) is None
    assert [j.id for j in archive.all_jobs()] == [j.id for j in writer.store.archive.all_jobs()][:marks.retired]
    assert len(list(archive.all_events())) == marks.events and len(list(archive.all_charges())) == marks.charges
    reader.close()
    writer.close()


def test_truncating_drops_every_row_at_or_beyond_the_marks_and_nothing_before() -> None:
    # a restart that falls back drops what the unused snapshots archived: the next history part starts at the marks
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.executescript(SCHEMA)
    archive = Archive(db, Path("memory.db"))
    events = [Event(seq=i, round=i, type="start", job=f"j{i}", data={"start": i}) for i in range(3)]
    charges = [Charge(f"j{i}", i, i, 1, 1, 1.5 * i) for i in range(3)]
    archive.add(History(HistoryMarks(0, 0, 0), [], events, charges), {f"j{i}": "acme" for i in range(3)})
    db.executemany("INSERT INTO archived_jobs VALUES (?, ?, ?, 'acme', 'COMPLETED', x'00')",
                   [(i, i, f"j{i}") for i in range(3)])
    assert archive.marks() == HistoryMarks(3, 3, 3)
    archive.truncate(HistoryMarks(1, 2, 1))
    assert archive.marks() == HistoryMarks(1, 2, 1)
    assert db.execute("SELECT (SELECT MIN(retired) FROM archived_jobs), (SELECT MIN(seq) FROM archived_events), "
                      "(SELECT MIN(idx) FROM archived_charges)").fetchone() == (0, 0, 0)


def test_every_read_sees_only_the_rows_before_the_shown_marks(tmp_path: Path) -> None:
    # the rows at and beyond the marks are history the engine still holds (or a writer archived after a reader's
    # snapshot): shown one row short of the end in each table, every read leaves out exactly that row
    sched = open_with(tmp_path / "s.db", 3)
    for i, command in enumerate(lifecycle_commands(3, 150, sched.engine)):
        with contextlib.suppress(Exception):
            sched.execute(command[0], f"r{i}", command[1], command[2])
    archive, end = sched.store.archive, sched.store.archive.marks()
    archive.show(end)
    jobs, events, charges = list(archive.all_jobs()), list(archive.all_events()), list(archive.all_charges())
    listed = archive.jobs(-1, 10**6)
    assert (len(jobs), len(events), len(charges)) == (end.retired, end.events, end.charges) and end.charges > 1
    last_job, last_charge = jobs[-1], charges[-1]
    tenant, payer = dict((j.id, t) for j, t in listed)[last_job.id], namespace.tenant_of(last_charge.job)
    billed = [c for _, c in archive.charges(payer, -1, 10**6, (0, None))]
    archive.show(HistoryMarks(end.retired - 1, end.events - 1, end.charges - 1))
    assert list(archive.all_jobs()) == jobs[:-1] and list(archive.all_events()) == events[:-1]
    assert list(archive.all_charges()) == charges[:-1]
    assert archive.job(last_job.id) is None and archive.owner(last_job.id) is None
    assert archive.holds_tenant(tenant) == any(t == tenant and j.id != last_job.id for j, t in listed)
    assert [j.id for j, _ in archive.jobs(-1, 10**6)] == [j.id for j, _ in listed if j.id != last_job.id]
    assert archive.events(0, 10**6) == events[:-1]
    assert [c for _, c in archive.charges(payer, -1, 10**6, (0, None))] == billed[:-1]
    assert list(archive.amounts(payer, (0, None))) == [c.amount for c in billed[:-1]]
    archive.show(HistoryMarks(0, 0, 0))  # nothing forgotten yet: the archive serves nothing
    assert not any(archive.holds_tenant(t) for t in ("acme", "globex", tenant))
    assert archive.job(jobs[0].id) is None and archive.jobs(-1, 10**6) == [] and archive.events(0, 10**6) == []
    assert archive.charges(payer, -1, 10**6, (0, None)) == [] and list(archive.amounts(payer, (0, None))) == []
    sched.close()
