"""Online backup of a store: a consistent copy taken while a server may be writing it (SQLite's backup API)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from server.store import StoreError


@dataclass(frozen=True)
class BackupResult:
    """Where the copy is, the last command it holds, its size and how long the copy took."""

    path: Path
    last_seq: int
    snapshots: int
    bytes: int
    seconds: float


def backup_store(source: Path, target: Path) -> BackupResult:
    """Copy the store `source` to `target` (which must not exist) as it stands at one instant.

    The copy is made in one step of SQLite's online backup, under one read transaction of the source, so it holds
    a prefix of the log with the snapshots and archive that go with it, never half a group commit; a running server
    is not stopped (in WAL mode its commits go on meanwhile; only its checkpoints wait for that one step). The copy
    is checked (integrity_check), written under a temporary name of its own in the target's directory, given the
    source's permissions, and appears under its name only when complete and only if that name is still free. It is
    a store like any other: start a server on it to restore.
    """
    if not source.is_file():
        raise StoreError(f"store {source}: no such file")
    if target.exists() or target.is_symlink():
        raise StoreError(_taken(target))
    if not target.parent.is_dir():
        raise StoreError(f"backup target {target}: the directory {target.parent} does not exist")
    started = time.perf_counter()
    fd, name = tempfile.mkstemp(prefix=f"{target.name}.", suffix=".partial", dir=target.parent)  # mode 0600
    os.close(fd)
    partial = Path(name)
    try:
        with contextlib.closing(sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True)) as src:
            _check_is_store(src, source)
            with contextlib.closing(sqlite3.connect(partial)) as dst:
                src.backup(dst)  # pages=-1: the whole database in one step
                check = dst.execute("PRAGMA integrity_check").fetchone()[0]
                if check != "ok":
                    raise StoreError(f"backup of {source}: the copy fails integrity_check: {check}")
                last = int(dst.execute("SELECT COALESCE(MAX(seq), 0) FROM commands").fetchone()[0])
                snapshots = int(dst.execute("SELECT COUNT(*) FROM snapshots").fetchone()[0])
                # The first restart of a copy hashes its whole archive: rows checked in another file prove nothing
                # about this one (a store from before the table has none to clear).
                if dst.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'verified'").fetchone():
                    dst.execute("DELETE FROM verified")
                    dst.commit()
                dst.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # one self-contained file
        partial.chmod(stat.S_IMODE(source.stat().st_mode))  # as private as the store (it holds pickles it loads)
        _publish(partial, target)
    except sqlite3.Error as exc:
        raise StoreError(f"backup of {source} to {target} failed: {exc}") from None
    finally:
        partial.unlink(missing_ok=True)  # published: `target` is another name for the same file
    return BackupResult(target, last, snapshots, target.stat().st_size, time.perf_counter() - started)


def _publish(partial: Path, target: Path) -> None:
    """Give the complete copy its name, refusing if anything took the name meanwhile (a hard link never replaces)."""
    try:
        os.link(partial, target)
    except FileExistsError:
        raise StoreError(_taken(target)) from None
    except OSError:  # a file system without hard links: a rename, after one more look
        if target.exists() or target.is_symlink():
            raise StoreError(_taken(target)) from None
        os.rename(partial, target)


def _taken(target: Path) -> str:
    return f"backup target {target} exists; give a new file name (nothing is overwritten)"


def _check_is_store(db: sqlite3.Connection, path: Path) -> None:
    try:
        row = db.execute("SELECT value FROM meta WHERE key = 'identity'").fetchone()
    except sqlite3.Error as exc:
        raise StoreError(f"store {path} is not a sowsched command log: {exc}") from None
    if row is None:
        raise StoreError(f"store {path} holds no command log yet")
