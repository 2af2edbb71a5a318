"""`sowsched calibrate`: does the announced failure probability match how often jobs really fail?"""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from clients.workloads import WORKLOADS, make_workload
from mechanism.calibration import Calibration, calibrate
from mechanism.simulation import run_simulation


def register(sub: Any) -> None:
    p = sub.add_parser("calibrate", help="announced failure estimates against realized failures over many seeds")
    p.add_argument("--workload", choices=WORKLOADS, default="overload")
    p.add_argument("--seeds", type=int, default=50, help="independent runs (seeds first-seed .. first-seed+N-1)")
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--load", type=float, default=1.0)
    p.add_argument("--rounds", type=int, default=20, help="rounds of jobs per run (overload and pipelines)")
    p.add_argument("--oracle", choices=("mc", "exact"), default="mc")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    extra = {} if args.workload == "toy" else {"rounds": args.rounds}
    results = (run_simulation(make_workload(args.workload, seed=s, load=args.load, **extra), oracle=args.oracle)
               for s in range(args.first_seed, args.first_seed + args.seeds))
    cal = calibrate(results)
    print(json.dumps(dataclasses.asdict(cal), sort_keys=True) if args.json else table(cal))
    return 0


def table(c: Calibration) -> str:
    lines = [f"{c.runs} runs, {c.jobs} scheduled jobs: mean estimate {c.estimate:.3f}, realized {c.realized:.3f}; "
             f"per-run realized - estimate {c.gap:+.4f} (standard error {c.gap_se:.4f})",
             f"{'estimate bin':>14} {'jobs':>6} {'mean estimate':>14} {'realized':>9}"]
    lines += [f"[{b.low:.2f}, {b.high:.2f}) {b.jobs:>6} {b.estimate:>14.3f} {b.realized:>9.3f}" for b in c.bins]
    return "\n".join(lines)
