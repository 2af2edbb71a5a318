"""`sowsched calibrate`: does the quoted (raw) failure probability match how often jobs really fail?"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from typing import Any

from cli.args import add_output_arguments, bounded_int, nonempty, positive_float, usage_message
from cli.commands.simulate import MAX_SEED, add_capacity_arguments, apply_capacity, capacity_options
from cli.verbs import add_verb
from mechanism.failure_exact import OracleTooLarge
from models.calibration import Calibration, calibrate
from models.simulation import run_simulation
from models.workloads import WORKLOADS, load_workload_file, make_workload


def register(sub: Any) -> None:
    p = add_verb(sub, "calibrate")
    p.add_argument("--workload", choices=WORKLOADS, default="overload", help="named workload (default %(default)s)")
    p.add_argument("--workload-file", type=nonempty, metavar="W.json",
                   help="a workload file instead (its realized outcomes are fixed; a seed reseeds the oracle only)")
    p.add_argument("--seeds", type=bounded_int(1), default=50,
                   help="independent runs (seeds first-seed .. first-seed+N-1)")
    p.add_argument("--first-seed", type=bounded_int(0), default=0, help="seed of the first run")
    p.add_argument("--load", type=positive_float, default=1.0, help="scale the workload's job rate")
    p.add_argument("--rounds", type=bounded_int(1), default=20, help="rounds of jobs per run (overload and pipelines)")
    p.add_argument("--oracle", choices=("mc", "exact"), default="mc", help="failure oracle")
    add_capacity_arguments(p)
    p.add_argument("--capacity-stride", type=bounded_int(0), default=None, metavar="ROWS",
                   help="run k starts at row --capacity-start + k * ROWS of the series (default 0: every run sees "
                        "the same rows)")
    add_output_arguments(p)
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr (shown on a terminal)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    last = args.first_seed + args.seeds - 1
    if last > MAX_SEED:  # refused before any run
        print(f"sowsched calibrate: --first-seed {args.first_seed} with --seeds {args.seeds} reaches seed {last}, "
              f"beyond the bound {MAX_SEED}", file=sys.stderr)
        return 2
    try:
        capacity_options(args)
        apply_capacity(args, make_workload(args.workload, seed=args.first_seed, load=args.load))  # checks the file
    except ValueError as exc:
        print(f"sowsched calibrate: {usage_message(exc)}", file=sys.stderr)
        return 2
    extra = {} if args.workload == "toy" else {"rounds": args.rounds}
    seeds = tqdm(range(args.first_seed, args.first_seed + args.seeds), desc="calibrate", unit="run", file=sys.stderr,
                 disable=None if not args.no_progress else True)  # None: only on a terminal
    if args.workload_file is not None:
        try:
            load_workload_file(args.workload_file)
        except (OSError, ValueError) as exc:
            print(f"sowsched calibrate: --workload-file: {exc}", file=sys.stderr)
            return 2
        results = (run_simulation(apply_capacity(args, load_workload_file(args.workload_file, seed=s),
                                                 run=s - args.first_seed), oracle=args.oracle) for s in seeds)
    else:
        results = (run_simulation(apply_capacity(args, make_workload(args.workload, seed=s, load=args.load, **extra),
                                                 run=s - args.first_seed), oracle=args.oracle) for s in seeds)
    try:
        cal = calibrate(results)
    except OracleTooLarge as exc:  # --oracle exact on too many earlier jobs' joint outcomes
        print(f"sowsched calibrate: {exc}", file=sys.stderr)
        return 1
    if cal.jobs == 0:
        print(f"sowsched calibrate: the {args.seeds} runs scheduled no job: nothing to calibrate", file=sys.stderr)
        return 1
    print(as_json(cal) if args.json else table(cal))
    return 0


def as_json(c: Calibration) -> str:
    """One JSON object; a statistic that is undefined (the standard error of one run) is null, not NaN."""
    data = {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in dataclasses.asdict(c).items()}
    return json.dumps(data, sort_keys=True, allow_nan=False)


def table(c: Calibration) -> str:
    left_out = f" ({c.runs_without_jobs} more scheduled no job)" if c.runs_without_jobs else ""
    lines = [
        f"{c.runs} runs{left_out}, {c.jobs} scheduled jobs: "
        f"mean raw estimate {c.estimate:.3f}, realized {c.realized:.3f}; "
        f"per-run realized - estimate {c.gap:+.4f} ("
        + ("standard error undefined for one run)" if math.isnan(c.gap_se) else f"standard error {c.gap_se:.4f})"),
        f"{'raw estimate bin':<16} {'jobs':>6} {'mean estimate':>14} {'realized':>9}",
    ]
    # an estimate of exactly 1 is counted in the last bin, so that bin is closed
    lines += [f"{f'[{b.low:.2f}, {b.high:.2f}' + (']' if b.high >= 1.0 else ')'):<16} {b.jobs:>6} "
              f"{b.estimate:>14.3f} {b.realized:>9.3f}" for b in c.bins]
    return "\n".join(lines)
