"""`sowsched agent`: run started jobs' payloads on this machine or on Slurm (clients/agent.py; docs/executors.md)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
from pathlib import Path
from typing import Any

from cli.args import bounded_int, positive_float
from cli.commands.jobs import NO_ANSWER, add_connection_arguments
from cli.exits import EXIT_REFUSED, EXIT_UNAVAILABLE
from cli.verbs import add_verb
from clients.executors import ARRAY_MAX


def register(sub: Any) -> None:
    p = add_verb(sub, "agent")
    add_connection_arguments(p)
    p.add_argument("--executor", choices=("local", "slurm"), default="local",
                   help="local: a process group per job on this machine; slurm: one sbatch --array for a round's "
                        "starts of one shape")
    p.add_argument("--state", type=Path, required=True,
                   help="the agent's SQLite state file (its event cursor and launches; created when missing)")
    p.add_argument("--slots", type=bounded_int(1), help="local: nodes run at once (default: no bound)")
    p.add_argument("--poll", type=positive_float, default=1.0, help="seconds between executor polls (default 1)")
    p.add_argument("--grace", type=positive_float, default=10.0,
                   help="local: seconds from SIGTERM to SIGKILL when a job is stopped (default 10)")
    p.add_argument("--run-dir", type=Path,
                   help="payload output (and local pid and exit files); default: STATE.d beside the state file")
    p.add_argument("--sbatch-arg", action="append", default=[], metavar="ARG",
                   help="slurm: one more sbatch option, e.g. --sbatch-arg=--partition=batch (repeatable)")
    p.add_argument("--array-max", type=bounded_int(1, ARRAY_MAX), default=ARRAY_MAX, metavar="N",
                   help=f"slurm: most jobs in one array, below the cluster's MaxArraySize (default {ARRAY_MAX}); "
                        "1: one sbatch per job")
    p.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from cli.commands.jobs import connect
    from clients.agent import Agent, AgentOptions, server_payloads
    from clients.agent_state import AgentState, StateError
    from clients.client import RetryPolicy, RpcFailure
    from clients.executors import Executor, LocalExecutor, SlurmExecutor

    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(),
                        format="%(asctime)s agent %(levelname)s %(message)s")
    run_dir = args.run_dir or args.state.with_name(args.state.name + ".d")
    executor: Executor = (LocalExecutor(run_dir) if args.executor == "local"
                          else SlurmExecutor(run_dir, args.sbatch_arg))
    try:
        state = AgentState(args.state, executor.kind)
    except StateError as exc:
        print(f"sowsched agent: {exc}", file=sys.stderr)
        return 2
    args.retries = max(args.retries, 60)
    client = connect(args)
    client.retry = RetryPolicy(attempts=args.retries, backoff=0.05, max_backoff=1.0)
    try:
        status = client.status()
    except RpcFailure as exc:
        print(f"sowsched agent: {exc}", file=sys.stderr)
        state.close()
        return EXIT_UNAVAILABLE if exc.code in NO_ANSWER else EXIT_REFUSED
    crash = int(os.environ.get("SOWSCHED_AGENT_CRASH_AFTER_LAUNCH", "0"))
    options = AgentOptions(poll=args.poll, grace=args.grace, slots=args.slots,
                           round_seconds=status.round_seconds if status.clock == "wall" else 0.0,
                           crash_after_launch=crash, array_max=args.array_max)
    agent = Agent(client, executor, state, server_payloads(client, status.platform.D_m), options)
    stop = threading.Event()
    try:
        agent.run(stop)
    finally:
        stop.set()
        client.close()
        state.close()
    return 0
