"""The durable command log: every accepted command, committed to SQLite (WAL) before its reply is sent."""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mechanism.history import ChainPoint, History, HistoryMarks
from server.archive import SCHEMA as ARCHIVE_SCHEMA
from server.archive import Archive, ArchiveError

SCHEMA_VERSION = "1"
COMMAND_KINDS = ("submit", "arrive", "complete", "advance", "capacity", "bundles", "launch", "release")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS commands (
    seq INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    caller TEXT NOT NULL,
    request_id TEXT,
    body TEXT NOT NULL,
    body_hash TEXT NOT NULL,
    reply BLOB NOT NULL,
    round INTEGER NOT NULL,
    logged_at REAL NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS commands_request ON commands (caller, request_id)
    WHERE request_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS snapshots (
    seq INTEGER PRIMARY KEY,
    code TEXT NOT NULL,
    digest TEXT NOT NULL,
    state BLOB NOT NULL,
    taken_at REAL NOT NULL
);
DROP TABLE IF EXISTS history;  -- pickled history parts, before the archive tables
CREATE TABLE IF NOT EXISTS verified (  -- how far a restore has checked the archive's hash chains (ChainPoint)
    id INTEGER PRIMARY KEY CHECK (id = 0),
    retired INTEGER NOT NULL,
    events INTEGER NOT NULL,
    charges INTEGER NOT NULL,
    event_chain BLOB NOT NULL,
    retired_chain BLOB NOT NULL
);
""" + ARCHIVE_SCHEMA
SNAPSHOTS_KEPT = 2
COMMANDS_READ = 1000  # logged commands a replay reads per statement


class StoreError(RuntimeError):
    """The log cannot be opened or written, or belongs to a different platform."""


@dataclass(frozen=True)
class Snapshot:
    """The state after command `seq`, written by code `code`, with its state digest."""

    seq: int
    code: str
    digest: str
    state: bytes


@dataclass(frozen=True)
class Command:
    """One accepted command as logged: what was asked, by whom, and the reply that acknowledged it."""

    seq: int
    kind: str
    caller: str
    request_id: str | None
    body: dict[str, Any]
    body_hash: str
    reply: bytes
    round: int


def store_path(url: str) -> Path:
    """`sqlite:///rel/path.db` (relative), `sqlite:////abs/path.db` (absolute) or a plain file path."""
    if url.startswith("sqlite:///"):
        rest = url[len("sqlite:///"):]
    elif "://" in url:
        raise StoreError(f"store={url!r}: only sqlite:///PATH (or a plain path) is supported")
    else:
        rest = url
    if not rest:
        raise StoreError(f"store={url!r} names no file")
    return Path(rest)


class CommandStore:
    """An append-only SQLite log in WAL mode with synchronous=FULL: a returned `append` survives a crash.

    One writer at a time: the writer holds an exclusive lock on `<store>.lock` for as long as it is open (the
    operating system drops it when the process dies, SIGKILL included), so a second server on the same store is
    refused instead of interleaving its commands into the log; a store with hard links (names the lock does not
    cover) is refused. `read_only` opens without the lock and never
    writes (offline digests of a store a server is using).
    """

    def __init__(self, path: str | Path, identity: dict[str, Any], read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self._lock_fd: int | None = None
        try:
            if read_only:
                if not self.path.is_file():
                    raise StoreError(f"store {self.path}: no such file")
                self._db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True,  # name quoted
                                           isolation_level=None, check_same_thread=False)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._lock_fd = _lock_exclusively(self.path)
                links = self.path.stat().st_nlink if self.path.is_file() else 1
                if links > 1:  # another name for the same file escapes the lock on this one
                    raise StoreError(f"store {self.path} has {links} hard links: the one-server lock covers only "
                                     "this name; remove the other links or copy the file")
                self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=FULL")
                self._db.executescript(_SCHEMA)
        except (sqlite3.Error, OSError) as exc:
            self._unlock()
            raise StoreError(f"store {self.path}: cannot open: {exc}") from None
        except StoreError:
            self._unlock()
            raise
        try:
            self._check_identity(identity)
        except StoreError:
            self.close()
            raise
        self.archive = Archive(self._db, self.path)  # the history the engine has forgotten

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor releases the lock
            self._lock_fd = None

    def _check_identity(self, identity: dict[str, Any]) -> None:
        """A log replays only into the platform and oracle that wrote it."""
        wanted = json.dumps(identity, sort_keys=True)
        try:
            row = self._db.execute("SELECT value FROM meta WHERE key = 'identity'").fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"store {self.path} is not a sowsched command log: {exc}") from None
        if row is None and self.read_only:
            raise StoreError(f"store {self.path} holds no command log yet")
        if row is None:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                self._db.execute("INSERT INTO meta VALUES ('identity', ?), ('schema', ?)", (wanted, SCHEMA_VERSION))
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                raise StoreError(f"store {self.path}: cannot write its identity: {exc}") from None
        elif row[0] != wanted:
            raise StoreError(f"store {self.path} was written for {row[0]}, not for the configured {wanted}; "
                             "use a new store or the original configuration")

    def configured_tenants(self) -> frozenset[str] | None:
        """The tenants of the configuration the store was last served with; None if none was recorded."""
        row = self._db.execute("SELECT value FROM meta WHERE key = 'tenants'").fetchone()
        return None if row is None else frozenset(json.loads(row[0]))

    def record_tenants(self, names: Iterable[str] | None) -> None:
        """Record the tenants of the configuration the store is served with now (committed at once; None removes the
        record, as for a store that never had one). A write that
        fails is rolled back, also a failed COMMIT: a refused reload must leave no transaction open, or the next
        command batch could not begin one and the server would stop serving."""
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                if names is None:
                    self._db.execute("DELETE FROM meta WHERE key = 'tenants'")
                else:
                    self._db.execute("INSERT OR REPLACE INTO meta VALUES ('tenants', ?)", (json.dumps(sorted(names)),))
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise StoreError(f"store {self.path}: cannot record the configured tenants: {exc}") from None

    def commands(self, after: int = 0) -> Iterator[Command]:
        """Every logged command with a sequence number above `after` (up to the last one logged when the first is read),
        in order; read COMMANDS_READ at a time, so that no statement stays open while the caller writes (a replay that
        snapshots as it goes kept SQLite from checkpointing the WAL until it ended)."""
        last = int(self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM commands").fetchone()[0])
        while after < last:
            rows = self._db.execute(
                "SELECT seq, kind, caller, request_id, body, body_hash, reply, round FROM commands "
                "WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?", (after, last, COMMANDS_READ)).fetchall()
            if not rows:
                return
            for seq, kind, caller, request_id, body, body_hash, reply, round_ in rows:
                yield Command(seq, kind, caller, request_id, json.loads(body), body_hash, bytes(reply), round_)
            after = rows[-1][0]

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group commit: the appends inside are made durable together, by one fsync when the block ends.

        If the block raises, none of its appends is kept. A failed commit raises StoreError.
        """
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StoreError(f"store {self.path}: cannot begin a transaction: {exc}") from None
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        try:
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StoreError(f"store {self.path}: cannot commit: {exc}") from None

    def append(self, kind: str, caller: str, request_id: str | None, body: dict[str, Any], body_hash: str,
               reply: bytes, round_: int, logged: str | None = None) -> int:
        """Log one command: committed (fsync of the WAL) at once, or with its `transaction` block.

        `logged` is the body's JSON (sorted keys) when the caller already has it.
        """
        if kind not in COMMAND_KINDS:
            raise StoreError(f"command kind={kind!r} is not one of {COMMAND_KINDS}")
        try:
            cur = self._db.execute(
                "INSERT INTO commands (kind, caller, request_id, body, body_hash, reply, round, logged_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    kind,
                    caller,
                    request_id,
                    logged if logged is not None else json.dumps(body, sort_keys=True),
                    body_hash,
                    reply,
                    round_,
                    time.time(),
                ),
            )
        except sqlite3.Error as exc:
            raise StoreError(f"store {self.path}: cannot append the {kind} command: {exc}") from None
        assert cur.lastrowid is not None
        return int(cur.lastrowid)

    def request(self, caller: str, request_id: str) -> tuple[str, bytes] | None:
        """(body hash, reply) of the command `caller` logged with `request_id`, committed or in this transaction."""
        try:
            row = self._db.execute("SELECT body_hash, reply FROM commands WHERE caller = ? AND request_id = ?",
                                   (caller, request_id)).fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"store {self.path}: cannot look up request_id={request_id!r}: {exc}") from None
        return None if row is None else (str(row[0]), bytes(row[1]))

    def save_snapshot(self, snap: Snapshot, history: History | None = None,
                      owners: dict[str, str] | None = None) -> None:
        """Keep `snap` and archive the history added since the last snapshot (`owners`: the tenant of every job it
        names), committed together on their own; keep only the newest SNAPSHOTS_KEPT snapshots of `snap`'s code (another
        code's, newer or not, would only make a restart of this code replay the whole log)."""
        try:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute("INSERT OR REPLACE INTO snapshots VALUES (?, ?, ?, ?, ?)",
                             (snap.seq, snap.code, snap.digest, snap.state, time.time()))
            if history is not None:
                self.archive.add(history, owners or {})
            self._db.execute("DELETE FROM snapshots WHERE code != ? OR seq NOT IN "
                             "(SELECT seq FROM snapshots WHERE code = ? ORDER BY seq DESC LIMIT ?)",
                             (snap.code, snap.code, SNAPSHOTS_KEPT))
            self._db.execute("COMMIT")
        except (sqlite3.Error, ArchiveError) as exc:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise StoreError(f"store {self.path}: cannot save the snapshot after command {snap.seq}: {exc}") from None
        except BaseException:  # anything else (a bug, no memory): the next batch must not find it still open
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise

    def discard_after(self, code: str, seq: int, marks: HistoryMarks) -> None:
        """Drop the snapshots of code `code` taken after command `seq`, and the archive from `marks` on (a restart
        that did not use them: the next snapshot continues the history from there)."""
        try:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute("DELETE FROM snapshots WHERE code = ? AND seq > ?", (code, seq))
            self.archive.truncate(marks)
            self._db.execute("DELETE FROM verified WHERE retired > ? OR events > ? OR charges > ?",
                             (marks.retired, marks.events, marks.charges))  # it checked rows now dropped
            self._db.execute("COMMIT")
        except (sqlite3.Error, ArchiveError) as exc:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise StoreError(f"store {self.path}: cannot discard snapshots after command {seq}: {exc}") from None

    def verified_point(self) -> ChainPoint | None:
        """How far a restore has checked the archive (None: nowhere yet, or a store from before this table)."""
        try:
            row = self._db.execute("SELECT retired, events, charges, event_chain, retired_chain FROM verified "
                                   "WHERE id = 0").fetchone()
        except sqlite3.Error:  # a read-only open of a store no server of this code has opened
            return None
        if row is None:
            return None
        retired, events, charges, event_chain, retired_chain = row
        return ChainPoint(HistoryMarks(int(retired), int(events), int(charges)), bytes(event_chain),
                          bytes(retired_chain))

    def save_verified_point(self, point: ChainPoint) -> None:
        """Record that the archive up to `point.marks` reproduces the chains in `point` (a reader records nothing)."""
        if self.read_only:
            return
        m = point.marks
        try:
            self._db.execute("INSERT OR REPLACE INTO verified VALUES (0, ?, ?, ?, ?, ?)",
                             (m.retired, m.events, m.charges, point.events, point.retired))
        except sqlite3.Error as exc:
            raise StoreError(f"store {self.path}: cannot record the checked archive: {exc}") from None

    def snapshots(self) -> list[Snapshot]:
        """The kept snapshots, newest first."""
        rows = self._db.execute("SELECT seq, code, digest, state FROM snapshots ORDER BY seq DESC").fetchall()
        return [Snapshot(int(seq), str(code), str(digest), bytes(state)) for seq, code, digest, state in rows]

    def count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM commands").fetchone()[0])

    def close(self) -> None:
        self._db.close()
        self._unlock()


def _lock_exclusively(path: Path) -> int:
    """Hold an exclusive lock on `<path>.lock`, path with its symbolic links resolved (the descriptor returned);
    refuse if another process holds it."""
    real = path.resolve()  # one lock per database file, whatever symbolic link names it
    lock = real.with_name(real.name + ".lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise StoreError(f"store {path} is in use by another server (it holds {lock}); stop that server or use "
                         "another store") from None
    return fd
