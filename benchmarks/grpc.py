"""gRPC throughput: SoW submissions vs a trivial Echo on the same server, with 1, 8 and 32 concurrent clients."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from cli.args import bounded_int, int_list, positive_float
from mechanism.platform import Platform

if TYPE_CHECKING:  # the client needs the generated protobuf code; imported when the benchmark runs
    from clients.client import SchedulerClient

TOKEN = "bench-operator-token"
COLD_START = 20  # the server's default prediction_cold_start, lowered when fewer jobs train the engine
PLATFORM = Platform(C=64, C_m=8, D_m=24, S_m=48, H=100.0, seed=1)  # eps0, delta0 default: Lemma F.1 samples


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--clients", type=int_list(1), default=[1, 8, 32], help="comma-separated concurrent client counts")
    p.add_argument("--active", type=bounded_int(0), default=100, help="jobs submitted (and active) before measuring")
    p.add_argument("--submits", type=bounded_int(1), default=64, help="measured submissions per client count")
    p.add_argument("--stream-submits", type=bounded_int(1), default=64,
                   help="measured streamed submissions (SubmitSoWs) per client count, split among the clients")
    p.add_argument("--echo-seconds", type=positive_float, default=2.0, help="measured Echo time per client count")
    p.add_argument("--samples", type=bounded_int(1), default=None, help="Monte Carlo samples (default: Lemma F.1)")
    p.add_argument("--feature-submits", type=bounded_int(0), default=64,
                   help="measured pairs of a feature submission and the same SoW submitted explicitly, one client "
                        "(0: skip the prediction's cost)")
    p.add_argument("--train", type=bounded_int(1), default=40,
                   help="feature jobs run to completion first, so the server's engine has a learned model (its cold "
                        "start is the smaller of this and 20)")


def bench_sow(rng: np.random.Generator, p: Platform) -> dict[str, Any]:
    """A pipeline-like SoW: 3 arrival rounds x 6 durations, duration revealed on arrival."""
    lead = int(rng.integers(2, 8))
    durations = sorted(int(d) for d in rng.choice(np.arange(1, p.D_m + 1), size=6, replace=False))
    rows = [[a, d] for a in (lead - 1, lead, lead + 1) for d in durations]
    prob = [1.0 / len(rows)] * len(rows)
    prob[-1] = 1.0 - sum(prob[:-1])
    value = float(rng.uniform(20.0, 90.0))
    return {"concurrency": int(rng.choice([1, 2, 4, 8])), "signal_mode": "duration",
            "value_steps": [[p.S_m - 8, value], [p.S_m, max(1.0, value / 2)]],
            "outcomes": [[a, d, q] for (a, d), q in zip(rows, prob, strict=True)]}


EXECUTABLES = ("solver", "mesh", "post", "train")


def bench_features(rng: np.random.Generator) -> dict[str, Any]:
    """A feature submission of the bench platform: 1-4 nodes, 1-3 requested rounds of 60 s, one of four programs."""
    requested = 60 * int(rng.integers(1, 4))
    return {"nodes": int(rng.integers(1, 5)), "requested_seconds": requested,
            "value_steps": [[8, float(rng.uniform(10, 40))]], "executable": str(rng.choice(EXECUTABLES))}


class BenchServer:
    """`sowsched serve` in a subprocess (its own interpreter, so clients and server do not share a GIL)."""

    def __init__(self, tmp: Path, platform: Platform, *extra: str, cold_start: int | None = None) -> None:
        config = tmp / "platform.toml"
        self.log = tmp / "server.log"
        lines = ["[platform]", *(f"{k} = {v!r}" for k, v in platform.model_dump().items() if v is not None),
                 "", "[operator]", f'token = "{TOKEN}"']
        if cold_start is not None:  # [server] prediction_cold_start
            lines += ["", "[server]", f"prediction_cold_start = {cold_start}"]
        config.write_text("\n".join(lines) + "\n")
        port_file = tmp / "port"
        with self.log.open("wb") as err:  # the server logs every call at info, as `sowsched serve` does
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "cli.commands.server", "serve", "--listen", "127.0.0.1:0", "--store",
                 str(tmp / "bench.db"), "--config", str(config), "--port-file", str(port_file), "--log-level",
                 "info", *extra], stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + 120
        while not port_file.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the benchmark server did not start")
            time.sleep(0.05)
        self.target = f"127.0.0.1:{int(port_file.read_text())}"

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=120)

    def submit_ms(self, last: int) -> tuple[list[float], list[float], float]:
        """(writer ms, commit ms) of the last `last` SubmitSoW calls, and the writer ms the settler spent while they
        ran (oracle work moved off the reply path), from the server's structured log."""
        rows = self._rows()
        calls = [i for i, r in enumerate(rows) if r.get("method") == "SubmitSoW"][-last:]
        settled = sum(float(r["writer_ms"]) for r in rows[calls[0]:calls[-1] + 1]
                      if r.get("msg") == "settle") if calls else 0.0
        return ([float(rows[i]["writer_ms"]) for i in calls], [float(rows[i]["commit_ms"]) for i in calls], settled)

    def stream_ms(self) -> tuple[float, float, float]:
        """Over every SubmitSoWs batch logged: writer ms and commit ms per streamed submission, and items per batch."""
        batches = [r for r in self._rows() if r.get("method") == "SubmitSoWs" and "items" in r]
        items = sum(int(r["items"]) for r in batches)
        if not items:
            return 0.0, 0.0, 0.0
        return (sum(float(r["writer_ms"]) for r in batches) / items,
                sum(float(r["commit_ms"]) for r in batches) / items, items / len(batches))

    def _rows(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text().splitlines()
                if '"method": "SubmitSoW' in line or '"msg": "settle"' in line]


