"""Welfare sweep: the mechanism against the offline optimum and two baselines, per load and seed, with plots."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cli.args import bounded_int, nonempty, positive_float
from models.offline.cpsat import BOUND_MODELS, STRATEGIES
from models.offline.report import (
    OFFLINE_SOLVERS,
    OfflineConfig,
    calibration_bins,
    evaluate,
    summarize,
    summary_table,
)
from models.simulation import Workload
from models.sweep import BACKENDS, run_tasks
from models.workloads import (
    MAX_LOAD,
    WORKLOADS,
    make_workload,
    parse_workload,
    parse_workload_file,
    read_workload_document,
)

DEFAULT_LOADS = "0.5,1,1.5,2"  # named workloads only
FILE_LOAD = 1.0  # the load column of a W.json file's rows: its own jobs, not scaled


@dataclass(frozen=True)
class SweepSource:
    """What the sweep runs: a named workload at each load, or one W.json file's document at FILE_LOAD."""

    workload: str  # the named workload, or the file's name
    loads: tuple[float, ...]
    path: str | None = None  # the W.json path, as given
    document: Any = None  # the file's parsed JSON, shipped in every task (a Ray worker may not see the path)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments of `sowsched bench welfare`; `--out` (added by `bench`) names a directory here."""
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--workload", choices=WORKLOADS, help="synthetic workload (models/workloads.py)")
    src.add_argument("--workload-file", type=nonempty, metavar="W.json",
                     help="a workload file (schema: docs/workloads-and-sows.md): its jobs and realized outcomes, "
                          "at load 1")
    p.add_argument("--loads", default=None,
                   help=f"comma-separated load factors of a named workload (default {DEFAULT_LOADS}); "
                        "not with --workload-file")
    p.add_argument("--seeds", type=bounded_int(1), default=3,
                   help="seeds 0..N-1 per load (a file: each re-seeds the platform's sampling)")
    p.add_argument("--backend", choices=BACKENDS, default="local", help="local process pool or Ray tasks")
    p.add_argument("--address", type=nonempty, default=None, help="Ray cluster address (default: start a local Ray)")
    p.add_argument("--processes", type=bounded_int(1), default=None, help="local pool size (default: all cores)")
    p.add_argument("--ray-cpus", type=bounded_int(1), default=None, help="CPUs of a local Ray (default: all)")
    p.add_argument("--solver", choices=OFFLINE_SOLVERS, default="cpsat",
                   help="offline solver (both: HiGHS, then CP-SAT unless HiGHS proved optimality; the better "
                        "schedule under the lower bound; --time-limit applies to each)")
    p.add_argument("--strategy", choices=STRATEGIES, default="two_phase", help="CP-SAT model strategy")
    p.add_argument("--bound-model", choices=BOUND_MODELS, default="indexed",
                   help="CP-SAT two_phase: the second model (indexed: the time-indexed model alone; channel: "
                        "intervals plus the time-indexed channel)")
    p.add_argument("--time-limit", type=positive_float, default=10.0,
                   help="offline limit per run: CP-SAT deterministic time (reproducible), MILP seconds")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.set_defaults(out_is_dir=True)
    for action in p._actions:  # `bench` adds --out as a JSON file; here it names the report directory
        if action.dest == "out":
            action.help = "directory for the PNG plots, runs.json and summary.json"
            action.metavar = "DIR"


def parse_loads(text: str) -> list[float]:
    """Comma-separated loads, each in (0, MAX_LOAD] (`models.workloads.scale_rate`'s bound, checked here before
    any task runs)."""
    loads = []
    for part in text.split(","):
        try:
            value = float(part)
        except ValueError as exc:
            raise ValueError(f"--loads entry {part!r} is not a number") from exc
        if not 0 < value <= MAX_LOAD:  # nan too
            raise ValueError(f"--loads entry {value} is outside (0, {MAX_LOAD:g}]")
        loads.append(value)
    return loads


def sweep_source(args: argparse.Namespace) -> SweepSource:
    """The named workload with its loads, or the W.json file read and validated once, before any task runs."""
    if args.workload_file is None:
        return SweepSource(args.workload, tuple(parse_loads(DEFAULT_LOADS if args.loads is None else args.loads)))
    if args.loads is not None:
        raise ValueError(f"--loads {args.loads} does not apply with --workload-file {args.workload_file}: "
                         "a file's jobs and realized outcomes are fixed (its rows use load 1)")
    path = Path(args.workload_file)
    document = read_workload_document(path)
    parse_workload_file(path, document, name=path.name)  # a bad file fails here, naming field, value, bound, line
    return SweepSource(path.name, (FILE_LOAD,), path=str(path), document=document)


