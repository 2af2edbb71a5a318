"""`make demo-cluster`: the Slurm test bed, a wall-clock server, the agent, and pipelines of real commands (sleeps of
drawn durations) chained by `after`; progress on stderr, then each tenant's invoice and where each job ran."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from clients.client import RetryPolicy, SchedulerClient
from mechanism.views import Quote

ROOT = Path(__file__).resolve().parent.parent
OPERATOR_TOKEN = "demo-operator-token"
EXECUTOR_TOKEN = "demo-executor-token"
TENANTS = {"acme": "demo-acme-token", "globex": "demo-globex-token"}
STAGES = ("prep", "train", "eval")
DURATIONS = ((2, 0.6), (3, 0.4))  # (rounds, probability): every stage declares this law
ACTIVE = ("SUBMITTED", "WAITING", "RUNNING")
S_M = 40  # rounds: a job's value is 0 this long after its birth (and its arrival offsets stay below it)
VALUE_STEPS = [[12, 90.0], [24, 60.0], [S_M, 30.0]]  # worth more done sooner: pipelines run side by side


def platform_toml(round_seconds: float) -> str:
    lines = ["[platform]", "C = 16", "C_m = 4", "D_m = 4", f"S_m = {S_M}", "H = 100.0", "samples = 1000", "seed = 11",
             "",
             "[operator]", f'token = "{OPERATOR_TOKEN}"', "", "[executor]", f'token = "{EXECUTOR_TOKEN}"']
    for name, token in TENANTS.items():
        lines += ["", "[[tenants]]", f'name = "{name}"', f'token = "{token}"']
    return "\n".join(lines) + "\n"


def stage_sow(rng: np.random.Generator, arrivals: list[int], parents: list[str],
              round_seconds: float) -> dict[str, Any]:
    """A stage: 1-2 nodes; arrival at one of `arrivals` (offsets from its birth); its payload sleeps a duration
    drawn from the declared law, ending inside its last declared round."""
    rounds = int(rng.choice([d for d, _ in DURATIONS], p=[p for _, p in DURATIONS]))
    outcomes = [[a, d, p / len(arrivals)] for a in arrivals for d, p in DURATIONS]
    sleep = max(0.2, (rounds - 1) * round_seconds - 1.2)  # launch and poll take about a second
    return {"concurrency": int(rng.integers(1, 3)), "value_steps": VALUE_STEPS, "outcomes": outcomes,
            "signal_mode": "none", "after": parents,
            "command": ["sh", "-c", f"echo \"$SOWSCHED_JOB_ID on $(hostname) with $SOWSCHED_NODES nodes\"; "
                                    f"sleep {sleep:.2f}"]}


def child_arrivals(parent: Quote, now: int) -> list[int]:
    """The arrival offsets of a child born in round `now` or `now + 1` (a wall-clock tick may fall in between):
    every round its parent can finish in, by the parent's binding quote (a start per arrival group, then a
    completion after 1 to the longest declared duration rounds). A child arrives at its parent's finish."""
    starts = [g.start for g in parent.plan.groups if g.start is not None]
    if not starts:
        return [1]  # the parent never starts: the child is cancelled with it
    first, last = min(starts) + 1, max(starts) + max(d for d, _ in DURATIONS)
    return list(range(max(1, first - now - 1), min(last - now, S_M - 1) + 1))


