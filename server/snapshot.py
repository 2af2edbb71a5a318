"""Snapshots of the scheduler's state, so that a restart replays only the log written after the newest one.

A snapshot is trusted only by the code that wrote it: its `code` is a hash of the mechanism's and the server's
sources, so after an upgrade the server replays the whole log (checking every logged reply) and snapshots anew.
The state is pickled; the store is the server's own file, written only by the server. What never changes again
(ended jobs, events, charges) is not in the snapshot: each snapshot stores only the history added since the one
before (`History`), so its cost follows the active jobs and the snapshot interval, not the server's age.
"""

from __future__ import annotations

import hashlib
import pickle
import zlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TypeVar

from mechanism.engine import Engine, History, HistoryMarks

ROOT = Path(__file__).resolve().parent.parent
CODE_DIRS = ("mechanism", "server")
T = TypeVar("T")


@dataclass
class SchedulerState:
    """What the durable scheduler rebuilds from its log: the engine and job owners (request ids stay in the log)."""

    engine: Engine  # without its history (Engine.without_history)
    owners: dict[str, str]  # job id -> tenant of the jobs in `engine` (the ended ones' are in the history parts)
    seq: int  # the last logged command the state includes
    marks: HistoryMarks  # how much history the whole state holds: the stored parts must reach exactly this


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


@dataclass
class HistoryPart:
    """The engine history added between two snapshots, with the owners of the jobs that ended in it."""

    history: History
    owners: dict[str, str]


def dump(obj: SchedulerState | HistoryPart) -> bytes:
    """A state or history part pickled and zlib-compressed (level 1: about 4x smaller for a few ms)."""
    return zlib.compress(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), 1)


def load(blob: bytes) -> SchedulerState:
    return _load(blob, SchedulerState)


def load_part(blob: bytes) -> HistoryPart:
    return _load(blob, HistoryPart)


def _load(blob: bytes, kind: type[T]) -> T:
    obj = pickle.loads(zlib.decompress(blob))  # the server's own store, written only by the server
    if not isinstance(obj, kind):
        raise TypeError(f"snapshot holds a {type(obj).__name__}, not a {kind.__name__}")
    return obj