def hammer(
    clients: list[SchedulerClient], work: Callable[[SchedulerClient, int, int], bool]
) -> tuple[float, list[float]]:
    """Run `work(client, thread, i)` in one thread per client until it returns False; (seconds, latencies). Interrupted
    (Ctrl-C, SIGTERM), it lets each thread finish its call before the caller stops the server."""
    latencies: list[list[float]] = [[] for _ in clients]
    start = threading.Barrier(len(clients) + 1)
    stop = threading.Event()

    def loop(k: int) -> None:
        try:
            start.wait()
        except threading.BrokenBarrierError:  # interrupted before the start
            return
        i = 0
        while not stop.is_set():
            t0 = time.perf_counter()
            if not work(clients[k], k, i):
                return
            latencies[k].append(time.perf_counter() - t0)
            i += 1

    threads = [threading.Thread(target=loop, args=(k,)) for k in range(len(clients))]
    for t in threads:
        t.start()
    try:
        start.wait()
        t0 = time.perf_counter()
        for t in threads:
            t.join()
    except BaseException:
        stop.set()
        start.abort()
        for t in threads:
            t.join()
        raise
    return time.perf_counter() - t0, [x for lat in latencies for x in lat]


def stream(clients: list[SchedulerClient], total: int, sows: list[dict[str, Any]]) -> tuple[float, int]:
    """Each client streams its share of `total` SoWs on one SubmitSoWs call at once; (seconds, quotes received)."""
    from clients.client import Submission

    shares = [[Submission(f"s{k}-{i}", sows[k + i * len(clients)]) for i in range(len(range(k, total, len(clients))))]
              for k in range(len(clients))]
    quoted = [0] * len(clients)

    def one(c: SchedulerClient, k: int, i: int) -> bool:
        if i > 0:
            return False
        quoted[k] = sum(1 for r in c.submit_many(shares[k]) if isinstance(r, tuple))
        return True

    secs, _ = hammer(clients, one)
    return secs, sum(quoted)


