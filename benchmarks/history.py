"""Server memory per ended job: a scheduler that archives its history at each snapshot against one that keeps it.

Both run the same commands in-process (no gRPC) on a temporary store: three submissions per round, arrivals on time
with probability 1/2, completions of running jobs with probability 1/3, then AdvanceRound. Python memory is measured
with tracemalloc at the start, half-way and the end of the measured rounds, each right after a snapshot (SQLite's
own page cache is outside it, bounded by its cache_size); bytes per ended job are from the second half.
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.core import random_sow
from cli.args import bounded_int
from mechanism.jobs import JobState
from mechanism.platform import Platform
from server.config import ServerConfig
from server.namespace import named
from server.scheduler import DurableScheduler
from server.service import encode_reply
from server.store import CommandStore

PLATFORM = Platform(C=1000, C_m=16, D_m=48, S_m=96, H=100.0, seed=1, samples=2000)  # the core benchmark's
WARM_UP = 150
CONFIG = ServerConfig(platform=PLATFORM, oracle="mc", tokens={}, tenants=("acme",))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rounds", type=bounded_int(2), default=400, help="measured rounds")
    p.add_argument("--warm-up", type=bounded_int(0), default=WARM_UP,
                   help="rounds played before measuring, to reach the steady number of active jobs")
    p.add_argument("--snapshot-every", type=bounded_int(1), default=200,
                   help="commands between snapshots of the archiving scheduler")
    p.add_argument("--seed", type=bounded_int(0), default=0)


def play(sched: DurableScheduler, rng: np.random.Generator, rounds: int, per_round: int = 3) -> None:
    e = sched.engine
    for _ in range(rounds):
        for i in range(per_round):
            sched.execute("operator", None, "submit", {"job_id": f"h{e.now}-{i}", "tenant": "acme",
                                                       "sow": random_sow(rng, PLATFORM).model_dump(mode="json")})
        for job in list(e.jobs_after(-1, active_only=True)):
            if job.state is JobState.SUBMITTED:
                groups = [g for g in job.sow.table.groups if g[0] == e.now - job.birth]
                if groups and rng.random() < 0.5:
                    sched.execute("operator", None, "arrive", {**named(job.id), "signal": groups[0][1]})
            elif job.state is JobState.RUNNING and rng.random() < 1 / 3:
                sched.execute("operator", None, "complete", named(job.id))
        sched.execute("operator", None, "advance", {})


def snapshot_now(sched: DurableScheduler) -> None:
    """Archive the history now, holding the scheduler's lock as its writer does (the settler thread runs too)."""
    with sched.reading():
        sched.snapshot()


def measure(archive: bool, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="sowsched-history-") as tmp:
        sched = DurableScheduler(CONFIG, CommandStore(Path(tmp) / "h.db", CONFIG.identity()), encode_reply,
                                 snapshot_every=args.snapshot_every if archive else 0)
        rng = np.random.default_rng(args.seed)
        try:
            play(sched, rng, args.warm_up)  # the steady number of active jobs first
            if archive:
                snapshot_now(sched)
            gc.collect()
            tracemalloc.start()
            traced, ended = [], []  # at the start, half-way and the end of the measured rounds
            started = time.perf_counter()
            for rounds in (0, args.rounds // 2, args.rounds - args.rounds // 2):
                play(sched, rng, rounds)
                if archive:
                    snapshot_now(sched)
                gc.collect()
                traced.append(tracemalloc.get_traced_memory()[0])
                ended.append(sched.engine.history_marks().retired)
            seconds = time.perf_counter() - started
            tracemalloc.stop()
            marks = sched.engine.history_marks()
            second = traced[2] - traced[1]  # the first half also holds caches warming up
            result = {"bytes_per_ended_job": second / max(1, ended[2] - ended[1]),
                      "grown_bytes_first_half": traced[1] - traced[0], "grown_bytes_second_half": second,
                      "ended_jobs": ended[2] - ended[0], "active_jobs": sched.engine.active_jobs,
                      "commands": sched.log_seq, "held_ended_jobs": len(sched.engine.retired),
                      "held_events": len(sched.engine.events), "events": marks.events, "seconds_traced": seconds,
                      "store_bytes": (Path(tmp) / "h.db").stat().st_size + _wal_bytes(Path(tmp) / "h.db")}
        finally:
            sched.close()
        return {**result, **restart(Path(tmp) / "h.db", sched.snapshot_every)}


def restart(store: Path, snapshot_every: int) -> dict[str, Any]:
    """Open the store again as a restarting server does: the newest snapshot (its archive streamed once to check the
    chains) and the log after it; or, with snapshots off, the whole log replayed."""
    started = time.perf_counter()
    sched = DurableScheduler(
        CONFIG, CommandStore(store, CONFIG.identity()), encode_reply, snapshot_every=snapshot_every
    )
    seconds = time.perf_counter() - started
    sched.close()
    return {"restart_s": seconds, "restart_replayed": sched.replayed, "restart_from_snapshot": sched.restored_from}


def _wal_bytes(db: Path) -> int:
    wal = db.with_name(db.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


def run(args: argparse.Namespace) -> dict[str, Any]:
    return {"rounds": args.rounds, "snapshot_every": args.snapshot_every, "samples": PLATFORM.sample_count,
            "archive": measure(True, args), "memory": measure(False, args)}


def table(r: dict[str, Any]) -> str:
    lines = [
        f"server history memory over {r['rounds']} rounds (3 submissions per round), tracemalloc after a snapshot;",
        "bytes per ended job from the second half",
        f"{'history':>28} {'grown MB, 1st half':>19} {'2nd half':>9} {'bytes/ended job':>16} {'ended jobs':>11} "
        f"{'held ended':>11} {'held events':>12} {'store MB':>9} {'restart s':>9} {'replayed':>8}",
    ]
    for name, label in (("archive", f"archived (snapshot every {r['snapshot_every']})"), ("memory", "kept in memory")):
        m = r[name]
        lines.append(
            f"{label:>28} {m['grown_bytes_first_half'] / 2**20:19.2f} {m['grown_bytes_second_half'] / 2**20:9.2f} "
            f"{m['bytes_per_ended_job']:16.0f} {m['ended_jobs']:11d} {m['held_ended_jobs']:11d} "
            f"{m['held_events']:12d} {m['store_bytes'] / 2**20:9.1f} {m['restart_s']:9.2f} "
            f"{m['restart_replayed']:8d}"
        )
    return "\n".join(lines)
