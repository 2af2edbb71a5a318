"""Benchmark: one CUC test day (24 hourly decisions of Alg. 4) on a real capacity series, jobs generated."""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from cli.args import bounded_int, positive_float, probability

DEFAULT_CAPACITY = "../shared/data/azure-capacity/capacity_azure2017.csv"
TARGET_S = 1.0


def add_series_arguments(parser: argparse.ArgumentParser) -> None:
    """The capacity series and the job generator's options, shared by the CUC benchmarks on one series."""
    parser.add_argument("--capacity", default=DEFAULT_CAPACITY, help="capacity CSV (default Azure 2017)")
    parser.add_argument("--vm-type", default="t1str", help="VM type (default t1str)")
    parser.add_argument("--max-share", type=probability, help="the generator's largest job as a share of the capacity "
                        "(default: the generator's)")
    parser.add_argument("--demand-multiple", type=positive_float,
                        help="the generator's total demand over the capacity-hours (default: the generator's)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_series_arguments(parser)
    parser.add_argument("--p", type=probability, default=0.001, help="violation level p (default 0.001)")
    parser.add_argument("--repeats", type=bounded_int(1), default=3, help="days timed, each from a cold forecast cache")


def _jobs(args: argparse.Namespace) -> Any:
    from models.cuc.jobs import job_config

    return job_config(args.demand_multiple, args.max_share)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Time Alg. 4 on the first 24 test origins from a cold cache: 24 forecasts, the earlier forecasts whose errors
    the laws use, 24 GMM fits, 24 quantile constraints and 24 greedy schedules; wall and CPU time (the machine is
    shared). θ is the default θ0."""
    from models.cuc.data import load_capacity
    from models.cuc.protocol import Split
    from models.cuc.run import Evaluator, Theta, decide

    y = load_capacity(args.capacity).of(args.vm_type)
    seconds, cpu = [], []
    jobs = 0
    for repeat in range(args.repeats):
        ev = Evaluator(y, Split(len(y)), _jobs(args), seed=repeat)
        day = ev.test[:24]
        decide(ev, Theta(), args.p, day[:1])  # compile Alg. 3 (numba) and import the libraries: not timed
        ev = Evaluator(y, Split(len(y)), _jobs(args), seed=repeat)
        day = ev.test[:24]
        jobs = max(jobs, max(len(s.jobs) for s in day))
        tick, cpu_tick = time.perf_counter(), time.process_time()
        decide(ev, Theta(), args.p, day)
        seconds.append(time.perf_counter() - tick)
        cpu.append(time.process_time() - cpu_tick)
    median = statistics.median(seconds)
    return {"capacity": args.capacity, "vm_type": args.vm_type, "p": args.p, "decisions": 24,
            "max_share": _jobs(args).max_share,
            "max_jobs_per_decision": jobs, "seconds_per_day": seconds, "median_s": median,
            "cpu_seconds_per_day": cpu, "median_cpu_s": statistics.median(cpu),
            "per_decision_ms": 1000 * median / 24, "target_s": TARGET_S, "met": median <= TARGET_S,
            "jobs": "generated"}


def table(result: dict[str, Any]) -> str:
    return "\n".join([
        "| CUC test day (24 hourly decisions, jobs generated) | median (s) | CPU (s) | per decision (ms) | target (s) "
        "| met |",
        "| --- | --- | --- | --- | --- | --- |",
        f"| {result['vm_type']}, p = {result['p']}, up to {result['max_jobs_per_decision']} jobs | "
        f"{result['median_s']:.3f} | {result['median_cpu_s']:.3f} | {result['per_decision_ms']:.1f} | "
        f"{result['target_s']:.1f} | "
        f"{'yes' if result['met'] else 'no'} |",
    ])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    add_arguments(parser)
    out = run(parser.parse_args())
    print(table(out))
