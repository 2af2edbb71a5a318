"""Benchmark: how far Util's denominator (the LP bound of u*) and Alg. 3 lie from the integer optimum of problem (1)."""

from __future__ import annotations

import argparse
from typing import Any

from benchmarks.cuc import add_series_arguments
from cli.args import bounded_int, positive_float


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_series_arguments(parser)
    parser.add_argument("--every", type=bounded_int(1), default=12,
                        help="every k-th test origin (default 12: 3 samples)")
    parser.add_argument("--time-limit", type=positive_float, default=20.0,
                        help="HiGHS MILP seconds per sample (default 20)")


def _jobs(args: argparse.Namespace) -> Any:
    from models.cuc.jobs import job_config

    return job_config(args.demand_multiple, args.max_share)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Per test sample under the TRUE capacity: the LP bound, HiGHS's MILP incumbent (the rounded LP's schedule as
    MIP start) and dual bound after the time limit, the rounded LP (`solve_rounded`), and Alg. 3 with line 1 by
    c_i/d_i (the seed's) and by c_i d_i, as ratios to the LP bound."""
    from models.cuc.data import load_capacity
    from models.cuc.exact import solve_exact
    from models.cuc.greedy import greedy_schedule
    from models.cuc.problem import utility
    from models.cuc.protocol import Split, make_samples
    from models.cuc.rounding import solve_rounded

    y = load_capacity(args.capacity).of(args.vm_type)
    split = Split(len(y))
    rows = []
    for s in make_samples(y, split.test_origins, split.T, _jobs(args), 0)[::args.every]:
        rounded = solve_rounded(s.jobs, s.truth)
        lp = rounded.bound  # the LP on job classes: the per-job relaxation's value (tests/models/cuc/test_exact.py)
        milp = solve_exact(s.jobs, s.truth, time_limit=args.time_limit, hint=rounded.start, mip_rel_gap=1e-4)
        # what is proven: HiGHS's dual bound, or the LP's where the time limit stopped HiGHS before its root LP
        # (its dual bound is then the trivial one, far above)
        dual = min(milp.bound, lp)
        rows.append({"origin": s.origin, "jobs": len(s.jobs), "lp_bound": lp,
                     "milp_over_lp": milp.utility / lp, "dual_over_lp": dual / lp, "optimal": milp.optimal,
                     "rounded_over_lp": rounded.utility / lp,
                     "greedy_ratio_over_lp": utility(s.jobs, greedy_schedule(s.jobs, s.truth, "ratio")) / lp,
                     "greedy_value_over_lp": utility(s.jobs, greedy_schedule(s.jobs, s.truth, "value")) / lp})
    return {"capacity": args.capacity, "vm_type": args.vm_type, "time_limit_s": args.time_limit, "rows": rows,
            "max_share": _jobs(args).max_share,
            "jobs": "generated"}


def table(result: dict[str, Any]) -> str:
    lines = [f"Problem (1) under the true capacity, {result['vm_type']}, jobs generated; ratios to the LP bound",
             "", "| origin | jobs | MILP incumbent | MILP dual | optimal | rounded LP | Alg. 3 (c/d) | Alg. 3 (c d) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in result["rows"]:
        lines.append(f"| {r['origin']} | {r['jobs']} | {r['milp_over_lp']:.4f} | {r['dual_over_lp']:.4f} | "
                     f"{'yes' if r['optimal'] else 'no'} | {r['rounded_over_lp']:.4f} | "
                     f"{r['greedy_ratio_over_lp']:.4f} | {r['greedy_value_over_lp']:.4f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    add_arguments(parser)
    print(table(run(parser.parse_args())))