def task_workload(task: dict[str, Any]) -> Workload:
    """A task's workload: a file's document re-seeded with the task's seed, or the named workload at its load."""
    if task.get("document") is not None:
        return parse_workload(task["document"], name=task["workload"], seed=task["seed"])
    return make_workload(task["workload"], seed=task["seed"], load=task["load"])


def welfare_task(task: dict[str, Any]) -> dict[str, Any]:
    """One run: build the workload for (source, seed, load), simulate, solve offline, run the baselines."""
    config = OfflineConfig(solver=task["solver"], time_limit=task["time_limit"],
                           strategy=task.get("strategy", "two_phase"), bound_model=task.get("bound_model", "indexed"))
    return evaluate(task_workload(task), task["load"], task["seed"], config)


def tasks_for(args: argparse.Namespace, source: SweepSource) -> list[dict[str, Any]]:
    return [{"workload": source.workload, "document": source.document, "load": load, "seed": seed,
             "solver": args.solver, "strategy": args.strategy, "bound_model": args.bound_model,
             "time_limit": args.time_limit}
            for load in source.loads for seed in range(args.seeds)]


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run every (load, seed) on the chosen backend; write runs.json, summary.json and the PNGs into --out.

    Bad input (loads, a missing or malformed W.json, --loads with --workload-file) is refused before any task:
    the message on stderr and exit status 2.
    """
    try:
        source = sweep_source(args)
    except (OSError, ValueError) as exc:
        print(f"sowsched bench welfare: {exc}", file=sys.stderr)
        raise SystemExit(2) from exc
    tasks = tasks_for(args, source)
    runs = run_tasks(welfare_task, tasks, backend=args.backend, processes=args.processes, address=args.address,
                     ray_cpus=args.ray_cpus, progress=not args.no_progress, desc=f"welfare {source.workload}")
    summary = summarize(runs)
    pairs = [p for r in runs for p in r["calibration"]]
    calibration = {"jobs": len(pairs), "announced": calibration_bins(pairs, 0), "raw": calibration_bins(pairs, 1)}
    result: dict[str, Any] = {
        "benchmark": "welfare", "workload": source.workload, "workload_file": source.path, "backend": args.backend,
        "solver": args.solver, "strategy": args.strategy, "bound_model": args.bound_model,
        "time_limit": args.time_limit, "seeds": args.seeds, "summary": summary, "calibration": calibration,
        "runs": [{k: v for k, v in r.items() if k not in ("series", "calibration")} for r in runs],
        "files": [],
    }
    if args.out:
        from models.welfare_plots import write_plots  # matplotlib: loaded only when plots are written

        out = Path(args.out)
        result["files"] = write_plots(runs, summary, calibration, out)
        (out / "runs.json").write_text(json.dumps(runs, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        (out / "summary.json").write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        result["files"] += [str(out / "runs.json"), str(out / "summary.json")]
    return result


def _solver_settings(result: dict[str, Any]) -> str:
    """CP-SAT's strategy, bound model and deterministic limit; HiGHS has only a wall-clock limit."""
    cpsat = f"{result['strategy']}, bound model {result['bound_model']}, limit {result['time_limit']:g}"
    if result["solver"] == "milp":
        return f"HiGHS, limit {result['time_limit']:g} s wall clock"
    if result["solver"] == "both":
        return f"HiGHS, limit {result['time_limit']:g} s wall clock, then CP-SAT {cpsat}"
    return cpsat


def table(result: dict[str, Any]) -> str:
    if result.get("workload_file"):
        source = (f"workload file {result['workload_file']} (its own jobs and realized outcomes, shown as load 1), "
                  f"{result['seeds']} seed(s) of the platform's sampling")
    else:
        source = f"workload {result['workload']}, {result['seeds']} seed(s) per load"
    lines = [f"welfare sweep: {source}, offline solver {result['solver']} ({_solver_settings(result)}), "
             f"backend {result['backend']}",
             summary_table(result["summary"])]
    if result["files"]:
        lines.append("files: " + ", ".join(result["files"]))
    return "\n".join(lines)
