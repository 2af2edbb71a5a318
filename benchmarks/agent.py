"""The executor agent's speed: time from a round's start events to each launch returning (sbatch on the Slurm test
bed, or a local process group), with many starts in one round, and the agent's CPU per launched job."""

from __future__ import annotations

import argparse
import queue
import resource
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from cli.args import BenchInputError, bounded_int
from mechanism.platform import Platform

TOKEN = "bench-operator-token"
PLATFORM = Platform(C=1000, C_m=1, D_m=4, S_m=8, H=100.0, seed=1, samples=500)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--starts", type=bounded_int(1, 900), default=100, help="jobs submitted to start in one round")
    p.add_argument("--executor", choices=("slurm", "local"), default="slurm",
                   help="slurm: the test bed (scripts/slurm-up); local: process groups")
    p.add_argument("--workers", type=bounded_int(1, 64), default=None,
                   help="launches at once (default: the agent's, clients.agent.LAUNCH_WORKERS)")
    p.add_argument("--no-arrays", action="store_true",
                   help="slurm: one sbatch per started job (as the agent does with --slots or --array-max 1) "
                        "instead of one sbatch --array per shape of a round's starts")
    p.add_argument("--server-payloads", action="store_true",
                   help="launch each started job's payload as the server streams it in the start event, GetJob for "
                        "a start without one, as `sowsched agent` does, instead of a fixed one in the benchmark")
    p.add_argument("--get-job", action="store_true",
                   help="with --server-payloads: fetch every start's payload with one GetJob, as the agent does "
                        "against a server whose start events carry none")
    p.add_argument("--per-event", action="store_true",
                   help="the agent follows WatchEvents, one message per event (as against a server without "
                        "WatchEventBatches), instead of a round's events in one message")
    p.add_argument("--submissions", action="store_true",
                   help="slurm: also time the same number of bare jobs submitted without the agent, one sbatch each "
                        "(--workers at once) and all in one sbatch --array (the options for one round's starts)")
    p.add_argument("--slurmrestd", type=Path, metavar="SOCKET",
                   help="with --submissions: also submit them through a running slurmrestd's unix socket "
                        "(rest_auth/local, OpenAPI v0.0.38), --workers at once")


class QueueTimes(queue.Queue[Any]):
    """The agent's event queue, noting when each start event is put in it (monotonic seconds)."""

    def __init__(self) -> None:
        super().__init__()
        self.starts: list[float] = []

    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        if item.event.type == "start":
            self.starts.append(time.monotonic())
        super().put(item, block, timeout)