def start(cmd: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=out, env={**os.environ, **(env or {})})


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cli.demo_cluster", description=__doc__)
    parser.add_argument("--executor", choices=("slurm", "local"), default="slurm")
    parser.add_argument("--round-seconds", type=float, default=2.0)
    parser.add_argument("--pipelines", type=int, default=2, help="pipelines per tenant (3 stages each)")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--limit", type=float, default=100.0, help="seconds before the demo gives up waiting")
    args = parser.parse_args(argv)
    if args.executor == "slurm":
        subprocess.run(["bash", str(ROOT / "scripts" / "slurm-up")], check=True)
    bin_ = [sys.executable, "-m", "cli.main"]
    with tempfile.TemporaryDirectory(prefix="sowsched-cluster-") as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "platform.toml").write_text(platform_toml(args.round_seconds))
        server = start([*bin_, "serve", "--listen", "127.0.0.1:0", "--port-file", str(tmp / "port"), "--store",
                        str(tmp / "log.db"), "--config", str(tmp / "platform.toml"), "--clock", "wall",
                        "--round-seconds", str(args.round_seconds), "--log-level", "warning"], tmp / "server.log")
        agent: subprocess.Popen[bytes] | None = None
        try:
            deadline = time.monotonic() + 60
            while not (tmp / "port").exists():
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError((tmp / "server.log").read_text()[-2000:])
                time.sleep(0.05)
            target = f"127.0.0.1:{(tmp / 'port').read_text().strip()}"
            agent = start([*bin_, "agent", "--executor", args.executor, "--state", str(tmp / "agent.db"),
                           "--server", target, "--poll", "0.3", "--grace", "2", "--log-level", "warning"],
                          tmp / "agent.log", {"SOWSCHED_TOKEN": EXECUTOR_TOKEN})
            op = SchedulerClient(target, OPERATOR_TOKEN, retry=RetryPolicy(attempts=20))
            rng = np.random.default_rng(args.seed)
            jobs: list[tuple[str, str]] = []
            for tenant in TENANTS:
                for p in range(args.pipelines):
                    parents: list[str] = []
                    quote: Quote | None = None
                    for stage in STAGES:
                        job_id = f"p{p}-{stage}"
                        arrivals = [0, 1, 2] if quote is None else child_arrivals(quote, op.status().now)
                        quote = op.submit(job_id, stage_sow(rng, arrivals, parents, args.round_seconds),
                                          tenant=tenant)
                        if not parents:
                            op.report_arrival(job_id, tenant=tenant)
                        jobs.append((tenant, job_id))
                        parents = [job_id]
            print(f"demo-cluster: {len(jobs)} jobs in {len(jobs) // 3} pipelines, {args.executor} executor, "
                  f"{args.round_seconds:g} s rounds", file=sys.stderr)
            t0 = time.monotonic()
            while True:
                states = [op.get_job(j, tenant=t).view.state for t, j in jobs]
                counts = Counter(states)
                print(f"  {time.monotonic() - t0:5.1f} s round {op.status().now}: "
                      + ", ".join(f"{k.lower()} {v}" for k, v in sorted(counts.items())), file=sys.stderr)
                if not any(s in ACTIVE for s in states) or time.monotonic() - t0 > args.limit:
                    break
                time.sleep(2 * args.round_seconds)
            report: dict[str, Any] = {"invoices": {}, "jobs": []}
            for tenant in TENANTS:
                inv = op.invoice(tenant)
                report["invoices"][tenant] = {"total": inv.total, "charges": len(inv.lines)}
            for tenant, job_id in jobs:
                v = op.get_job(job_id, tenant=tenant).view
                ex = v.executor
                report["jobs"].append({"tenant": tenant, "job": job_id, "state": v.state, "start": v.start,
                                       "finish": v.finish, "charge": v.charge,
                                       "ran_on": None if ex is None else f"{ex.kind} {ex.external_id}",
                                       "exit_code": None if ex is None else ex.exit_code})
            op.close()
        finally:
            for proc in (agent, server):
                if proc is not None and proc.poll() is None:
                    proc.terminate()
                    proc.wait(timeout=60)
    print(f"{'tenant':<8} {'total':>9} {'charges':>7}")
    for tenant, inv in report["invoices"].items():
        print(f"{tenant:<8} {inv['total']:9.2f} {inv['charges']:7d}")
    print(f"\n{'tenant':<8} {'job':<10} {'state':<13} {'start':>5} {'finish':>6} {'charge':>7}  ran on (exit code)")
    for j in report["jobs"]:
        where = "-" if j["ran_on"] is None else f"{j['ran_on']} ({j['exit_code']})"
        print(f"{j['tenant']:<8} {j['job']:<10} {j['state']:<13} {j['start'] if j['start'] is not None else '-':>5} "
              f"{j['finish'] if j['finish'] is not None else '-':>6} {j['charge']:7.2f}  {where}")
    print(json.dumps({"completed": sum(j["state"] == "COMPLETED" for j in report["jobs"]),
                      "jobs": len(report["jobs"])}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
