"""Benchmark: CUC's generated job size (max_share) against problem (1)'s size, the LP bound's and Alg. 3's time."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from cli.args import BenchInputError, bounded_int, comma_list, nonempty, number

DEFAULT_FILES = ("../shared/data/azure-capacity/capacity_azure2017.csv",
                 "../shared/data/azure-capacity/capacity_azure2019.csv")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--capacity", action="append", help="capacity CSV, repeatable (default: Azure 2017 and 2019)")
    parser.add_argument("--vm-types", type=nonempty, help="comma-separated VM types (default: every type of each file)")
    parser.add_argument("--shares", type=comma_list(_share), default=[0.05, 0.01, 0.005, 0.002],
                        help="max_share values (default 0.05,...,0.002)")
    parser.add_argument("--demand-multiples", type=comma_list(_positive), default=[5.0],
                        help="the generator's total demand over the capacity-hours, comma-separated (default 5, the "
                        "generator's)")
    parser.add_argument("--scale", type=_positive, default=1.0,
                        help="multiply every series by it (the paper's: 0.06 x 2019 m3str, 0.02 x 2017 m2str)")
    parser.add_argument("--hours", type=bounded_int(1),
                        help="use the series' first N hours (264 with --train-hours 72: the hold-out's test "
                             "origins; default: the whole series, the study's test origins)")
    parser.add_argument("--train-hours", type=bounded_int(1), default=144, help="training origins (default 144)")
    parser.add_argument("--per-job-samples", type=bounded_int(1), default=3,
                        help="samples of the first type on which the per-job relaxation is timed (default 3)")


def _share(text: str) -> float:
    """An argparse type: a max_share value in (0, 1]."""
    value = number(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{value} must lie in (0, 1]")
    return value


def _positive(text: str) -> float:
    """An argparse type: a finite number > 0."""
    value = number(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{value} must be > 0")
    return value


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Per (file, max_share), over the test samples of every VM type under the TRUE capacity: jobs and X_it per
    sample, seconds of the LP bound by classes (`lp_bound`) and per job (`solve_exact(relax=True)`, on a few
    samples), milliseconds of Alg. 3, Alg. 3's share of the LP bound (line 1 by c_i/d_i and by c_i d_i), the rounded
    LP's share (`solve_rounded`, the X+HiGHS baselines' solver; mean and least) and seconds, and the largest
    certified gap 24 max_i c_i d_i / LP (u* >= LP - 24 max_i c_i d_i, docs/cuc.md "Util's denominator")."""
    import numpy as np

    from models.cuc.data import load_capacity
    from models.cuc.exact import lp_bound, solve_exact
    from models.cuc.greedy import greedy_schedule
    from models.cuc.jobs import JobConfig
    from models.cuc.problem import utility
    from models.cuc.protocol import Split, make_samples
    from models.cuc.rounding import solve_rounded

    rows = []
    types = [t for t in args.vm_types.split(",") if t] if args.vm_types else None
    for path in args.capacity or list(DEFAULT_FILES):
        cap = load_capacity(path)
        for multiple, share in ((m, s) for m in args.demand_multiples for s in args.shares):
            acc: dict[str, list[float]] = {k: [] for k in ("jobs", "cols", "lp_s", "greedy_ms", "ratio", "value",
                                                            "gap", "lp_job_s", "rounded", "rounded_s", "lp_fill",
                                                            "rounded_fill")}
            for k, vm in enumerate(types or cap.vm_types):
                y = args.scale * (cap.of(vm)[:args.hours] if args.hours else cap.of(vm))
                try:
                    split = Split(len(y), train_hours=args.train_hours)
                except ValueError as e:  # too few hours for the split: a bad --hours or --train-hours
                    raise BenchInputError(f"{path} {vm} with --hours {args.hours} --train-hours "
                                          f"{args.train_hours}: {e}") from None
                samples = make_samples(y, split.test_origins, split.T, JobConfig(multiple, share), 0)
                greedy_schedule(samples[0].jobs, samples[0].truth, "ratio")  # numba compile: not timed
                for j, s in enumerate(samples):
                    tick = time.perf_counter()
                    lp = lp_bound(s.jobs, s.truth)
                    acc["lp_s"].append(time.perf_counter() - tick)
                    tick = time.perf_counter()
                    start = greedy_schedule(s.jobs, s.truth, "ratio")
                    acc["greedy_ms"].append(1000 * (time.perf_counter() - tick))
                    acc["jobs"].append(len(s.jobs))
                    acc["cols"].append(float(np.maximum(s.jobs.last_start - s.jobs.e + 1, 0).sum()))
                    acc["ratio"].append(utility(s.jobs, start) / lp)
                    acc["value"].append(utility(s.jobs, greedy_schedule(s.jobs, s.truth, "value")) / lp)
                    acc["gap"].append(s.jobs.T * float(s.jobs.value().max()) / lp)
                    rounded = solve_rounded(s.jobs, s.truth)
                    acc["rounded"].append(rounded.utility / lp)
                    acc["rounded_s"].append(rounded.time_s)
                    acc["lp_fill"].append(lp / float(s.truth.sum()))  # u* <= LP <= sum a_t
                    acc["rounded_fill"].append(rounded.utility / float(s.truth.sum()))  # u* >= the rounded LP
                    if k == 0 and j < args.per_job_samples:
                        tick = time.perf_counter()
                        solve_exact(s.jobs, s.truth, time_limit=None, relax=True)  # the LP's own time
                        acc["lp_job_s"].append(time.perf_counter() - tick)
            row: dict[str, Any] = {"dataset": Path(path).name.split(".")[0], "max_share": share,
                                   "demand_multiple": multiple,
                                   "samples": len(acc["jobs"])}
            row.update({k: float(np.mean(v)) if v else None for k, v in acc.items() if k != "gap"})
            row["certified_gap_max"] = float(max(acc["gap"]))
            row["rounded_min"] = float(min(acc["rounded"]))
            row["rounded_fill_min"] = float(min(acc["rounded_fill"]))
            rows.append(row)
    return {"rows": rows, "hours": args.hours, "train_hours": args.train_hours, "jobs": "generated",
            "scale": args.scale}


def table(result: dict[str, Any]) -> str:
    lines = ["| dataset | demand multiple | max_share | u* / sum a_t: rounded LP (least) .. LP | "
             "jobs / sample | X_it / sample | LP by classes (s) | LP per job (s) | "
             "Alg. 3 (ms) | Alg. 3 / LP (c/d) | Alg. 3 / LP (c d) | rounded LP / LP, mean (least) | rounded LP (s) | "
             "certified gap, max |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in result["rows"]:
        per_job = "-" if r["lp_job_s"] is None else f"{r['lp_job_s']:.3f}"
        fill = f"{100 * r['rounded_fill']:.2f} % ({100 * r['rounded_fill_min']:.2f} %) .. {100 * r['lp_fill']:.2f} %"
        lines.append(f"| {r['dataset']} | {r['demand_multiple']:g} | {r['max_share']:g} | {fill} | "
                     f"{r['jobs']:.0f} | {r['cols']:.0f} | {r['lp_s']:.3f} | "
                     f"{per_job} | {r['greedy_ms']:.2f} | {100 * r['ratio']:.2f} % | {100 * r['value']:.2f} % | "
                     f"{100 * r['rounded']:.2f} % ({100 * r['rounded_min']:.2f} %) | {r['rounded_s']:.3f} | "
                     f"{100 * r['certified_gap_max']:.2f} % |")
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    add_arguments(parser)
    print(table(run(parser.parse_args())))
