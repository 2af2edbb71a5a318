"""Snapshots of the scheduler's state, so that a restart replays only the log written after the newest one.

A snapshot is trusted only by the code that wrote it: its `code` is a hash of the mechanism's and the server's
sources, so after an upgrade the server replays the whole log (checking every logged reply) and snapshots anew.
The state is pickled; the store is the server's own file, written only by the server. What never changes again
(ended jobs, events, charges) is not in the snapshot: it goes to the store's archive (server/archive.py) in the
snapshot's transaction, so a snapshot's cost follows the active jobs and the snapshot interval, not the server's age.
"""

from __future__ import annotations

import hashlib
import pickle
import zlib
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import TypeVar

from mechanism.engine import Engine
from mechanism.history import HistoryMarks

ROOT = Path(__file__).resolve().parent.parent
CODE_DIRS = ("mechanism", "server")
T = TypeVar("T")


@dataclass
class SchedulerState:
    """What the durable scheduler rebuilds from its log: the engine (request ids stay in the log; job keys name their
    tenant, server/namespace.py)."""

    engine: Engine  # without its history (Engine.without_history)
    seq: int  # the last logged command the state includes
    marks: HistoryMarks  # how much history the whole state holds: the archive must reach at least this


@cache
def server_version() -> str:
    """The installed package's version (pyproject.toml), or "unknown" when run from an uninstalled tree."""
    try:
        return metadata.version("sowsched")
    except metadata.PackageNotFoundError:
        return "unknown"


@cache
def code_identity() -> str:
    """SHA-256 over the sources that decide what replaying a command does (generated stubs excluded)."""
    h = hashlib.sha256()
    for d in CODE_DIRS:
        for path in sorted((ROOT / d).rglob("*.py")):
            rel = path.relative_to(ROOT)
            if "gen" in rel.parts:
                continue
            h.update(str(rel).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def dump(obj: SchedulerState) -> bytes:
    """A state pickled and zlib-compressed (level 1: about 4x smaller for a few ms)."""
    return zlib.compress(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), 1)


def load(blob: bytes) -> SchedulerState:
    return _load(blob, SchedulerState)


def _load(blob: bytes, kind: type[T]) -> T:
    obj = pickle.loads(zlib.decompress(blob))  # the server's own store, written only by the server
    if not isinstance(obj, kind):
        raise TypeError(f"snapshot holds a {type(obj).__name__}, not a {kind.__name__}")
    return obj
