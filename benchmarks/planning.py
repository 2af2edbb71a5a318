"""Scale of the COS planners (seed 000, Sec. 7): size, status and gap each reaches within a wall-time limit."""

from __future__ import annotations

import argparse
import time
from typing import Any

from cli.args import bounded_int, positive_float, probability
from models.planning.methods import plan
from models.planning.names import METHODS
from models.planning.plan import SolveParams
from models.planning.synthetic import generate

DEFAULT_CASES = ("cospis:50,cospis:100,cospis:200,cospis:400,det-p50:100,det-p50:200,det-p50:400,"
                 "milp-p50:30,milp-p50:50,milp-p50:100,milp-indexed:50,milp-indexed:100,milp-indexed:200")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cases", type=_cases, default=DEFAULT_CASES, help="comma-separated method:jobs pairs")
    parser.add_argument("--samples", type=bounded_int(1), default=100,
                        help="K pair samples for cospis (100, the seed's claim)")
    parser.add_argument("--alpha", type=probability, default=0.4, help="tolerance for cospis (0.4)")
    parser.add_argument("--time-limit", type=positive_float, default=60.0, help="wall seconds per solve (60)")
    parser.add_argument("--workers", type=bounded_int(1), default=2,
                        help="CP-SAT workers (2; HiGHS runs on one thread)")
    parser.add_argument("--seed", type=bounded_int(0), default=0, help="synthetic problem seed (0)")


def _cases(text: str) -> list[tuple[str, int]]:
    out = []
    for part in text.split(","):
        method, _, n = part.partition(":")
        if method not in METHODS or not n.isdigit() or int(n) < 1:
            raise argparse.ArgumentTypeError(f"entry {part!r} is not method:jobs with a method of {', '.join(METHODS)}")
        out.append((method, int(n)))
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    params = SolveParams(time_limit=args.time_limit, workers=args.workers, deterministic=False)
    rows = []
    for method, n in args.cases:
        problem = generate(n, args.seed).problem
        t0 = time.perf_counter()
        result = plan(problem, method, params, args.samples, args.alpha, args.seed)
        rows.append({"method": method, "jobs": n, "samples": args.samples if method == "cospis" else None,
                     "status": result.status, "peak": result.peak_estimated, "bound": result.bound,
                     "gap": result.gap, "solve_s": result.solve_s, "wall_s": time.perf_counter() - t0})
    return {"time_limit": args.time_limit, "workers": args.workers, "alpha": args.alpha, "seed": args.seed,
            "rows": rows}


def table(result: dict[str, Any]) -> str:
    lines = [f"time limit {result['time_limit']:g} s wall, {result['workers']} workers, seed {result['seed']}", "",
             "| method | jobs | K | status | peak p | bound | gap | solver s | wall s (build + solve) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        k = r["samples"] if r["samples"] is not None else "-"
        lines.append(f"| {r['method']} | {r['jobs']} | {k} | {r['status']} | {r['peak']:g} | {r['bound']:g} | "
                     f"{100 * r['gap']:.1f} % | {r['solve_s']:.1f} | {r['wall_s']:.1f} |")
    return "\n".join(lines)


def main() -> None:
    import json
    import sys

    parser = argparse.ArgumentParser(description=__doc__)
    add_arguments(parser)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    try:
        result = run(args)
    except ValueError as exc:
        print(f"benchmarks.planning: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    print(json.dumps(result, sort_keys=True) if args.json else table(result))


if __name__ == "__main__":
    main()
