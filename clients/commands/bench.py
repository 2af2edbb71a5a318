"""`sowsched bench TARGET`: run one benchmark, print a readable table (and JSON with --json)."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import Any

# Each benchmark module exposes `add_arguments(parser)`, `run(args) -> dict` and `table(result) -> str`.
BENCHMARKS: dict[str, str] = {
    "core": "mechanism.bench.core",
    "hpc": "clients.bench_hpc",
    "grpc": "server.bench",
    "solvers": "mechanism.bench.solvers",
    "welfare": "clients.commands.welfare",
}


def register(sub: Any) -> None:
    parser = sub.add_parser("bench", help="run a benchmark (numbers, not assertions)")
    targets = parser.add_subparsers(dest="target", required=True)
    for name, module_name in BENCHMARKS.items():
        module = importlib.import_module(module_name)
        p = targets.add_parser(name, help=(module.__doc__ or "").strip().splitlines()[0])
        p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
        p.add_argument("--out", help="also write the JSON result to this file")
        module.add_arguments(p)
        p.set_defaults(func=_runner(module))


def _runner(module: Any) -> Any:
    def run(args: argparse.Namespace) -> int:
        result = module.run(args)
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
