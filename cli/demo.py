"""`make demo`: a loopback server with its SQLite log, the pipelines workload driven over gRPC, and a report."""

from __future__ import annotations

import argparse
import secrets
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from cli.args import bounded_int
from cli.commands.simulate import OFFLINE_TIME_LIMIT, against_optimum, offline_lines
from clients.client import SchedulerClient
from clients.grpc_sim import RemoteSchedulerError, run_remote_simulation
from models.simulation import SimulationResult, Workload, run_simulation
from models.workloads import WORKLOADS, make_workload
from server.app import ServerOptions, setup_logging, start_server
from server.backup import BackupResult, backup_store
from server.config import OPERATOR, ServerConfig
from server.scheduler import DurableScheduler
from server.service import encode_reply, legacy_replies
from server.store import CommandStore, StoreError


def tenant_of(job_id: str) -> str:
    """Each recurring pipeline is one tenant: `pipe3-run5` belongs to `pipe3`."""
    return job_id.split("-", 1)[0]


def demo_config(workload: Workload, operator_token: str) -> ServerConfig:
    tenants = tuple(sorted({tenant_of(j.id) for j in workload.jobs}))
    tokens = {operator_token: OPERATOR, **{secrets.token_hex(16): t for t in tenants}}
    return ServerConfig(platform=workload.platform, oracle="mc", tokens=tokens, tenants=tenants)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cli.demo", description=__doc__)
    parser.add_argument("--workload", default="pipelines", choices=WORKLOADS)
    parser.add_argument("--seed", type=bounded_int(0), default=0)
    parser.add_argument("--store-dir", type=Path, help="keep the SQLite log here (default: a temporary directory)")
    args = parser.parse_args(argv)
    setup_logging("warning")
    workload = make_workload(args.workload, seed=args.seed)
    with tempfile.TemporaryDirectory(prefix="sowsched-demo-") as tmp:
        store = (args.store_dir or Path(tmp)) / "sowsched.db"
        try:
            print(run_demo(workload, store))
        except (RemoteSchedulerError, StoreError) as exc:  # e.g. a --store-dir with an earlier demo's log or backup
            print(f"python -m cli.demo: {exc}", file=sys.stderr)
            return 1
    return 0


def run_demo(workload: Workload, store: Path) -> str:
    token = secrets.token_hex(16)
    config = demo_config(workload, token)
    options = ServerOptions(store=str(store), listen="127.0.0.1:0")
    server = start_server(config, options)
    lines = [f"server on 127.0.0.1:{server.port}, command log {store}"]
    try:
        with SchedulerClient(f"127.0.0.1:{server.port}", token) as client:
            started = time.perf_counter()
            result = run_remote_simulation(workload, client, tenant_of=tenant_of)
            elapsed = time.perf_counter() - started
            lines += report(result, elapsed)
            lines += offline_lines(against_optimum(workload, result, OFFLINE_TIME_LIMIT))
            lines.append(same_as_in_process(workload, result))
            lines += invoices(client, config.tenants)
            digest = client.status().state_digest
            copy = backup_store(store, store.with_name(store.stem + "-backup.db"))  # while the server runs
    finally:
        server.stop()
    replay_started = time.perf_counter()
    restarted = start_server(config, options)
    replay_s = time.perf_counter() - replay_started
    try:
        with SchedulerClient(f"127.0.0.1:{restarted.port}", token) as client:
            again = client.status().state_digest
    finally:
        restarted.stop()
    lines.append(f"state digest {digest[:16]}...; after a restart that replayed {restarted.scheduler.replayed} "
                 f"logged commands in {replay_s:.1f} s: {again[:16]}... "
                 f"({'identical' if again == digest else 'DIFFERENT'})")
    lines.append(backup_line(config, copy, digest))
    return "\n".join(lines)


def backup_line(config: ServerConfig, copy: BackupResult, digest: str) -> str:
    """The online backup taken before the stop, replayed read-only: its digest must be the server's."""
    replayed = DurableScheduler(config, CommandStore(copy.path, config.identity(), read_only=True), encode_reply,
                                legacy=legacy_replies)
    try:
        theirs = replayed.engine.digest()
    finally:
        replayed.close()
    return (f"online backup while serving (sowsched backup): {copy.path.name}, commands 1..{copy.last_seq}, "
            f"{copy.bytes} bytes, replayed: {theirs[:16]}... ({'identical' if theirs == digest else 'DIFFERENT'})")


def report(result: SimulationResult, elapsed: float) -> list[str]:
    s = result.summary()
    p = result.platform
    return [
        f"workload {s['workload']}: {s['jobs']} jobs over {s['rounds']} rounds on C={p.C} nodes, "
        f"N={p.sample_count} Monte Carlo samples, driven over gRPC in {elapsed:.1f} s",
        f"  welfare      {s['welfare']:12.2f}   (sum of V(f) over completed jobs)",
        f"  revenue      {s['revenue']:12.2f}",
        f"  utility      {s['utility']:12.2f}   (welfare - revenue)",
        f"  utilisation  {100 * s['utilization']:11.1f} %  (busy node-rounds / C x rounds)",
        f"  evictions    {s['evicted']:12d}   (cancelled before start: {s['cancelled']})",
        f"  completed    {s['completed']:12d}   (expired {s['expired']}, never scheduled {s['not_scheduled']})",
    ]


def same_as_in_process(workload: Workload, remote: SimulationResult) -> str:
    local = run_simulation(workload)
    same = local.summary() == remote.summary() and local.events == remote.events
    return (f"  in-process run of the same workload: welfare {local.welfare:.2f}, revenue {local.revenue:.2f}, "
            f"{len(local.events)} events ({'identical' if same else 'DIFFERENT'} to the gRPC run)")


def invoices(client: SchedulerClient, tenants: Sequence[str]) -> list[str]:
    lines = ["per-tenant invoices (GetInvoice):", f"  {'tenant':10} {'charges':>7} {'total':>10}"]
    total = 0.0
    for tenant in tenants:
        inv = client.invoice(tenant)
        total += inv.total
        lines.append(f"  {tenant:10} {len(inv.lines):7d} {inv.total:10.2f}")
    lines.append(f"  {'all':10} {'':7} {total:10.2f}")
    return lines


if __name__ == "__main__":
    sys.exit(main())
