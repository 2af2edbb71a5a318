"""`sowsched bench TARGET`: run one benchmark, print a readable table (and JSON with --json)."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from cli.args import BenchInputError, add_output_arguments
from cli.verbs import add_verb

# Each benchmark module exposes `add_arguments(parser)`, `run(args) -> dict` and `table(result) -> str`.
BENCHMARKS: dict[str, str] = {
    "cli": "benchmarks.cli",
    "cuc": "benchmarks.cuc",
    "cuc_bound": "benchmarks.cuc_bound",
    "cuc_jobs": "benchmarks.cuc_jobs",
    "forecast": "benchmarks.forecast",
    "planning": "benchmarks.planning",
    "predict": "benchmarks.predict",
    "core": "benchmarks.core",
    "hpc": "benchmarks.hpc",
    "grpc": "benchmarks.grpc",
    "history": "benchmarks.history",
    "solvers": "benchmarks.solvers",
    "capacity": "benchmarks.capacity",
    "welfare": "cli.commands.welfare",
}


def register(sub: Any) -> None:
    parser = add_verb(sub, "bench")
    targets = parser.add_subparsers(dest="target", required=True)
    for name, module_name in BENCHMARKS.items():
        module = importlib.import_module(module_name)
        p = targets.add_parser(name, help=(module.__doc__ or "").strip().splitlines()[0])
        add_output_arguments(p)
        p.add_argument("--out", help="also write the JSON result to this file")
        module.add_arguments(p)
        p.set_defaults(func=_runner(module))


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
