"""Prediction engine speed: predictions per second and fit time per predictor; per trace, the seconds of EASY
(seed 001), EASY and EASY++ on the compiled simulator and on the policy-driven reference one, and easy-learned."""

from __future__ import annotations

import argparse
import time
from typing import Any

from cli.args import bounded_int
from models.data import KTH_SP2, SIX_TRACES, recorded_path
from models.hpc.jobs import Workload
from models.hpc.list_scheduling import easy
from models.hpc.point_backfill import simulate_point
from models.hpc.prediction_backfill import simulate_backfill
from models.hpc.simulator import simulate
from models.predict.evaluate import evaluate
from models.predict.jobs import JobTable, load_trace
from models.predict.schedulers import POINT_RUNS, make_policy, run_predictive

PREDICTORS = ("requested", "tsafrir", "last5", "learned")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--trace", default=str(KTH_SP2), help="SWF trace (default: KTH-SP2)")
    p.add_argument("--jobs", type=bounded_int(1), help="trace prefix (default: all)")
    p.add_argument("--six", action="store_true", help="time the schedulers on the six traces of docs/backfill.md "
                   "(default: on --trace only)")
    p.add_argument("--no-reference", action="store_true", help="skip the policy-driven reference simulator")


def _seconds(work: Any) -> tuple[Any, float, float]:
    """work()'s result, its wall seconds and its process CPU seconds."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = work()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def _schedulers(trace: str, workload: Workload, table: JobTable, reference: bool) -> dict[str, Any]:
    """Seconds per scheduler on one trace; the compiled EASY / EASY++ against the reference simulator."""
    row: dict[str, Any] = {"trace": trace, "jobs": len(table)}
    _, row["easy_s"], row["easy_cpu_s"] = _seconds(lambda: simulate(workload, easy(), "requested"))
    for name, (mode, sjf, plain) in POINT_RUNS.items():
        if name == "easy-exact":
            continue
        fast, row[f"{name}_s"], row[f"{name}_cpu_s"] = _seconds(
            lambda: simulate_point(workload, table.requested, table.user, mode, sjf, plain))  # noqa: B023
        if reference:
            ref, row[f"{name}_reference_s"], row[f"{name}_reference_cpu_s"] = _seconds(
                lambda: simulate_backfill(workload, make_policy(name, table)[0], pass_if_new_fits=plain))  # noqa: B023
            row[f"{name}_same_starts"] = fast.starts == ref.starts
    _, row["easy-learned_s"], row["easy-learned_cpu_s"] = _seconds(
        lambda: run_predictive(workload, table, "easy-learned"))
    row["easy_learned_over_easy"] = round(row["easy-learned_s"] / row["easy_s"], 2)
    return row


def run(args: argparse.Namespace) -> dict[str, Any]:
    workload, table = load_trace(args.trace, args.jobs)
    predictors = []
    for name in PREDICTORS:
        r = evaluate(table, name)
        predictors.append({"predictor": name, "jobs": r["jobs"], "fit_s": r["fit_s"], "predict_us": r["predict_us"],
                           "predictions_per_second": round(1e6 / r["predict_us"]) if r["predict_us"] else None,
                           "replay_s": r["total_s"]})
    small = workload.prefix(min(len(table), 50))  # the compiled simulators load from numba's cache untimed
    simulate_point(small, table.requested[:len(small.jobs)], table.user[:len(small.jobs)], *POINT_RUNS["easy-pp"])
    run_predictive(small, table.prefix(len(small.jobs)), "easy-learned")
    rows = []
    for trace in (SIX_TRACES if args.six else (args.trace,)):
        loaded = (workload, table) if str(trace) == str(args.trace) else load_trace(trace, args.jobs)
        rows.append(_schedulers(recorded_path(trace), *loaded, reference=not args.no_reference))
    return {"trace": recorded_path(args.trace), "jobs": len(table), "predictors": predictors, "schedulers": rows,
            "target_ratio": 3.0}


def table(result: dict[str, Any]) -> str:
    lines = [f"{result['trace']}: {result['jobs']} jobs",
             f"{'predictor':<10} {'fit s':>7} {'us/pred':>8} {'pred/s':>8} {'replay s':>9}"]
    for r in result["predictors"]:
        lines.append(f"{r['predictor']:<10} {r['fit_s']:>7.2f} {r['predict_us']:>8.0f} "
                     f"{r['predictions_per_second'] or 0:>8} {r['replay_s']:>9.2f}")
    names = {"easy": "easy", "easy-requested": "requested", "easy-requested_reference": "(reference)",
             "easy-pp": "easy-pp", "easy-pp_reference": "(reference)", "easy-learned": "learned"}
    lines.append(f"{'trace (wall seconds)':<25} " + " ".join(f"{n:>11}" for n in names.values()) + " learned/easy")
    for r in result["schedulers"]:
        cells = [f"{r[n + '_s']:>11.2f}" if n + "_s" in r else f"{'-':>11}" for n in names]
        lines.append(f"{r['trace'].rsplit('/', 1)[-1][:25]:<25} " + " ".join(cells)
                     + f" {r['easy_learned_over_easy']:>12}")
    return "\n".join(lines)
