"""Risk-aware backfilling on several traces: EASY, EASY++ and easy-learned configurations side by side, what the
traces look like, where easy-learned loses against EASY++, and the leave-one-trace-out choice of configuration."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import numpy as np

from cli.args import bounded_int, nonempty
from models.data import SIX_TRACES, recorded_path
from models.hpc.jobs import Workload
from models.hpc.metrics import BSLD_BOUND
from models.predict.evaluate import evaluate
from models.predict.jobs import JobTable, load_trace
from models.predict.schedulers import run_predictive

TARGET_GAIN = 0.10  # BSLD at least 10 % below EASY++ (issue 39)
AF_SLACK = 0.01  # with AF at most 1 % worse
FLOOR = 0.01  # and never more than 1 % worse on BSLD
SHORT_S = 3600  # a short job runs under an hour
MONTH_S = 30 * 86400  # --months: blocks of 30 days of submissions, from the trace's first


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--traces", type=nonempty, help="comma-separated SWF traces (default: the six of "
                   "docs/backfill.md)")
    p.add_argument("--jobs", type=bounded_int(1), help="prefix of every trace (default: all)")
    p.add_argument("--configs", type=nonempty, default="risk=0.9,reservation_q=0.4",
                   help="easy-learned configurations, ';'-separated, each comma-separated key=value of "
                        "risk, reservation_q, guard, calibrate, wide_risk, portfolio, portfolio_risks (risks "
                        "separated by ':', e.g. portfolio=24,portfolio_risks=0.8:0.9:0.95; the "
                        "leave-one-trace-out choice is among the configurations)")
    p.add_argument("--scores", action="store_true", help="also score the tsafrir and learned predictors "
                   "(coverage, pinball, log score) on each trace")
    p.add_argument("--months", action="store_true", help="also report, per 30 days of submissions, the jobs, "
                   "the offered load and the mean BSLD under EASY++ and each configuration")


CONFIG_KEYS = ("risk", "reservation_q", "guard", "calibrate", "wide_risk", "portfolio", "portfolio_risks")


def parse_config(text: str) -> dict[str, Any]:
    """`risk=0.9,reservation_q=0.4` as options of run_predictive (portfolio_risks: `0.8:0.9` -> (0.8, 0.9))."""
    out: dict[str, Any] = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep or key not in CONFIG_KEYS:
            raise ValueError(f"--configs item {item!r} must be key=value with key "
                             f"{', '.join(CONFIG_KEYS[:-1])} or {CONFIG_KEYS[-1]}")
        if key == "portfolio_risks":
            out[key] = tuple(float(v) for v in value.split(":"))
        else:
            out[key] = int(value) if key in ("calibrate", "portfolio") else float(value)
    return out


def characteristics(workload: Workload, table: JobTable) -> dict[str, Any]:
    """Machine size against job sizes, requested-time accuracy, offered load, short jobs, drift."""
    size, runtime, requested = (np.asarray(a, dtype=np.float64) for a in (table.size, table.runtime, table.requested))
    span = float(table.submit[-1] - table.submit[0]) or 1.0
    quarters = np.array_split(np.log(runtime), 4)
    return {"nodes": workload.nodes, "mean_size_share": float(size.mean() / workload.nodes),
            "wide_share": float(np.mean(size > workload.nodes / 8)),
            "median_accuracy": float(np.median(runtime / requested)),
            "load": float((size * runtime).sum() / (workload.nodes * span)),
            "short_share": float(np.mean(runtime < SHORT_S)),
            "median_runtime_by_quarter": [round(float(np.exp(np.median(q)))) for q in quarters]}


def _bsld_each(workload: Workload, starts: np.ndarray) -> np.ndarray:
    submit = np.array([j.submit for j in workload.jobs], dtype=np.float64)
    runtime = np.array([j.runtime for j in workload.jobs], dtype=np.float64)
    return np.maximum(1.0, (starts - submit + runtime) / np.maximum(runtime, BSLD_BOUND))


def months(workload: Workload, runs: dict[str, np.ndarray]) -> dict[str, Any]:
    """Per block of MONTH_S seconds of submissions (from the first): its jobs, its offered load (node-seconds
    submitted over the machine's node-seconds in the block) and each run's mean BSLD over its jobs."""
    submit = np.array([j.submit for j in workload.jobs], dtype=np.float64)
    work = np.array([j.size * j.runtime for j in workload.jobs], dtype=np.float64)
    block = ((submit - submit[0]) // MONTH_S).astype(np.int64)
    jobs = np.bincount(block)
    out: dict[str, Any] = {"jobs": jobs.tolist(),
                           "load": np.round(np.bincount(block, weights=work) / (workload.nodes * MONTH_S), 4).tolist()}
    for name, starts in runs.items():
        bsld = np.bincount(block, weights=_bsld_each(workload, starts), minlength=len(jobs))
        out[name] = np.round(bsld / np.maximum(jobs, 1), 4).tolist()
    return out


def losses(workload: Workload, table: JobTable, base: np.ndarray, other: np.ndarray) -> dict[str, Any]:
    """Where `other` loses to `base` (start times): the mean BSLD change each class of job contributes."""
    delta = _bsld_each(workload, other) - _bsld_each(workload, base)
    short = np.asarray(table.runtime) < SHORT_S
    wide = np.asarray(table.size) > workload.nodes / 8
    out: dict[str, Any] = {}
    for name, mask in (("short_narrow", short & ~wide), ("short_wide", short & wide),
                       ("long_narrow", ~short & ~wide), ("long_wide", ~short & wide)):
        out[name] = {"jobs": int(mask.sum()), "bsld_change": float(delta[mask].sum() / delta.size),
                     "delayed_1h": int(np.sum((other - base > 3600) & mask))}
    return out


def _run(workload: Workload, table: JobTable, name: str, **options: Any) -> tuple[dict[str, Any], np.ndarray]:
    began = time.perf_counter()
    run = run_predictive(workload, table, name, **options)
    seconds = time.perf_counter() - began
    out = {"BSLD": run.metrics.BSLD, "AF": run.metrics.AF, "seconds": round(seconds, 2)}
    if "portfolio" in run.details:  # how often each policy was chosen
        out["portfolio"] = run.details["portfolio"]
    return out, np.asarray(run.starts, dtype=np.float64)


def meets(pp: dict[str, Any], learned: dict[str, Any]) -> bool:
    """The issue's target on one trace: BSLD >= 10 % below EASY++ and AF <= 1 % worse."""
    return bool(learned["BSLD"] <= (1 - TARGET_GAIN) * pp["BSLD"] and learned["AF"] <= (1 + AF_SLACK) * pp["AF"])


def gain(pp: dict[str, Any], learned: dict[str, Any]) -> float:
    return float(1 - learned["BSLD"] / pp["BSLD"])


def leave_one_out(rows: list[dict[str, Any]], configs: list[str]) -> list[dict[str, Any]]:
    """For each trace: the configuration chosen on the others (most targets met, then the best worst gain)."""
    out = []
    for held in rows:
        rest = [r for r in rows if r is not held]

        chosen = max(configs, key=lambda c, rest=rest: (  # type: ignore[misc]
            sum(meets(r["easy-pp"], r["learned"][c]) for r in rest),
            min(gain(r["easy-pp"], r["learned"][c]) for r in rest)))
        result = held["learned"][chosen]
        out.append({"trace": held["trace"], "chosen": chosen, "gain": round(gain(held["easy-pp"], result), 4),
                    "af_change": round(result["AF"] / held["easy-pp"]["AF"] - 1, 4),
                    "meets_target": meets(held["easy-pp"], result),
                    "within_floor": result["BSLD"] <= (1 + FLOOR) * held["easy-pp"]["BSLD"]})
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    traces = args.traces.split(",") if args.traces else [str(t) for t in SIX_TRACES]
    configs = args.configs.split(";")
    options = {c: parse_config(c) for c in configs}
    rows = []
    for trace in traces:
        workload, table = load_trace(trace, args.jobs)
        row: dict[str, Any] = {"trace": recorded_path(trace), "jobs": len(table),
                               "traits": characteristics(workload, table)}
        row["easy-requested"], _ = _run(workload, table, "easy-requested")
        row["easy-pp"], pp_starts = _run(workload, table, "easy-pp")
        row["learned"] = {}
        starts_of = {"easy-pp": pp_starts}
        for c in configs:
            row["learned"][c], starts = _run(workload, table, "easy-learned", **options[c])
            if c == configs[0]:
                row["losses"] = losses(workload, table, pp_starts, starts)
            if args.months:
                starts_of[c] = starts
        if args.months:
            row["months"] = months(workload, starts_of)
        print(f"{trace}: EASY++ {row['easy-pp']}, easy-learned {row['learned']}", file=sys.stderr, flush=True)
        if args.scores:
            row["scores"] = {name: {k: evaluate(table, name)[k] for k in ("coverage", "pinball_loss", "log_score")}
                             for name in ("tsafrir", "learned")}
        rows.append(row)
    return {"jobs": args.jobs, "configs": configs, "rows": rows,
            "leave_one_out": leave_one_out(rows, configs) if len(rows) > 1 else []}


def table(result: dict[str, Any]) -> str:
    lines = [f"{'trace':<34} {'EASY':>8} {'EASY++':>8} " + " ".join(f"{c[:24]:>24}" for c in result["configs"])]
    for r in result["rows"]:
        cells = [f"{r['learned'][c]['BSLD']:>8.2f} ({gain(r['easy-pp'], r['learned'][c]):+.1%})"
                 f"{r['learned'][c]['AF'] / r['easy-pp']['AF'] - 1:+6.1%}" for c in result["configs"]]
        lines.append(f"{r['trace'].rsplit('/', 1)[-1][:34]:<34} {r['easy-requested']['BSLD']:>8.2f} "
                     f"{r['easy-pp']['BSLD']:>8.2f} " + " ".join(f"{x:>24}" for x in cells))
    for row in result["leave_one_out"]:
        lines.append(f"held out {row['trace'].rsplit('/', 1)[-1][:30]:<30} chosen {row['chosen']:<36} "
                     f"gain {row['gain']:+.1%} AF {row['af_change']:+.1%} target {row['meets_target']}")
    return "\n".join(lines)
