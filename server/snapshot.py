"""Snapshots of the scheduler's state, so that a restart replays only the log written after the newest one.

A snapshot is trusted only by the code that wrote it: its `code` is a hash of the mechanism's and the server's
sources, so after an upgrade the server replays the whole log (checking every logged reply) and snapshots anew.
The state is pickled; the store is the server's own file, written only by the server. What never changes again
(ended jobs, events, charges) is not in the snapshot: it goes to the store's archive (server/archive.py) in the
snapshot's transaction, so a snapshot's cost follows the active jobs and the snapshot interval, not the server's age.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import zlib
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import TypeVar
from urllib.parse import unquote, urlparse

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
    """The version (pyproject.toml) of the installed package this code is, or "unknown" when it is not one: run from
    an uninstalled tree, also beside an installed sowsched (whose version says nothing about this code). Every
    sowsched on the path is asked: the first one found may be another tree's (its egg-info in the working directory)."""
    return next((d.version for d in metadata.distributions(name="sowsched") if _installs_this_code(d)), "unknown")


def _installs_this_code(dist: metadata.Distribution) -> bool:
    """Whether `dist` installed this file: as its own files (a wheel, or this tree's egg-info), or editable from
    this tree (its direct_url.json, PEP 610)."""
    if Path(str(dist.locate_file("server/snapshot.py"))).resolve() == Path(__file__).resolve():
        return True
    try:
        direct = json.loads(dist.read_text("direct_url.json") or "null")
    except json.JSONDecodeError:
        return False
    if not isinstance(direct, dict) or not isinstance(direct.get("dir_info"), dict) \
            or direct["dir_info"].get("editable") is not True:
        return False
    url = urlparse(str(direct.get("url", "")))
    return url.scheme == "file" and Path(unquote(url.path)).resolve() == ROOT


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
