"""Scale of a server: submissions/s, round time, memory and snapshot size as active jobs and capacity C grow.

Each size starts `sowsched serve` on the `bench core` platform with C set to the size's capacity, loads about that
many active jobs over a few rounds (streamed, no arrivals reported), and then measures, in order: single-RPC and
streamed submissions per second, an AdvanceRound, the first quote of the new round (it builds the failure oracle
over every active job), the server's resident memory, and the size of a snapshot of that state.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.core import bench_platform, random_sow
from benchmarks.grpc import TOKEN, BenchServer
from cli.args import bounded_int, int_list

LOAD_ROUNDS = 5  # rounds the active jobs are born over


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--active", type=int_list(1), default=[250, 1000, 2500, 10000],
                   help="active jobs loaded before measuring, one server per value, comma separated")
    p.add_argument("--capacity", type=int_list(1), default=None,
                   help="C per size, comma separated (default: C equal to the active jobs)")
    p.add_argument("--submits", type=bounded_int(1), default=50, help="single-RPC submissions measured per size")
    p.add_argument("--stream-submits", type=bounded_int(1), default=200,
                   help="streamed submissions measured per size")
    p.add_argument("--samples", type=bounded_int(1), default=None, help="Monte Carlo samples (default: Lemma F.1)")
    p.add_argument("--seed", type=bounded_int(0), default=0, help="seed of the random SoWs and of the platform")


def rss_mb(pid: int) -> float:
    """Resident memory of a process in MB, from /proc (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def measure(active: int, capacity: int, args: argparse.Namespace) -> dict[str, Any]:
    from clients.client import RetryPolicy, SchedulerClient, Submission

    platform = bench_platform(args.seed, args.samples).model_copy(update={"C": capacity})
    rng = np.random.default_rng(args.seed)
    per_round = [len(range(r, active, LOAD_ROUNDS)) for r in range(LOAD_ROUNDS)]
    load_commands = active + LOAD_ROUNDS - 1  # the snapshot is taken once the load is logged
    with tempfile.TemporaryDirectory(prefix="sowsched-bench-") as tmp:
        server = BenchServer(Path(tmp), platform, "--snapshot-every", str(load_commands))
        try:
            c = SchedulerClient(server.target, TOKEN, retry=RetryPolicy(attempts=1), timeout=3600)
            for r, n in enumerate(per_round):
                if r:
                    c.advance()
                c.submit_many([Submission(f"load{r}-{i}", random_sow(rng, platform)) for i in range(n)])
            snapshot_bytes = _newest_snapshot_bytes(Path(tmp) / "bench.db")
            rss = rss_mb(server.proc.pid)
            sows = [random_sow(rng, platform) for _ in range(args.submits + args.stream_submits)]
            t0 = time.perf_counter()
            for i in range(args.submits):
                c.submit(f"one-{i}", sows[i])
            single = time.perf_counter() - t0
            t0 = time.perf_counter()
            c.submit_many([Submission(f"many-{i}", s) for i, s in enumerate(sows[args.submits:])])
            streamed = time.perf_counter() - t0
            t0 = time.perf_counter()
            c.advance()
            advance = time.perf_counter() - t0
            t0 = time.perf_counter()
            c.submit("first", random_sow(rng, platform))
            first_quote = time.perf_counter() - t0
            active_after = c.status().active_jobs
            rss_after = rss_mb(server.proc.pid)
        finally:
            server.stop()
    return {"active_loaded": active, "C": capacity, "samples": platform.sample_count,
            "submit_per_s": args.submits / single, "stream_per_s": args.stream_submits / streamed,
            "advance_ms": 1000 * advance, "first_quote_ms": 1000 * first_quote,
            "round_ms": 1000 * (advance + first_quote), "active_jobs_after": active_after,
            "rss_mb_loaded": rss, "rss_mb_end": rss_after, "snapshot_bytes": snapshot_bytes}


def _newest_snapshot_bytes(db: Path) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        row = conn.execute("SELECT length(state) FROM snapshots ORDER BY seq DESC LIMIT 1").fetchone()
    return int(row[0]) if row else 0


def run(args: argparse.Namespace) -> dict[str, Any]:
    capacities = args.capacity or args.active
    if len(capacities) != len(args.active):
        from cli.args import BenchInputError

        raise BenchInputError(f"--capacity has {len(capacities)} values, --active {len(args.active)}")
    return {"sizes": [measure(a, c, args) for a, c in zip(args.active, capacities, strict=True)]}


def table(result: dict[str, Any]) -> str:
    lines = ["Server scale (bench core platform with C per size; jobs loaded over 5 rounds, no arrivals reported);",
             "round ms = AdvanceRound + the new round's first quote (which builds the oracle over every active job)",
             f"{'active':>7} {'C':>6} {'N':>6} {'submit/s':>9} {'stream/s':>9} {'advance ms':>10} "
             f"{'1st quote ms':>12} {'round ms':>9} {'RSS MB':>7} {'snapshot KiB':>12}"]
    for r in result["sizes"]:
        lines.append(f"{r['active_loaded']:>7} {r['C']:>6} {r['samples']:>6} {r['submit_per_s']:9.1f} "
                     f"{r['stream_per_s']:9.1f} {r['advance_ms']:10.1f} {r['first_quote_ms']:12.1f} "
                     f"{r['round_ms']:9.1f} {r['rss_mb_loaded']:7.1f} {r['snapshot_bytes'] / 1024:12.1f}")
    return "\n".join(lines)
