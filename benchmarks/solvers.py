"""Offline solvers: CP-SAT against the HiGHS time-indexed MILP on the same hindsight instances, side by side."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from cli.args import bounded_int, int_list, number, positive_float
from models.offline.cpsat import BOUND_MODELS, STRATEGIES, CpSatParams, solve_cpsat
from models.offline.greedy import density_greedy
from models.offline.hindsight import HindsightInstance, OfflineResult
from models.offline.instances import InstanceShape, random_instance
from models.offline.milp import MilpParams, lp_bound, solve_milp
from models.offline.rcfix import fix, lp_prices, split_jobs

DEFAULT_TIME_LIMIT = 20.0
DEFAULT_WORKERS = 8
DEFAULT_PLAIN_SHARE = 0.7


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sizes", type=int_list(1), default=[50, 100, 200, 400], help="jobs per instance, comma separated")
    p.add_argument("--time-limit", type=positive_float, default=DEFAULT_TIME_LIMIT,
                   help=f"seconds per solver and instance (default {DEFAULT_TIME_LIMIT:g}; the issue's target "
                        "is stated for 60)")
    p.add_argument("--workers", type=bounded_int(1), default=DEFAULT_WORKERS,
                   help=f"CP-SAT workers (default {DEFAULT_WORKERS}: more than the cores, for CP-SAT's wider "
                        "portfolio incl. its max_lp bound worker; they share the cores)")
    p.add_argument("--strategy", choices=STRATEGIES, default="two_phase", help="CP-SAT model strategy")
    p.add_argument("--plain-share", type=share(0.0, strict_low=True), default=DEFAULT_PLAIN_SHARE,
                   help=f"two_phase: share of the limit for the plain model (default {DEFAULT_PLAIN_SHARE:g})")
    p.add_argument("--bound-model", choices=BOUND_MODELS, default="indexed",
                   help="two_phase: the model of the second phase (channel: intervals plus the time-indexed "
                        "channel; indexed: the time-indexed model alone)")
    p.add_argument("--left-shift", action="store_true",
                   help="add the left-shift dominance to CP-SAT's time-indexed channel")
    p.add_argument("--lns-share", type=share(0.0, strict_low=False), default=0.0,
                   help="two_phase: share of the limit for window LNS after the plain phase (default 0: none)")
    p.add_argument("--rc-fixing", action="store_true",
                   help="two_phase: drop the time-indexed starts that reduced-cost fixing at the plain phase's "
                        "value rules out, before the second phase")
    p.add_argument("--hint", choices=("greedy", "none"), default="greedy",
                   help="warm-start both solvers with the same density-greedy schedule, or with nothing")
    p.add_argument("--threads", type=bounded_int(1), default=1, help="HiGHS threads")
    p.add_argument("--capacity", type=bounded_int(16), default=64,
                   help="nodes C of the instances (at least the largest concurrency, 16)")
    p.add_argument("--horizon", type=bounded_int(1), default=200, help="rounds over which jobs are born")
    p.add_argument("--seed", type=bounded_int(0), default=0, help="seed of the random instances")


def share(low: float, strict_low: bool) -> Any:
    """An argparse type: a share of the time limit, above (or at) `low` and below 1."""
    def parse(text: str) -> float:
        value = number(text)
        if not (value > low if strict_low else value >= low) or not value < 1:
            raise argparse.ArgumentTypeError(f"{value} is not a share of the limit: it must lie in "
                                             f"{'(' if strict_low else '['}{low:g}, 1)")
        return value
    return parse


def instance_for(n_jobs: int, seed: int, capacity: int, horizon: int) -> HindsightInstance:
    """The benchmark instance of `n_jobs` jobs (InstanceShape defaults, seeded by seed and size)."""
    return random_instance(n_jobs, seed * 1_000_003 + n_jobs, InstanceShape(capacity=capacity, horizon=horizon))


def offered_load(instance: HindsightInstance) -> float:
    """Total node-rounds the jobs ask for over C times the horizon."""
    demand = sum(j.concurrency * j.duration for j in instance.jobs)
    return demand / max(1, instance.capacity * instance.horizon)


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.lns_share > 0 and args.plain_share + args.lns_share >= 1:
        print(f"sowsched bench solvers: --plain-share {args.plain_share:g} + --lns-share {args.lns_share:g} = "
              f"{args.plain_share + args.lns_share:g} leaves no time for the bound model: it must be below 1",
              file=sys.stderr)
        raise SystemExit(2)
    sizes = args.sizes if isinstance(args.sizes, list) else int_list(1)(str(args.sizes))
    rows = [_compare(instance_for(n, args.seed, args.capacity, args.horizon), args) for n in sizes]
    return {"benchmark": "solvers", "time_limit": args.time_limit, "cpsat_workers": args.workers,
            "cpsat_strategy": args.strategy, "plain_share": args.plain_share, "left_shift": args.left_shift,
            "bound_model": args.bound_model, "rc_fixing": args.rc_fixing, "lns_share": args.lns_share,
            "hint": args.hint,
            "highs_threads": args.threads, "capacity": args.capacity, "seed": args.seed,
            "note": (f"time limit {args.time_limit:g} s per solver and instance"
                     + ("" if args.time_limit >= 60 else "; the target (200 jobs optimal within 60 s) needs "
                        "--time-limit 60")),
            "instances": rows}


def _compare(instance: HindsightInstance, args: argparse.Namespace) -> dict[str, Any]:
    hint = density_greedy(instance) if args.hint == "greedy" else None
    params = CpSatParams(args.time_limit, args.workers, hint=hint, strategy=args.strategy,
                         plain_share=args.plain_share, left_shift=args.left_shift, bound_model=args.bound_model,
                         rc_fixing=args.rc_fixing, lns_share=args.lns_share)
    cpsat, cpsat_s = _timed(lambda: solve_cpsat(instance, params))
    milp, milp_s = _timed(lambda: solve_milp(instance, MilpParams(args.time_limit, args.threads, hint=hint)))
    lp = lp_bound(instance, args.time_limit, args.threads)
    prices = lp_prices(instance, args.time_limit, args.threads)
    best = max(cpsat.value, milp.value)
    fixing = fix(prices, best)
    whole, spread = split_jobs(prices)
    return {
        "jobs": len(instance.jobs), "horizon": instance.horizon, "load": round(offered_load(instance), 3),
        "cpsat_s": round(cpsat_s, 3), "cpsat_status": cpsat.status, "cpsat_value": cpsat.value,
        "cpsat_bound": cpsat.bound, "cpsat_gap": cpsat.gap,
        "milp_s": round(milp_s, 3), "milp_status": milp.status, "milp_value": milp.value,
        "milp_bound": milp.bound, "milp_gap": milp.gap,
        "lp_bound": lp.bound, "lp_s": round(lp.solve_seconds, 3),
        # Reduced-cost fixing at the best schedule of this row (the most it could fix), and the LP's shape.
        "rc_fixable": fixing.fixed, "rc_columns": fixing.columns, "rc_max": round(fixing.max_reduced_cost, 2),
        "rc_room": round(fixing.bound - best, 2), "lp_whole_jobs": whole, "lp_spread_jobs": spread,
        "hint_value": instance.schedule_value(hint) if hint is not None else None,
        "milp_over_cpsat": round(milp_s / cpsat_s, 2) if cpsat_s > 0 else None,
    }


def _timed(solve: Any) -> tuple[OfflineResult, float]:
    """Wall time of build + solve + extract (what a caller waits for)."""
    t0 = time.perf_counter()
    result = solve()
    return result, time.perf_counter() - t0


def table(result: dict[str, Any]) -> str:
    head = (
        f"{'jobs':>5} {'load':>5} | {'cpsat_s':>8} {'status':>8} {'value':>10} {'gap':>7} | "
        f"{'milp_s':>8} {'status':>8} {'value':>10} {'gap':>7} | "
        f"{'LP bound':>10} {'milp/cpsat':>10} {'hint':>10} {'rc fixable':>12}"
    )
    lines = [f"offline solvers: {result['note']}; hint {result['hint']}; CP-SAT {result['cpsat_strategy']} "
             f"(plain share {result['plain_share']:g}, then {result['bound_model']}"
             f"{', left shift' if result['left_shift'] else ''}"
             f"{', reduced-cost fixing' if result['rc_fixing'] else ''}"
             f"{', window LNS share ' + format(result['lns_share'], 'g') if result['lns_share'] else ''}) with "
             f"{result['cpsat_workers']} workers, "
             f"HiGHS {result['highs_threads']} thread(s)", head, "-" * len(head)]
    for r in result["instances"]:
        lines.append(
            f"{r['jobs']:>5} {r['load']:>5.2f} | {r['cpsat_s']:>8.2f} {r['cpsat_status']:>8} {r['cpsat_value']:>10.2f} "
            f"{r['cpsat_gap']:>7.2%} | {r['milp_s']:>8.2f} {r['milp_status']:>8} {r['milp_value']:>10.2f} "
            f"{r['milp_gap']:>7.2%} | {r['lp_bound']:>10.2f} {r['milp_over_cpsat'] or 0:>10.2f} "
            f"{r['hint_value'] if r['hint_value'] is not None else float('nan'):>10.2f} "
            f"{str(r['rc_fixable']) + '/' + str(r['rc_columns']):>12}")
    return "\n".join(lines)
