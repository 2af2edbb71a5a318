"""Snapshots of the scheduler's state, so that a restart replays only the log written after the newest one.

A snapshot is trusted only by the code that wrote it: its `code` is a hash of the mechanism's and the server's
sources, so after an upgrade the server replays the whole log (checking every logged reply) and snapshots anew.
The state is pickled; the store is the server's own file, written only by the server.
"""

from __future__ import annotations

import hashlib
import pickle
import zlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from mechanism.engine import Engine

ROOT = Path(__file__).resolve().parent.parent
CODE_DIRS = ("mechanism", "server")


@dataclass
class SchedulerState:
    """What the durable scheduler rebuilds from its log: the engine and job owners (request ids stay in the log)."""

    engine: Engine
    owners: dict[str, str]
    seq: int  # the last logged command the state includes


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


def dump(state: SchedulerState) -> bytes:
    """The pickled state, zlib-compressed (level 1: about 4x smaller for a few ms)."""
    return zlib.compress(pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL), 1)


def load(blob: bytes) -> SchedulerState:
    state = pickle.loads(zlib.decompress(blob))  # the server's own store, written only by the server
    if not isinstance(state, SchedulerState):
        raise TypeError(f"snapshot holds a {type(state).__name__}, not a SchedulerState")
    return state
