"""The archive: the history the engine has forgotten (ended jobs, events, charges), in the store's SQLite file.

The scheduler writes the history added since the last snapshot in the snapshot's own transaction and then lets
the engine forget it, so the archive always holds exactly the history up to the newest snapshot's marks and the
server's memory follows the active jobs and the snapshot interval, not its age. Reads that reach back further
(GetJob, ListJobs, GetInvoice, WatchEvents, reports on ended jobs) come from here. Every call runs under the
scheduler's lock, on the store's connection; writes run inside the caller's transaction.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

from mechanism.events import Event
from mechanism.history import History, HistoryMarks
from mechanism.jobs import Job
from mechanism.ledger import Charge

SCHEMA = """
CREATE TABLE IF NOT EXISTS archived_jobs (
    retired INTEGER PRIMARY KEY,  -- retirement order (the engine's retired chain)
    seq INTEGER NOT NULL UNIQUE,  -- submission order
    id TEXT NOT NULL UNIQUE,
    tenant TEXT NOT NULL,
    state TEXT NOT NULL,
    record BLOB NOT NULL  -- the ended Job, pickled
);
CREATE INDEX IF NOT EXISTS archived_jobs_tenant ON archived_jobs (tenant, seq);
CREATE TABLE IF NOT EXISTS archived_events (
    seq INTEGER PRIMARY KEY,
    tenant TEXT NOT NULL,  -- owner of the event's job
    record TEXT NOT NULL  -- Event.to_dict() as JSON
);
CREATE INDEX IF NOT EXISTS archived_events_tenant ON archived_events (tenant, seq);
CREATE TABLE IF NOT EXISTS archived_charges (
    idx INTEGER PRIMARY KEY,  -- ledger position
    tenant TEXT NOT NULL,
    job TEXT NOT NULL,
    round INTEGER NOT NULL,
    start INTEGER NOT NULL,
    duration INTEGER NOT NULL,
    concurrency INTEGER NOT NULL,
    amount REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS archived_charges_tenant ON archived_charges (tenant, round, idx);
"""
T = TypeVar("T")


class ArchiveError(RuntimeError):
    """The archive cannot be read or written."""


class Archive:
    """Archived history in the store's database `db` (file `path`, for messages)."""

    def __init__(self, db: sqlite3.Connection, path: Path) -> None:
        self._db = db
        self._path = path
        # Reads see only the history before these marks, the part the engine has forgotten (`show`): rows a
        # discarded snapshot left, or rows written just before the engine forgot them, are never read twice.
        self.visible = HistoryMarks(0, 0, 0)

    def show(self, marks: HistoryMarks) -> None:
        """Let reads see the history before `marks` (the engine's `forgotten`)."""
        self.visible = marks

    def _run(self, what: str, action: Callable[[], T]) -> T:
        try:
            return action()
        except sqlite3.Error as exc:
            raise ArchiveError(f"store {self._path}: cannot {what}: {exc}") from None

    def _rows(self, what: str, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return self._run(what, lambda: self._db.execute(sql, args).fetchall())

    # ---- writes (inside the caller's transaction) ----

    def add(self, part: History, owners: Mapping[str, str]) -> None:
        """Append a history part that starts where the archive ends; `owners` maps every job id it names to its
        tenant."""
        if part.start != self.marks():
            raise ArchiveError(f"store {self._path}: history part starts at {part.start}, the archive ends at "
                               f"{self.marks()}")
        s = part.start

        def write() -> None:
            self._db.executemany(
                "INSERT INTO archived_jobs VALUES (?, ?, ?, ?, ?, ?)",
                [(s.retired + i, j.seq, j.id, owners[j.id], j.state.value,
                  pickle.dumps(j, protocol=pickle.HIGHEST_PROTOCOL)) for i, j in enumerate(part.jobs)])
            self._db.executemany("INSERT INTO archived_events VALUES (?, ?, ?)",
                                 [(e.seq, owners[e.job], json.dumps(e.to_dict())) for e in part.events])
            self._db.executemany(
                "INSERT INTO archived_charges VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(s.charges + i, owners[c.job], c.job, c.round, c.start, c.duration, c.concurrency, c.amount)
                 for i, c in enumerate(part.charges)])
        self._run("archive history", write)

    def truncate(self, marks: HistoryMarks) -> None:
        """Drop everything at or beyond `marks` (history a snapshot that is no longer used had archived)."""
        def delete() -> None:
            self._db.execute("DELETE FROM archived_jobs WHERE retired >= ?", (marks.retired,))
            self._db.execute("DELETE FROM archived_events WHERE seq >= ?", (marks.events,))
            self._db.execute("DELETE FROM archived_charges WHERE idx >= ?", (marks.charges,))
        self._run("truncate the archive", delete)

    # ---- reads ----

    def marks(self) -> HistoryMarks:
        """Where the archive ends: one past the last retired job, event and charge."""
        (r, e, c), = self._rows("read the archive's extent",
                                "SELECT (SELECT COALESCE(MAX(retired) + 1, 0) FROM archived_jobs), "
                                "(SELECT COALESCE(MAX(seq) + 1, 0) FROM archived_events), "
                                "(SELECT COALESCE(MAX(idx) + 1, 0) FROM archived_charges)")
        return HistoryMarks(int(r), int(e), int(c))

    def job(self, job_id: str) -> Job | None:
        rows = self._rows(f"read job {job_id!r}", "SELECT record FROM archived_jobs WHERE id = ? AND retired < ?",
                          (job_id, self.visible.retired))
        return _job(rows[0][0]) if rows else None

    def owner(self, job_id: str) -> str | None:
        rows = self._rows(
            f"read the owner of job {job_id!r}",
            "SELECT tenant FROM archived_jobs WHERE id = ? AND retired < ?",
            (job_id, self.visible.retired),
        )
        return str(rows[0][0]) if rows else None

    def holds_tenant(self, tenant: str) -> bool:
        """Whether `tenant` owns an archived job (one index probe)."""
        return bool(self._rows(f"look up the jobs of tenant {tenant!r}",
                               "SELECT 1 FROM archived_jobs WHERE tenant = ? AND retired < ? LIMIT 1",
                               (tenant, self.visible.retired)))

    def jobs(self, after: int, limit: int, tenant: str | None = None,
             states: frozenset[str] = frozenset()) -> list[tuple[Job, str]]:
        """Up to `limit` (job, tenant) with a seq above `after`, in submission order, of `tenant` (all if None) and
        in `states` (all if empty)."""
        sql = "SELECT record, tenant FROM archived_jobs WHERE seq > ? AND retired < ?"
        args: list[Any] = [after, self.visible.retired]
        if tenant is not None:
            sql += " AND tenant = ?"
            args.append(tenant)
        if states:
            sql += f" AND state IN ({', '.join('?' * len(states))})"
            args.extend(sorted(states))
        rows = self._rows("list jobs", sql + " ORDER BY seq LIMIT ?", (*args, limit))
        return [(_job(record), str(owner)) for record, owner in rows]

    def events(self, start: int, limit: int, tenant: str | None = None) -> list[Event]:
        """Up to `limit` events from seq `start` on (of `tenant`'s jobs only, if given), in order."""
        sql = "SELECT record FROM archived_events WHERE seq >= ? AND seq < ?"
        args: list[Any] = [start, self.visible.events]
        if tenant is not None:
            sql += " AND tenant = ?"
            args.append(tenant)
        rows = self._rows("read events", sql + " ORDER BY seq LIMIT ?", (*args, limit))
        return [_event(record) for (record,) in rows]

    def charges(self, tenant: str, after: int, limit: int, rounds: tuple[int, int | None]) -> list[tuple[int, Charge]]:
        """Up to `limit` (ledger index, charge) of `tenant` above index `after`, billed in [rounds[0], rounds[1])."""
        sql, args = _period("SELECT idx, job, round, start, duration, concurrency, amount FROM archived_charges "
                            "WHERE tenant = ? AND idx > ? AND idx < ?", [tenant, after, self.visible.charges], rounds)
        rows = self._rows("read charges", sql + " ORDER BY idx LIMIT ?", (*args, limit))
        return [(int(i), Charge(job, rnd, start, dur, conc, amount)) for i, job, rnd, start, dur, conc, amount in rows]

    def amounts(self, tenant: str, rounds: tuple[int, int | None]) -> Iterator[float]:
        """Every amount `tenant` was billed in [rounds[0], rounds[1]), streamed (a period may span all history)."""
        sql, args = _period("SELECT amount FROM archived_charges WHERE tenant = ? AND idx < ?",
                            [tenant, self.visible.charges], rounds)
        cur = self._run("read charges", lambda: self._db.execute(sql, tuple(args)))
        return (float(a) for (a,) in cur)

    def all_events(self, start: int = 0) -> Iterator[Event]:
        """Every archived event from seq `start` on, in order, streamed (restores verify the event chain with it)."""
        cur = self._run("read events", lambda: self._db.execute(
            "SELECT record FROM archived_events WHERE seq >= ? AND seq < ? ORDER BY seq", (start, self.visible.events)))
        return (_event(record) for (record,) in cur)

    def all_jobs(self, start: int = 0) -> Iterator[Job]:
        """Every archived job from retirement `start` on, in retirement order, streamed (restores verify the retired
        chain with it)."""
        cur = self._run("read jobs", lambda: self._db.execute(
            "SELECT record FROM archived_jobs WHERE retired >= ? AND retired < ? ORDER BY retired",
            (start, self.visible.retired)))
        return (_job(record) for (record,) in cur)

    def all_charges(self, start: int = 0) -> Iterator[Charge]:
        """Every archived charge from ledger index `start` on, in order, streamed (restores check them against the
        completion events)."""
        cur = self._run("read charges", lambda: self._db.execute(
            "SELECT job, round, start, duration, concurrency, amount FROM archived_charges WHERE idx >= ? AND idx < ? "
            "ORDER BY idx", (start, self.visible.charges)))
        return (Charge(job, rnd, start, dur, conc, amount) for job, rnd, start, dur, conc, amount in cur)


class ChargeCheck:
    """Hashes of the charges the completion events announce and of the charges archived, in order: a restore
    compares them, since charges are in no hash chain of the engine (they follow from the completion events)."""

    def __init__(self) -> None:
        self._announced, self._archived = hashlib.sha256(), hashlib.sha256()

    def events(self, events: Iterator[Event]) -> Iterator[Event]:
        """`events`, passed through, noting each completion's charge."""
        for e in events:
            if e.type == "complete":
                self._announced.update(_charge_key(e.job, e.round, e.data["start"], e.data["duration"],
                                                   e.data["charge"]))
            yield e

    def charges(self, charges: Iterator[Charge]) -> None:
        for c in charges:
            self._archived.update(_charge_key(c.job, c.round, c.start, c.duration, c.amount))

    @property
    def agree(self) -> bool:
        return self._announced.digest() == self._archived.digest()


def _charge_key(job: str, round_: int, start: int, duration: int, amount: float) -> bytes:
    return json.dumps([job, round_, start, duration, amount]).encode() + b"\n"


def _period(sql: str, args: list[Any], rounds: tuple[int, int | None]) -> tuple[str, list[Any]]:
    sql += " AND round >= ?"
    args.append(rounds[0])
    if rounds[1] is not None:
        sql += " AND round < ?"
        args.append(rounds[1])
    return sql, args


def _job(record: bytes) -> Job:
    job = pickle.loads(record)  # the server's own store, written only by the server
    if not isinstance(job, Job):
        raise ArchiveError(f"an archived job record holds a {type(job).__name__}")
    return job


def _event(record: str) -> Event:
    d = json.loads(record)
    return Event(seq=d.pop("seq"), round=d.pop("round"), type=d.pop("type"), job=d.pop("job"), data=d)
