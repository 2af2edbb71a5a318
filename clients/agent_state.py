"""The agent's durable state (SQLite): the event cursor and one row per launch, written around every launch, each
row naming the Slurm array (batch) and element it is launched as, if any. Versioned: `SCHEMA_VERSION` in meta."""

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
    nodes INTEGER NOT NULL,     -- the nodes it holds while it runs (local --slots)
    batch TEXT,                 -- the array's key (launched with the launches of the same batch), or NULL: alone
    idx INTEGER                 -- its element's index in that array
);
"""
SCHEMA_VERSION = 2  # 1: no schema key, no batch and idx columns (every launch alone); 2: arrays
MIGRATIONS = {1: ("ALTER TABLE launches ADD COLUMN batch TEXT", "ALTER TABLE launches ADD COLUMN idx INTEGER")}
STATUSES = ("launching", "running", "stopping", "ended")


class StateError(Exception):
    """The state file belongs to another executor kind or server, or to a newer agent: the agent refuses to reuse it."""


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
    batch: str | None = None  # the array it is launched in (its key), or None: launched alone
    idx: int | None = None  # its element's index in that array

    @classmethod
    def of(cls, row: tuple[Any, ...]) -> LaunchRow:
        return cls(row[0], row[1], row[2], row[3], row[4], row[5], row[6], bool(row[7]), row[8], row[9], row[10],
                   row[11])


class AgentState:
    """Every write commits before it returns (WAL, synchronous=FULL): what the agent did survives a SIGKILL."""

    def __init__(self, path: Path, kind: str) -> None:
        self.db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self._migrate(path)
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

    def _migrate(self, path: Path) -> None:
        """Create a new file at SCHEMA_VERSION, bring one of an older schema to it (one transaction), and refuse one
        of a newer schema."""
        tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "launches" not in tables:
            self.db.executescript(SCHEMA)
            self.db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
            return
        stored = (self.db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
                  if "meta" in tables else None)
        version = int(stored[0]) if stored else 1
        if version > SCHEMA_VERSION:
            raise StateError(f"state file {path} has schema version {version}; this agent reads versions 1 to "
                             f"{SCHEMA_VERSION}: run the sowsched that wrote it, or start a new state file")
        if version < SCHEMA_VERSION:
            self.db.executescript(SCHEMA)  # the tables an old file may lack (meta)
            with self.transaction():
                for v in range(version, SCHEMA_VERSION):
                    for sql in MIGRATIONS[v]:
                        self.db.execute(sql)
                self.db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))

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

    def intend(self, handle: str, tenant: str, job_id: str, seq: int, nodes: int, batch: str | None = None,
               idx: int | None = None) -> None:
        """Before the launch: a crash from here on is reconciled by looking the launch up in the executor, by its
        handle, or by its batch's key and its index when it is launched as an element of an array."""
        self.db.execute("INSERT INTO launches (handle, tenant, job_id, status, seq, nodes, batch, idx) "
                        "VALUES (?, ?, ?, 'launching', ?, ?, ?, ?)", (handle, tenant, job_id, seq, nodes, batch, idx))

    def launched(self, handle: str, external_id: str) -> None:
        self.db.execute("UPDATE launches SET status = 'running', external_id = ? WHERE handle = ? "
                        "AND status = 'launching'", (external_id, handle))

    def stopping(self, handle: str, external_id: str) -> None:
        """Before the stop: a crash from here on is made good by the next poll, which stops it again."""
        self.db.execute("UPDATE launches SET status = 'stopping', external_id = ?, how = 'stopped', reported = 1 "
                        "WHERE handle = ?", (external_id, handle))

    def ended(self, handle: str, exit_code: int | None, how: str, *, report: bool) -> None:
        self.db.execute("UPDATE launches SET status = 'ended', exit_code = ?, how = COALESCE(how, ?), "
                        "reported = reported OR ? WHERE handle = ?", (exit_code, how, int(not report), handle))

    def reported(self, handle: str) -> None:
        self.db.execute("UPDATE launches SET reported = 1 WHERE handle = ?", (handle,))
