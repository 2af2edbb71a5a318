"""`sowsched bench TARGET`: run one benchmark, print a readable table (and JSON with --json)."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from cli.args import BenchInputError, add_output_arguments, nonempty
from cli.verbs import add_verb

# Each benchmark module exposes `add_arguments(parser)`, `run(args) -> dict` and `table(result) -> str`; it is
# imported only when its target is parsed, so `sowsched bench X` loads X's dependencies and no other benchmark's.
BENCHMARKS: dict[str, tuple[str, str]] = {
    "cli": ("benchmarks.cli", "start-up of the client verbs: --help and a real call to a local server"),
    "cuc": ("benchmarks.cuc", "one CUC test day (24 hourly decisions of Alg. 4) on a real capacity series"),
    "cuc_bound": ("benchmarks.cuc_bound", "Util's denominator (the LP bound) and Alg. 3 against problem (1)'s optimum"),
    "cuc_jobs": ("benchmarks.cuc_jobs", "CUC's generated job size against problem (1)'s size and solve times"),
    "forecast": ("benchmarks.forecast", "forecaster fit and predict time per VM on the Azure VM CPU series"),
    "planning": ("benchmarks.planning", "scale of the COS planners (seed 000): size, status and gap in a time limit"),
    "backfill": ("benchmarks.backfill", "EASY, EASY++ and easy-learned on several traces; leave-one-trace-out"),
    "predict": ("benchmarks.predict", "prediction engine speed; easy-learned vs EASY time on KTH"),
    "core": ("benchmarks.core", "mechanism core: quote latency (fixed and forecast capacity), App. F, advance"),
    "hpc": ("benchmarks.hpc", "HPC trace study speed: EASY, conservative and CP-SAT rounds"),
    "agent": ("benchmarks.agent", "executor agent: start event to sbatch returning at 100 starts a round, CPU per job"),
    "grpc": ("benchmarks.grpc", "gRPC throughput: SoW submissions vs a trivial Echo, 1-32 clients"),
    "writer": ("benchmarks.writer", "one SubmitSoW by stage in process: servicer, engine, oracle, plan, log, encoding"),
    "scale": ("benchmarks.scale", "server submissions/s, round time, memory and snapshot size vs active jobs and C"),
    "history": ("benchmarks.history", "server memory per ended job, with and without archiving"),
    "solvers": ("benchmarks.solvers", "offline solvers: CP-SAT against the HiGHS time-indexed MILP"),
    "capacity": ("benchmarks.capacity", "quoting with a capacity model vs assuming the mean, on real capacity series"),
    "capacity_pool": ("benchmarks.capacity_pool", "bench capacity results of consecutive seed ranges as one"),
    "capacity_daily": ("benchmarks.capacity_daily", "a daily-profile capacity model vs the AR(1), held-out RMSE"),
    "welfare": ("cli.commands.welfare", "welfare sweep: the mechanism against the offline optimum and baselines"),
}


class _TargetParser(argparse.ArgumentParser):
    """A target's parser that imports its benchmark module and adds its options when it is first asked to parse
    (argparse hands a sub-command's words to its parser's parse_known_args)."""

    module_name: str | None = None

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        self.load()
        return super().parse_known_args(args, namespace)

    def load(self) -> None:
        if self.module_name is None:
            return
        module = importlib.import_module(self.module_name)
        self.module_name = None
        add_output_arguments(self)
        self.add_argument("--out", type=nonempty, help="also write the JSON result to this file")
        module.add_arguments(self)
        self.set_defaults(func=_runner(module))


def register(sub: Any) -> None:
    parser = add_verb(sub, "bench")
    targets = parser.add_subparsers(dest="target", required=True, parser_class=_TargetParser)
    for name, (module_name, summary) in BENCHMARKS.items():
        target = targets.add_parser(name, help=summary, description=summary)
        target.module_name = module_name


def _runner(module: Any) -> Any:
    def run(args: argparse.Namespace) -> int:
        problem = _unwritable(args.out, getattr(args, "out_is_dir", False)) if args.out else None
        if problem:  # refuse before the benchmark runs, not after
            print(f"sowsched bench: --out {args.out}: {problem}", file=sys.stderr)
            return 2
        try:
            result = module.run(args)
        except BenchInputError as e:
            print(f"sowsched bench {args.target}: {e}", file=sys.stderr)
            return 2
        text = json.dumps(result, indent=2, sort_keys=True)
        if args.out and not getattr(args, "out_is_dir", False):  # a benchmark may take --out as its DIR
            with open(args.out, "w", encoding="utf-8") as fh:
                fh.write(text + "\n")
        if args.json:
            print(text)
        else:
            print(module.table(result))
        sys.stdout.flush()
        return 0

    return run


def _unwritable(out: str, is_dir: bool) -> str | None:
    """Why `out` (a file, or a directory to create) cannot be written, or None."""
    path = Path(out)
    if is_dir:
        if path.exists() and not path.is_dir():
            return "exists and is not a directory"
        parent = path if path.exists() else next((a for a in path.parents if a.exists()), Path("."))
    else:
        if path.is_dir():
            return "is a directory"
        parent = path.parent if str(path.parent) else Path(".")
        if not parent.is_dir():
            return f"its directory {parent} does not exist"
    return None if os.access(parent, os.W_OK) else f"{parent} is not writable"
