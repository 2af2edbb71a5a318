"""Write the upgrade fixture: a small store of three tenants' commands, snapshotted half-way, and what it replays to.

Run by the build whose store the fixture keeps (`PYTHONPATH=<that build's tree> python write_upgrade_store.py OUT`):
it writes OUT/upgrade.db.gz (the store, gzipped) and OUT/upgrade.json (the state digest, the logged replies and the
replies of the probe commands sent after a restart). It uses only what every build since per-tenant job ids has:
`DurableScheduler`, `CommandStore`, `ServerConfig` and `encode_reply`, imported from their old homes. The fixture
in tests/server/data was written by the build before the durable scheduler was split by job.
"""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any

from mechanism.engine import EngineError
from mechanism.platform import Platform
from server.config import ServerConfig
from server.scheduler import DurableScheduler, Refused
from server.service import encode_reply
from server.store import CommandStore

PLATFORM = {"C": 6, "C_m": 3, "D_m": 3, "S_m": 6, "H": 50.0, "epsilon": 0.1, "eps0": 0.05, "delta0": 0.05,
            "seed": 7, "samples": 300}
TENANTS = ("acme", "globex", "initech")
TOKENS = {"operator-token": "operator", **{f"{t}-token": t for t in TENANTS}}


def config() -> ServerConfig:
    return ServerConfig(platform=Platform(**PLATFORM), oracle="mc", tokens=dict(TOKENS), tenants=TENANTS)


def sow(concurrency: int, steps: list[list[float]], outcomes: list[list[float]]) -> dict[str, Any]:
    return {"concurrency": concurrency, "value_steps": steps, "outcomes": outcomes, "signal_mode": "duration"}


def job(tenant: str, job_id: str) -> dict[str, str]:
    return {"tenant": tenant, "job_id": job_id}


# (caller, request id, kind, body): before the snapshot, then after it (replayed from the log on every start).
BEFORE: list[tuple[str, str, str, dict[str, Any]]] = [
    ("acme", "a1", "submit", {**job("acme", "etl"), "sow": sow(2, [[3, 30.0], [5, 12.0]], [[0, 2, 0.6], [1, 3, 0.4]])}),
    ("globex", "g1", "submit", {**job("globex", "etl"), "sow": sow(1, [[4, 20.0]], [[0, 1, 0.5], [0, 3, 0.5]])}),
    ("initech", "i1", "submit", {**job("initech", "render"), "sow": sow(3, [[6, 40.0]], [[1, 2, 1.0]])}),
    ("acme", "a2", "arrive", {**job("acme", "etl"), "signal": "2"}),
    ("globex", "g2", "arrive", {**job("globex", "etl"), "signal": "3"}),
    ("initech", "i2", "arrive", {**job("initech", "render"), "signal": "2"}),
    ("operator", "o1", "advance", {}),
    ("initech", "i3", "arrive", {**job("initech", "render"), "signal": "2"}),
    ("acme", "a3", "complete", job("acme", "etl")),
    ("operator", "o2", "advance", {}),
    ("globex", "g3", "complete", job("globex", "etl")),
    ("operator", "o3", "advance", {}),
]
AFTER: list[tuple[str, str, str, dict[str, Any]]] = [
    ("acme", "a4", "submit", {**job("acme", "train"), "sow": sow(2, [[3, 25.0]], [[0, 1, 0.3], [0, 2, 0.7]])}),
    ("globex", "g4", "submit", {**job("globex", "train"), "sow": sow(1, [[2, 8.0], [4, 4.0]], [[0, 1, 1.0]])}),
    ("acme", "a5", "arrive", {**job("acme", "train"), "signal": "2"}),
    ("globex", "g5", "arrive", {**job("globex", "train"), "signal": "1"}),
    ("operator", "o4", "advance", {}),
    ("globex", "g6", "complete", job("globex", "train")),
    ("operator", "o5", "advance", {}),
    ("initech", "i4", "complete", job("initech", "render")),
    ("operator", "o6", "advance", {}),
]
# Sent after a restart of the finished store: a retry of a logged request, refusals and new commands.
PROBES: list[tuple[str, str, str, dict[str, Any]]] = [
    ("acme", "a4", "submit", {**job("acme", "train"), "sow": sow(2, [[3, 25.0]], [[0, 1, 0.3], [0, 2, 0.7]])}),
    ("globex", "g7", "submit", {**job("globex", "etl"), "sow": sow(1, [[4, 20.0]], [[0, 1, 1.0]])}),
    ("acme", "a8", "arrive", {**job("acme", "nosuch"), "signal": "1"}),
    ("acme", "a7", "complete", job("globex", "train")),
    ("acme", "a1", "advance", {}),
    ("initech", "i5", "submit", {**job("initech", "bake"), "sow": sow(2, [[5, 30.0]], [[0, 2, 1.0]])}),
    ("initech", "i6", "arrive", {**job("initech", "bake"), "signal": "2"}),
    ("operator", "o7", "advance", {}),
    ("initech", "i7", "complete", job("initech", "bake")),
    ("operator", "o8", "advance", {}),
]


def run(sched: DurableScheduler, commands: list[tuple[str, str, str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Each command's outcome: its reply (hex) and whether it was a logged one, or its refusal's code and text."""
    out: list[dict[str, Any]] = []
    for caller, request_id, kind, body in commands:
        try:
            ack = sched.execute(caller, request_id, kind, body)
        except (EngineError, Refused) as exc:
            out.append({"refused": exc.code, "message": str(exc)})
        else:
            out.append({"reply": ack.reply.hex(), "replayed": ack.replayed})
    return out


def write(out: Path) -> dict[str, Any]:
    cfg = config()
    db = out / "upgrade.db"
    db.unlink(missing_ok=True)
    sched = DurableScheduler(cfg, CommandStore(db, cfg.identity()), encode_reply, snapshot_every=0)
    before = run(sched, BEFORE)
    snapshot_seq = sched.snapshot()
    after = run(sched, AFTER)
    written = {"digest": sched.engine.digest(), "log_seq": sched.log_seq, "snapshot_seq": snapshot_seq,
               "commands": before + after}
    sched.close()
    with sqlite3.connect(db) as conn:  # one self-contained file: the WAL folded in
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    probe_db = out / "probe.db"  # the probes run on a copy: the fixture keeps the store as written
    shutil.copy(db, probe_db)
    sched = DurableScheduler(cfg, CommandStore(probe_db, cfg.identity()), encode_reply, snapshot_every=0)
    written["probes"] = run(sched, PROBES)
    written["probed_digest"] = sched.engine.digest()
    sched.close()
    for path in out.glob("probe.db*"):
        path.unlink()
    with db.open("rb") as raw, gzip.GzipFile(out / "upgrade.db.gz", "wb", mtime=0) as packed:
        shutil.copyfileobj(raw, packed)  # mostly empty SQLite pages: about a tenth of the size
    for path in out.glob("upgrade.db*"):
        if path.suffix != ".gz":
            path.unlink()
    return written


if __name__ == "__main__":
    target = Path(sys.argv[1])
    result = write(target)
    (target / "upgrade.json").write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    print(json.dumps({k: result[k] for k in ("digest", "log_seq", "snapshot_seq", "probed_digest")}))