def measure(n_clients: int, args: argparse.Namespace, platform: Platform) -> dict[str, Any]:
    from clients.client import RetryPolicy, SchedulerClient

    rng = np.random.default_rng(n_clients)
    with tempfile.TemporaryDirectory(prefix="sowsched-bench-") as tmp:
        server = BenchServer(Path(tmp), platform)
        try:
            clients = [SchedulerClient(server.target, TOKEN, retry=RetryPolicy(attempts=1), timeout=600)
                       for _ in range(n_clients)]
            for i in range(args.active):
                clients[0].submit(f"pre-{i}", bench_sow(rng, platform))
            clients[0].advance()  # a new round: the oracle rebuilds its paths over the active jobs
            clients[0].submit("warm-up", bench_sow(rng, platform))
            sows = [bench_sow(rng, platform) for _ in range(args.submits)]
            per = [len(range(k, args.submits, n_clients)) for k in range(n_clients)]
            secs, lat = hammer(clients, lambda c, k, i: i < per[k] and bool(
                c.submit(f"c{k}-{i}", sows[k + i * n_clients])))
            stream_secs, streamed = stream(clients, args.stream_submits,
                                           [bench_sow(rng, platform) for _ in range(args.stream_submits)])
            end = time.perf_counter() + args.echo_seconds
            echo_secs, echo_lat = hammer(clients, lambda c, k, i: time.perf_counter() < end and bool(
                c.echo(b"x" * 64) or True))
            active = clients[0].status().active_jobs
        finally:
            server.stop()
        writer_ms, commit_ms, settled_ms = server.submit_ms(len(lat))
        stream_writer_ms, stream_commit_ms, batch_items = server.stream_ms()
    submit_rate, echo_rate = len(lat) / secs, len(echo_lat) / echo_secs
    stream_rate = streamed / stream_secs
    return {"submit_per_s": submit_rate, "echo_per_s": echo_rate, "ratio": submit_rate / echo_rate,
            "stream_per_s": stream_rate, "stream_ratio": stream_rate / submit_rate, "streamed": streamed,
            "stream_writer_ms_mean": stream_writer_ms, "stream_commit_ms_mean": stream_commit_ms,
            "stream_batch_items_mean": batch_items,
            "p50_ms": 1000 * float(np.percentile(lat, 50)), "p99_ms": 1000 * float(np.percentile(lat, 99)),
            "echo_p50_ms": 1000 * float(np.percentile(echo_lat, 50)),
            "echo_p99_ms": 1000 * float(np.percentile(echo_lat, 99)),
            "writer_ms_mean": float(np.mean(writer_ms)), "commit_ms_mean": float(np.mean(commit_ms)),
            "writer_ms_p50": float(np.percentile(writer_ms, 50)),
            # the writer's work on a submission before its share of the group commit (engine, encoding, log insert)
            "apply_ms_p50": float(np.percentile(np.subtract(writer_ms, commit_ms), 50)),
            "settle_ms_mean": settled_ms / len(writer_ms),
            "writer_per_s": 1000 / (float(np.mean(writer_ms)) + settled_ms / len(writer_ms)),
            "submits": len(lat), "echoes": len(echo_lat), "active_jobs_after": active}


def train(client: SchedulerClient, jobs: int, rng: np.random.Generator) -> int:
    """Run feature submissions until `jobs` have completed (each reported complete in its first running round; one
    evicted or cancelled is replaced) and wait for the server's engine to swap in a model learned from them; the
    completions that model learned."""
    completed, submitted = 0, 0
    for _ in range(10 * jobs):
        if completed >= jobs:
            break
        pending = {f"train-{submitted + i}" for i in range(jobs - completed)}
        submitted += len(pending)
        for job_id in sorted(pending):
            client.submit_raw(job_id, {"features": {**bench_features(rng), "nodes": 1}})
            client.report_arrival(job_id)
        for _ in range(PLATFORM.S_m + 1):  # every planned start lies within S_m rounds of birth
            if not pending:
                break
            client.advance()
            for job_id in sorted(pending):
                state = client.get_job(job_id).view.state
                if state == "RUNNING":
                    client.report_completion(job_id)
                    completed += 1
                if state not in ("SUBMITTED", "WAITING"):
                    pending.discard(job_id)
    client.advance()
    deadline = time.monotonic() + 60
    k = 0
    while time.monotonic() < deadline:  # the engine learns off the writer: probe until its model has learned
        trained = int(client.submit_raw(f"probe-{k}", {"features": bench_features(rng)}).prediction.trained)
        if trained > 0:
            return trained
        k += 1
        time.sleep(0.2)
    raise RuntimeError("the server's prediction engine learned nothing from the training jobs")


