"""`sowsched stochastic`: the stochastic variant's LP and bundles (`lp`), and both pricings against the optimum
(`sweep`) on workloads drawn from the prior (seed 002 Thm 5.2, docs/stochastic.md)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from cli.args import add_output_arguments, bounded_int, int_list, positive_float
from cli.verbs import add_verb

MAX_LOAD = 100.0
OFFLINE_TIME_LIMIT = 2.0


def register(sub: Any) -> None:
    p = add_verb(sub, "stochastic")
    cmds = p.add_subparsers(dest="stochastic_command", required=True)
    lp = cmds.add_parser("lp", help="solve the prior's LP, build its bundles, report sizes and prices")
    lp.add_argument("--load", type=_load, default=1.0, help="the stochastic workload's load (default 1)")
    lp.add_argument("--rounds", type=bounded_int(1, 200), default=20, help="birth rounds of the workload (default 20)")
    add_output_arguments(lp)
    lp.set_defaults(func=run_lp)
    sw = cmds.add_parser("sweep", help="both pricings over loads and seeds, each with the clairvoyant optimum")
    sw.add_argument("--loads", type=_loads, default=[0.5, 1.0, 2.0, 4.0], help="comma-separated (default 0.5,1,2,4)")
    sw.add_argument("--seeds", type=int_list(0), default=[0, 1, 2], help="comma-separated (default 0,1,2)")
    sw.add_argument("--rounds", type=bounded_int(1, 200), default=20, help="birth rounds of the workload (default 20)")
    sw.add_argument("--offline-time-limit", type=positive_float, default=OFFLINE_TIME_LIMIT, metavar="T",
                    help="CP-SAT's deterministic time for each optimum (default %(default)g)")
    add_output_arguments(sw)
    sw.set_defaults(func=run_sweep)


def _load(text: str) -> float:
    value = positive_float(text)
    if value > MAX_LOAD:
        raise argparse.ArgumentTypeError(f"{value} exceeds the bound {MAX_LOAD:g}")
    return value


def _loads(text: str) -> list[float]:
    values = [_load(part.strip()) for part in text.split(",") if part.strip()]
    if not values:
        raise argparse.ArgumentTypeError(f"{text!r} names no load")
    return values


def run_lp(args: argparse.Namespace) -> int:
    from models.stochastic.pricing import stochastic_pricing
    from models.workloads import stochastic_workload

    workload = stochastic_workload(seed=0, load=args.load, rounds=args.rounds)
    assert workload.prior is not None
    report = {"load": args.load, "rounds": args.rounds, "jobs": len(workload.prior.jobs),
              "support": workload.prior.support_size, **stochastic_pricing(workload.prior, workload.platform).report()}
    if args.json:
        print(json.dumps(report, sort_keys=True))
    else:
        lp, alloc, p = report["lp"], report["allocation"], report["prices"]
        print(f"prior: {report['jobs']} jobs, {report['support']} SoWs (load {args.load:g}, {args.rounds} rounds)\n"
              f"LP: {lp['rows']} rows x {lp['cols']} cols, {lp['nonzeros']} nonzeros; value {lp['value']:.2f} at "
              f"C' = {lp['capacity']:.2f}; {lp['support']} outcomes with z > 0\n"
              f"unit allocation: {alloc['bundles']} bundles, {alloc['supply_units']} units a round; keeps "
              f"{alloc['value']:.2f} ({100 * alloc['kept']:.1f} %)\n"
              f"unit prices p_k: {p['min']:.2f} to {p['max']:.2f} (median {p['median']:.2f})")
    return 0


def run_sweep(args: argparse.Namespace) -> int:
    from models.stochastic.evaluation import sweep, table

    result = sweep(args.loads, args.seeds, args.offline_time_limit, args.rounds)
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        print(table(result))
    sys.stdout.flush()
    return 0
