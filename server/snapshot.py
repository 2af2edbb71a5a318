"""Snapshots of the scheduler's state, so that a restart replays only the log written after the newest one.

A snapshot is trusted only by the code that wrote it: its `code` is a hash of the sources a replay runs (the
engine, what it imports, the log's codecs: `replay_modules`), so after an upgrade of that code the server
replays the whole log (checking every logged reply) and snapshots anew.
The state is pickled; the store is the server's own file, written only by the server. What never changes again
(ended jobs, events, charges) is not in the snapshot: it goes to the store's archive (server/archive.py) in the
snapshot's transaction, so a snapshot's cost follows the active jobs and the snapshot interval, not the server's age.
"""

from __future__ import annotations

import ast
import hashlib
import json
import pickle
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import TypeVar
from urllib.parse import unquote, urlparse

from mechanism.engine import Engine
from mechanism.history import HistoryMarks

ROOT = Path(__file__).resolve().parent.parent
# The roots of what a replay runs: the engine, the log's codecs and commands, and the snapshot's own shape.
REPLAY_ROOTS = ("mechanism.engine", "server.replay", "server.snapshot")
PROJECT_PACKAGES = ("mechanism", "models", "server", "clients", "cli", "benchmarks")
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
    """SHA-256 over the sources that decide what replaying a command does: the modules in `replay_modules()`."""
    h = hashlib.sha256()
    for path in replay_modules():
        h.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def replay_modules(roots: tuple[str, ...] = REPLAY_ROOTS) -> list[Path]:
    """The source files of `roots` and of every project module they import, transitively (static imports)."""
    seen: dict[str, Path] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        path = module_path(name)
        if name in seen or path is None:
            continue
        seen[name] = path
        todo.extend(imported_modules(name, path))
    return sorted(seen.values())


def module_path(name: str) -> Path | None:
    """The file of project module `name` (a package's __init__.py), or None for anything outside the project."""
    if name.split(".")[0] not in PROJECT_PACKAGES:
        return None
    base = ROOT.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def imported_modules(name: str, path: Path) -> Iterator[str]:
    """The modules `path` (module `name`) imports: `import a.b`, `from a import b` (a.b if it is a module, else a),
    relative imports resolved; every enclosing package is imported too."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([base] if base else [])])
            targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        for target in targets:
            parts = target.split(".")
            yield from (".".join(parts[:i]) for i in range(1, len(parts) + 1))


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
