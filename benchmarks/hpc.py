"""HPC trace study speed: simulated jobs per second (EASY, conservative) and CP-SAT round times by queue length."""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Sequence
from typing import Any

from cli.args import bounded_int, positive_float
from models.data import KTH_SP2, recorded_path
from models.hpc import cp
from models.hpc.jobs import Workload
from models.hpc.list_scheduling import Order, conservative, easy
from models.hpc.simulator import RoundState, Scheduler, simulate
from models.hpc.swf import load_workload

DEFAULT_TRACE = str(KTH_SP2)
QUEUE_BINS: tuple[tuple[int, int], ...] = ((2, 5), (6, 10), (11, 20), (21, 40), (41, 10**9))


def readable_file(text: str) -> str:
    """An argparse type: a path to a readable file."""
    if not os.path.isfile(text) or not os.access(text, os.R_OK):
        raise argparse.ArgumentTypeError(f"{text} is not a readable file")
    return text


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--trace", type=readable_file, default=DEFAULT_TRACE, help="SWF trace (default: KTH-SP2)")
    p.add_argument("--cp-jobs", type=bounded_int(1), default=3000, help="trace prefix whose rounds feed the CP timings")
    p.add_argument("--per-bin", type=bounded_int(1), default=3, help="rounds sampled per queue-length bin")
    p.add_argument("--time-limit", type=positive_float, default=1.0, help="CP-SAT seconds per round solve")


def _load(path: str) -> Workload:
    return load_workload(path)[0]


def _throughput(workload: Workload) -> list[dict[str, Any]]:
    rows = []
    schedulers: list[tuple[str, Scheduler]] = [
        ("easy", easy()),
        ("fcfs-conservative", conservative(Order.FCFS)),
        ("saf-conservative", conservative(Order.SAF)),
        ("laf-conservative", conservative(Order.LAF)),
    ]
    for name, scheduler in schedulers:
        began = time.perf_counter()
        result = simulate(workload, scheduler, "exact")
        seconds = time.perf_counter() - began
        rows.append(
            {
                "scheduler": name,
                "jobs": len(workload.jobs),
                "rounds": result.rounds,
                "seconds": round(seconds, 3),
                "jobs_per_second": round(len(workload.jobs) / seconds),
            }
        )
    return rows


class _Collector:
    """List-REG that keeps the rounds where CP would have to decide (some but not all jobs fit now)."""

    def __init__(self) -> None:
        self.inner = conservative(Order.FCFS)
        self.states: list[RoundState] = []

    def __call__(self, state: RoundState) -> Sequence[int]:
        sizes = [w.size for w in state.queue]
        if min(sizes) <= state.free < sum(sizes):
            self.states.append(state)
        return self.inner(state)


def _sample(states: list[RoundState], per_bin: int) -> dict[tuple[int, int], list[RoundState]]:
    picked: dict[tuple[int, int], list[RoundState]] = {}
    for lo, hi in QUEUE_BINS:
        inside = [s for s in states if lo <= len(s.queue) <= hi]
        step = max(1, len(inside) // max(1, per_bin))
        picked[(lo, hi)] = inside[::step][:per_bin]
    return picked


def _cp_times(workload: Workload, per_bin: int, time_limit: float) -> list[dict[str, Any]]:
    collector = _Collector()
    simulate(workload, collector, "exact")
    rows = []
    for (lo, hi), states in _sample(collector.states, per_bin).items():
        for objective in cp.Objective:
            seconds, optimal, feasible = [], 0, 0
            for state in states:
                found = cp.optimise(cp.round_problem(state), objective, time_limit)
                seconds.append(found.seconds)
                optimal += found.status == "OPTIMAL"
                feasible += found.plan is not None
            rows.append(
                {
                    "queue": f"{lo}-{hi}" if hi < 10**9 else f"{lo}+",
                    "objective": objective.value,
                    "rounds": len(states),
                    "median_seconds": round(statistics.median(seconds), 3) if seconds else None,
                    "max_seconds": round(max(seconds), 3) if seconds else None,
                    "optimal": optimal,
                    "found_plan": feasible,
                }
            )
    return rows


def run(args: argparse.Namespace) -> dict[str, Any]:
    workload = _load(args.trace)
    return {
        "trace": recorded_path(args.trace),
        "throughput": _throughput(workload),
        "cp_jobs": args.cp_jobs,
        "cp_time_limit": args.time_limit,
        "cp_rounds": _cp_times(workload.prefix(args.cp_jobs), args.per_bin, args.time_limit),
    }


def table(result: dict[str, Any]) -> str:
    lines = [f"trace {result['trace']}", f"{'scheduler':<18} {'jobs':>6} {'rounds':>7} {'seconds':>8} {'jobs/s':>8}"]
    for r in result["throughput"]:
        lines.append(
            f"{r['scheduler']:<18} {r['jobs']:>6} {r['rounds']:>7} {r['seconds']:>8.2f} {r['jobs_per_second']:>8}"
        )
    lines.append(f"CP-SAT round solves (first {result['cp_jobs']} jobs, limit {result['cp_time_limit']} s, 1 worker)")
    lines.append(f"{'queue':<7} {'objective':<9} {'rounds':>6} {'median s':>9} {'max s':>7} {'optimal':>8} {'plan':>5}")
    for r in result["cp_rounds"]:
        med = "-" if r["median_seconds"] is None else f"{r['median_seconds']:.3f}"
        mx = "-" if r["max_seconds"] is None else f"{r['max_seconds']:.3f}"
        lines.append(
            f"{r['queue']:<7} {r['objective']:<9} {r['rounds']:>6} {med:>9} {mx:>7} "
            f"{r['optimal']:>8} {r['found_plan']:>5}"
        )
    return "\n".join(lines)