def prediction_cost(args: argparse.Namespace, platform: Platform) -> dict[str, Any]:
    """The prediction's added latency: pairs of a feature submission and the SoW its quote was built on, submitted
    explicitly right after it, one client; p50 of each and the p50 of the pairs' differences."""
    from clients.client import RetryPolicy, SchedulerClient
    from server import convert

    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory(prefix="sowsched-bench-") as tmp:
        server = BenchServer(Path(tmp), platform, cold_start=min(args.train, COLD_START))
        try:
            client = SchedulerClient(server.target, TOKEN, retry=RetryPolicy(attempts=1), timeout=600)
            trained = train(client, args.train, rng)
            for i in range(args.active):
                client.submit(f"pre-{i}", bench_sow(rng, platform))
            client.advance()
            client.submit("warm-up", bench_sow(rng, platform))
            feature_ms: list[float] = []
            explicit_ms: list[float] = []

            def by_features(i: int) -> dict[str, Any]:
                f = bench_features(rng)
                t0 = time.perf_counter()
                msg = client.submit_raw(f"f-{i}", {"features": f})
                feature_ms.append(1000 * (time.perf_counter() - t0))
                plan = convert.quote_from_proto(msg).plan
                return {"concurrency": f["nodes"], "value_steps": f["value_steps"], "signal_mode": "none",
                        "outcomes": [[o.arrival - plan.birth, o.duration, o.probability] for o in plan.outcomes]}

            def explicit(i: int, sow: dict[str, Any]) -> None:
                t0 = time.perf_counter()
                client.submit(f"e-{i}", sow)
                explicit_ms.append(1000 * (time.perf_counter() - t0))

            for i in range(args.feature_submits):
                explicit(i, by_features(i))
        finally:
            server.stop()
    diffs = [f - e for f, e in zip(feature_ms, explicit_ms, strict=True)]
    return {"trained": trained, "pairs": len(diffs),
            "features_p50_ms": float(np.percentile(feature_ms, 50)),
            "explicit_p50_ms": float(np.percentile(explicit_ms, 50)),
            "added_ms_p50": float(np.percentile(diffs, 50)), "target_added_ms": 0.5}


def run(args: argparse.Namespace) -> dict[str, Any]:
    platform = PLATFORM.model_copy(update={"samples": args.samples})
    out = {"platform": platform.model_dump(), "samples": platform.sample_count, "active_jobs": args.active,
           "target_ratio": 0.3, "target_stream_ratio": 5.0,
           "clients": {str(n): measure(n, args, platform) for n in args.clients}}
    if args.feature_submits:
        out["prediction"] = prediction_cost(args, platform)
    return out


def table(result: dict[str, Any]) -> str:
    lines = [f"gRPC SubmitSoW vs Echo (same server, SQLite WAL log, N={result['samples']} Monte Carlo samples, "
             f"{result['active_jobs']} active jobs before measuring; target ratio >= {result['target_ratio']}, "
             f"streamed >= {result['target_stream_ratio']}x single-RPC)",
             "stream/s: submissions per second streamed on SubmitSoWs (one stream per client), same server and run;",
             "s.writer, s.commit: writer and commit ms per streamed submission; s.batch: submissions per group commit",
             "writer ms: time a SubmitSoW held the one writer (engine + log commit), from the server's own log;",
             "commit ms: its share of the log commits (fsync), part of writer ms;",
             "settle ms: oracle work per submission done while its reply is on the wire (the writer is held too);",
             "writer/s: 1000 / (writer ms + settle ms), the ceiling of the one writer that applies commands in order",
             f"{'clients':>7} {'submit/s':>9} {'echo/s':>9} {'ratio':>7} {'p50 ms':>8} {'p99 ms':>8} "
             f"{'echo p50':>9} {'echo p99':>9} {'writer ms':>9} {'commit ms':>9} {'settle ms':>9} {'writer/s':>8} "
             f"{'stream/s':>9} {'x single':>8} {'s.writer':>8} {'s.commit':>8} {'s.batch':>7}"]
    for n, r in result["clients"].items():
        lines.append(f"{n:>7} {r['submit_per_s']:9.1f} {r['echo_per_s']:9.1f} {r['ratio']:7.3f} {r['p50_ms']:8.1f} "
                     f"{r['p99_ms']:8.1f} {r['echo_p50_ms']:9.2f} {r['echo_p99_ms']:9.2f} {r['writer_ms_mean']:9.2f} "
                     f"{r['commit_ms_mean']:9.2f} {r['settle_ms_mean']:9.2f} "
                     f"{r['writer_per_s']:8.1f} {r['stream_per_s']:9.1f} {r['stream_ratio']:8.2f} "
                     f"{r['stream_writer_ms_mean']:8.2f} {r['stream_commit_ms_mean']:8.2f} "
                     f"{r['stream_batch_items_mean']:7.1f}")
    if "prediction" in result:
        p = result["prediction"]
        lines.append(f"prediction (one client, {p['pairs']} pairs, model trained on {p['trained']} completions): "
                     f"features p50 {p['features_p50_ms']:.2f} ms, the same SoW explicit {p['explicit_p50_ms']:.2f} "
                     f"ms, added p50 {p['added_ms_p50']:.2f} ms (target <= {p['target_added_ms']})")
    return "\n".join(lines)
