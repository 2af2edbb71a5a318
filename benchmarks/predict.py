"""Prediction engine speed: predictions per second and fit time per predictor; easy-learned vs EASY time on KTH."""

from __future__ import annotations

import argparse
import time
from typing import Any

from cli.args import bounded_int
from models.data import KTH_SP2
from models.hpc.list_scheduling import easy
from models.hpc.simulator import simulate
from models.predict.evaluate import evaluate
from models.predict.jobs import load_trace
from models.predict.schedulers import run_predictive

PREDICTORS = ("requested", "tsafrir", "last5", "learned")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--trace", default=str(KTH_SP2), help="SWF trace (default: KTH-SP2)")
    p.add_argument("--jobs", type=bounded_int(1), help="trace prefix (default: all)")


def run(args: argparse.Namespace) -> dict[str, Any]:
    workload, table = load_trace(args.trace, args.jobs)
    predictors = []
    for name in PREDICTORS:
        r = evaluate(table, name)
        predictors.append({"predictor": name, "jobs": r["jobs"], "fit_s": r["fit_s"], "predict_us": r["predict_us"],
                           "predictions_per_second": round(1e6 / r["predict_us"]) if r["predict_us"] else None,
                           "replay_s": r["total_s"]})
    began = time.perf_counter()
    simulate(workload, easy(), "requested")
    easy_s = time.perf_counter() - began
    schedulers: list[dict[str, Any]] = [{"scheduler": "easy", "seconds": round(easy_s, 3)}]
    learned = 0.0
    for name in ("easy-pp", "easy-learned"):
        began = time.perf_counter()
        run_predictive(workload, table, name)
        learned = time.perf_counter() - began
        schedulers.append({"scheduler": name, "seconds": round(learned, 3)})
    return {"trace": args.trace, "jobs": len(table), "predictors": predictors, "schedulers": schedulers,
            "easy_learned_over_easy": round(learned / easy_s, 2), "target_ratio": 3.0}


def table(result: dict[str, Any]) -> str:
    lines = [f"{result['trace']}: {result['jobs']} jobs",
             f"{'predictor':<10} {'fit s':>7} {'us/pred':>8} {'pred/s':>8} {'replay s':>9}"]
    for r in result["predictors"]:
        lines.append(f"{r['predictor']:<10} {r['fit_s']:>7.2f} {r['predict_us']:>8.0f} "
                     f"{r['predictions_per_second'] or 0:>8} {r['replay_s']:>9.2f}")
    lines.append(f"{'scheduler':<14} {'seconds':>8}")
    lines += [f"{r['scheduler']:<14} {r['seconds']:>8.2f}" for r in result["schedulers"]]
    lines.append(f"easy-learned / easy = {result['easy_learned_over_easy']}x (target <= {result['target_ratio']}x)")
    return "\n".join(lines)
