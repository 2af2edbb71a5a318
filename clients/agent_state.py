"""The agent's durable state (SQLite): the event cursor and one row per launch, written around every launch."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS cursor (id INTEGER PRIMARY KEY CHECK (id = 0), next_seq INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS launches (
    handle TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    job_id TEXT NOT NULL,
    status TEXT NOT NULL,       -- launching, running, stopping, ended
    external_id TEXT,
    exit_code INTEGER,
    how TEXT,                   -- how the work ended (executors.Ended.how), or 'stopped'
    reported INTEGER NOT NULL DEFAULT 0,
    seq INTEGER NOT NULL,       -- the start event's seq
    nodes INTEGER NOT NULL      -- the nodes it holds while it runs (local --slots)
);
"""
STATUSES = ("launching", "running", "stopping", "ended")


class StateError(Exception):
    """The state file belongs to another executor kind or server: the agent refuses to reuse it."""


@dataclass(frozen=True)
class LaunchRow:
    handle: str
    tenant: str
    job_id: str
    status: str
    external_id: str | None
    exit_code: int | None
    how: str | None
    reported: bool
    seq: int
    nodes: int

    @classmethod
    def of(cls, row: tuple[Any, ...]) -> LaunchRow:
        return cls(row[0], row[1], row[2], row[3], row[4], row[5], row[6], bool(row[7]), row[8], row[9])


class AgentState:
    """Every write commits before it returns (WAL, synchronous=FULL): what the agent did survives a SIGKILL."""

    def __init__(self, path: Path, kind: str) -> None:
        self.db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.executescript(SCHEMA)
        self.db.execute("INSERT OR IGNORE INTO cursor VALUES (0, 0)")
        self.db.execute("INSERT OR IGNORE INTO meta VALUES ('kind', ?)", (kind,))
        stored = self.db.execute("SELECT value FROM meta WHERE key = 'kind'").fetchone()[0]
        if stored != kind:
            raise StateError(f"state file {path} holds launches of executor {stored!r}, not {kind!r}")
        # a new file's random instance goes into every handle, so that no other state file's launch of the same
        # tenant and job id (an earlier deployment's, still listed by Slurm) is ever adopted; a file that holds
        # launches from before instances existed keeps "" and with it the handles it already wrote
        legacy = self.db.execute("SELECT 1 FROM launches LIMIT 1").fetchone() is not None
        self.db.execute("INSERT OR IGNORE INTO meta VALUES ('instance', ?)", ("" if legacy else uuid.uuid4().hex,))
        self.instance: str = self.db.execute("SELECT value FROM meta WHERE key = 'instance'").fetchone()[0]

    def close(self) -> None:
        self.db.close()

    @property
    def next_seq(self) -> int:
        return int(self.db.execute("SELECT next_seq FROM cursor").fetchone()[0])

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """The writes inside commit together (one fsync) or not at all."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def advance(self, seq: int) -> None:
        """Every event before `seq` is handled."""
        self.db.execute("UPDATE cursor SET next_seq = ? WHERE next_seq < ?", (seq, seq))

    def get(self, handle: str) -> LaunchRow | None:
        row = self.db.execute("SELECT * FROM launches WHERE handle = ?", (handle,)).fetchone()
        return LaunchRow.of(row) if row else None

    def rows(self, *statuses: str) -> Iterator[LaunchRow]:
        marks = ",".join("?" * len(statuses))
        for row in self.db.execute(f"SELECT * FROM launches WHERE status IN ({marks}) ORDER BY seq", statuses):
            yield LaunchRow.of(row)

    def unreported(self) -> Iterator[LaunchRow]:
        for row in self.db.execute("SELECT * FROM launches WHERE status = 'ended' AND reported = 0 ORDER BY seq"):
            yield LaunchRow.of(row)

    def intend(self, handle: str, tenant: str, job_id: str, seq: int, nodes: int) -> None:
        """Before the launch: a crash from here on is reconciled by looking the handle up in the executor."""
        self.db.execute("INSERT INTO launches (handle, tenant, job_id, status, seq, nodes) "
                        "VALUES (?, ?, ?, 'launching', ?, ?)", (handle, tenant, job_id, seq, nodes))

    def launched(self, handle: str, external_id: str) -> None:
        self.db.execute("UPDATE launches SET status = 'running', external_id = ? WHERE handle = ?",
                        (external_id, handle))

    def stopping(self, handle: str, external_id: str) -> None:
        """Before the stop: a crash from here on is made good by the next poll, which stops it again."""
        self.db.execute("UPDATE launches SET status = 'stopping', external_id = ?, how = 'stopped', reported = 1 "
                        "WHERE handle = ?", (external_id, handle))

    def ended(self, handle: str, exit_code: int | None, how: str, *, report: bool) -> None:
        self.db.execute("UPDATE launches SET status = 'ended', exit_code = ?, how = COALESCE(how, ?), "
                        "reported = reported OR ? WHERE handle = ?", (exit_code, how, int(not report), handle))

    def reported(self, handle: str) -> None:
        self.db.execute("UPDATE launches SET reported = 1 WHERE handle = ?", (handle,))