class Timed:
    """An executor whose launches are timed (monotonic seconds at each return)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.kind = inner.kind
        self.returned: list[float] = []
        self.calls = 0  # launch calls (sbatch): one per job, or one per array

    def launch(self, spec: Any) -> str:
        external: str = self.inner.launch(spec)
        self.returned.append(time.monotonic())
        self.calls += 1
        return external

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class TimedArrays(Timed):
    """A timed executor with arrays (Slurm): each element of an array returns when its sbatch --array does."""

    def shape(self, spec: Any) -> Any:
        return self.inner.shape(spec)

    def launch_array(self, key: str, elements: Any) -> dict[int, str]:
        ids: dict[int, str] = self.inner.launch_array(key, elements)
        self.returned += [time.monotonic()] * len(ids)
        self.calls += 1
        return ids

    def find_array(self, key: str, indices: Any) -> dict[int, str]:
        found: dict[int, str] = self.inner.find_array(key, indices)
        return found


def run(args: argparse.Namespace) -> dict[str, Any]:
    from clients.agent import LAUNCH_WORKERS, Agent, AgentOptions, Payload, server_payloads
    from clients.agent_state import AgentState
    from clients.client import SchedulerClient
    from clients.executors import ARRAY_MAX, ArrayExecutor, LocalExecutor, SlurmExecutor
    from server.app import ServerOptions, start_server
    from server.config import parse_config

    no_arrays = bool(getattr(args, "no_arrays", False))
    if getattr(args, "get_job", False) and not getattr(args, "server_payloads", False):
        raise BenchInputError("--get-job needs --server-payloads (it says how the server's payloads are fetched)")
    if args.executor == "slurm" and shutil.which("sbatch") is None:
        raise BenchInputError("no sbatch on PATH: run scripts/slurm-up, or use --executor local")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        config = parse_config({"platform": PLATFORM.model_dump(), "operator": {"token": TOKEN}})
        srv = start_server(config, ServerOptions(store=str(tmp / "log.db"), listen="127.0.0.1:0"))
        inner = SlurmExecutor(tmp / "out") if args.executor == "slurm" else LocalExecutor(tmp / "out")
        executor = TimedArrays(inner) if isinstance(inner, ArrayExecutor) and not no_arrays else Timed(inner)
        op = SchedulerClient(f"127.0.0.1:{srv.port}", TOKEN)
        agent_client = SchedulerClient(f"127.0.0.1:{srv.port}", TOKEN)
        from_server = bool(getattr(args, "server_payloads", False))
        source = server_payloads(agent_client, PLATFORM.D_m) if from_server else lambda t, j: Payload(("true",), 1, 2)
        fetched: list[str] = []  # payloads asked of the source (GetJob with --server-payloads)

        def payloads(tenant: str, job_id: str) -> Any:
            fetched.append(job_id)
            return source(tenant, job_id)
        agent = Agent(agent_client, executor, AgentState(tmp / "agent.db", inner.kind), payloads,
                      AgentOptions(poll=0.2, launch_workers=args.workers or LAUNCH_WORKERS,
                                   array_max=1 if no_arrays else ARRAY_MAX,
                                   event_payloads=from_server and not getattr(args, "get_job", False),
                                   event_batches=not getattr(args, "per_event", False)))
        agent.events = queued = QueueTimes()
        sow = {"concurrency": 1, "value_steps": [[2, 50.0]], "outcomes": [[0, 2, 1.0]], "signal_mode": "none",
               "command": ["true"]}
        for i in range(args.starts):
            op.submit(f"j{i}", sow)
            op.report_arrival(f"j{i}")
        stop = threading.Event()
        cpu: dict[str, float] = {}

        def agent_thread() -> None:
            t0 = time.thread_time()
            agent.run(stop)
            cpu["agent"] = time.thread_time() - t0

        children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        thread = threading.Thread(target=agent_thread, daemon=True)
        thread.start()
        time.sleep(0.5)  # the agent is connected and idle
        t_round = time.monotonic()
        report = op.advance()
        t_reply = time.monotonic()  # the round is played and its start events are logged
        started = sum(1 for e in report.events if e.type == "start")
        deadline = time.monotonic() + 600
        while len(executor.returned) < started and time.monotonic() < deadline:
            time.sleep(0.01)
        stop.set()
        thread.join(timeout=60)
        children1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        op.close()
        agent.client.close()
        srv.stop(0)
    latency = np.array(executor.returned) - t_round
    child_cpu = (children1.ru_utime + children1.ru_stime) - (children0.ru_utime + children0.ru_stime)
    launched = max(1, len(latency))
    return {"executor": args.executor, "workers": args.workers or LAUNCH_WORKERS, "submitted": args.starts,
            "started_in_round": started,
            "launched": len(latency),
            "arrays": isinstance(executor, TimedArrays), "launch_calls": executor.calls,
            "server_payloads": from_server, "get_job": from_server and bool(getattr(args, "get_job", False)),
            "payload_fetches": len(fetched),
            "start_to_launch_p50_s": float(np.percentile(latency, 50)) if len(latency) else None,
            "start_to_launch_p99_s": float(np.percentile(latency, 99)) if len(latency) else None,
            "start_to_last_launch_s": float(latency.max()) if len(latency) else None,
            "round_play_s": t_reply - t_round,
            "starts_queued_s": max(queued.starts) - t_round if queued.starts else None,  # the round's last start
            "per_event": bool(getattr(args, "per_event", False)),
            "reply_to_launch_p50_s": float(np.percentile(latency, 50)) - (t_reply - t_round) if len(latency) else None,
            "agent_cpu_ms_per_job": 1000 * cpu.get("agent", 0.0) / launched,
            "launcher_cpu_ms_per_job": 1000 * child_cpu / launched,
            **({"submissions": submissions(args.starts, args.workers or LAUNCH_WORKERS,
                                           getattr(args, "slurmrestd", None))}
               if getattr(args, "submissions", False) and args.executor == "slurm" else {})}


def submissions(n: int, workers: int, restd: Path | None = None) -> dict[str, dict[str, float]]:
    """Return times (seconds from the first call) of `n` bare jobs (`true`, 1 minute limit) submitted one sbatch
    each, `workers` at once; of one `sbatch --array=0-(n-1)` (every element is submitted when it returns); and, with
    `restd`, one POST each to slurmrestd's job/submit, `workers` at once."""
    import http.client
    import json
    import socket
    import subprocess
    from concurrent.futures import ThreadPoolExecutor

    base = ["sbatch", "--parsable", "--time=1", "--output=/dev/null", "--no-requeue"]

    def sbatch(*options: str) -> None:
        done = subprocess.run([*base, *options, "--wrap", "true"], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise BenchInputError(f"sbatch {' '.join(options)} exited {done.returncode}: {done.stderr.strip()[:300]}")

    def timed(f: Any) -> list[float]:
        t0 = time.monotonic()
        return [r - t0 for r in f()]

    def each() -> list[float]:
        def one(i: int) -> float:
            sbatch(f"--job-name=bench-each-{i}")
            return time.monotonic()
        with ThreadPoolExecutor(workers) as pool:
            return list(pool.map(one, range(n)))

    body = json.dumps({"script": "#!/bin/sh\ntrue\n", "job": {
        "name": "bench-rest", "ntasks": 1, "time_limit": 1, "current_working_directory": tempfile.gettempdir(),
        "standard_output": "/dev/null", "environment": {"PATH": "/usr/bin:/bin"}}})

    class UnixConnection(http.client.HTTPConnection):
        def connect(self) -> None:
            self.sock = socket.socket(socket.AF_UNIX)
            self.sock.connect(str(restd))

    def rest() -> list[float]:
        def one(_: int) -> float:
            conn = UnixConnection("localhost")
            conn.request("POST", "/slurm/v0.0.38/job/submit", body, {"Content-Type": "application/json"})
            answer = json.loads(conn.getresponse().read() or b"{}")
            conn.close()
            if not answer.get("job_id"):
                raise BenchInputError(f"slurmrestd refused the job: {answer.get('errors')}")
            return time.monotonic()
        with ThreadPoolExecutor(workers) as pool:
            return list(pool.map(one, range(n)))

    def idle(limit: float = 120.0) -> None:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline and subprocess.run(
                ["squeue", "-h", "-t", "PENDING,RUNNING,CONFIGURING,COMPLETING", "-o", "%i"],
                capture_output=True, text=True, check=False).stdout.strip():
            time.sleep(0.5)

    def array() -> list[float]:
        sbatch("--job-name=bench-array", f"--array=0-{n - 1}")
        return [time.monotonic()] * n

    result = {}
    ways: list[tuple[str, Any]] = [("sbatch_each", each), ("sbatch_array", array)]
    for name, f in ways + ([("slurmrestd_each", rest)] if restd is not None else []):
        idle()  # the jobs submitted before (the agent's, the last way's) started and ended: every way meets an idle
        t = np.array(timed(f))  # controller
        result[name] = {"p50_s": float(np.percentile(t, 50)), "last_s": float(t.max())}
    return result


def payload_source(r: dict[str, Any]) -> str:
    if not r["server_payloads"]:
        return "fixed in the benchmark"
    return "one GetJob per start" if r["get_job"] else "carried by the start events (GetJob for a start without one)"


def table(r: dict[str, Any]) -> str:
    def s(v: float | None) -> str:
        return "-" if v is None else f"{v:.3f}"
    return "\n".join([
        f"agent ({r['executor']}, {r['workers']} launches at once, arrays {'on' if r['arrays'] else 'off'}): "
        f"{r['started_in_round']} starts in one round, {r['launched']} launched in {r['launch_calls']} calls",
        f"  payloads: {payload_source(r)}, {r['payload_fetches']} asked of the payload source",
        f"  round played in {s(r['round_play_s'])} s, its last start in the agent's queue at "
        f"{s(r['starts_queued_s'])} s ({'one message per event' if r['per_event'] else 'a round in one message'})",
        f"  round played -> launch returned: p50 {s(r['start_to_launch_p50_s'])} s, "
        f"p99 {s(r['start_to_launch_p99_s'])} s, last {s(r['start_to_last_launch_s'])} s",
        f"  CPU per launched job: agent thread {r['agent_cpu_ms_per_job']:.1f} ms, "
        f"launcher processes ({'sbatch' if r['executor'] == 'slurm' else 'sh'}) {r['launcher_cpu_ms_per_job']:.1f} ms",
        *(f"  without the agent, {r['submitted']} bare jobs by {name}: p50 {v['p50_s']:.3f} s, last {v['last_s']:.3f} s"
          for name, v in r.get("submissions", {}).items())])
