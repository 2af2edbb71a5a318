"""Forecaster fit and predict time per VM on the Azure VM CPU series (seed 004's data)."""

from __future__ import annotations

import argparse
import os
import time
import warnings
from typing import Any

from cli.args import bounded_int

DEFAULT_DATA = os.path.join("..", "shared", "data", "azure-vm-cpu")
MODELS = ("ar1", "ar1x", "ari11", "var1", "markov", "markovx", "tsdec", "autopilot")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", default=DEFAULT_DATA, help="directory holding max.csv.gz and avg.csv.gz")
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated forecasters")
    parser.add_argument("--vms", type=bounded_int(1), default=10, help="how many VM columns to time (from the first)")
    parser.add_argument("--window-minutes", type=_window_minutes, default=60, help="window size (a multiple of 5)")
    parser.add_argument("--train-samples", type=bounded_int(1), default=840, help="5-minute samples of the fit")


def _window_minutes(text: str) -> int:
    """An argparse type: a window of whole 5-minute samples."""
    value = bounded_int(5)(text)
    if value % 5:
        raise argparse.ArgumentTypeError(f"{value} is not a multiple of 5 (the series' sampling interval)")
    return value


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Per model: mean fit seconds per VM and mean seconds per VM to predict every test window at once.

    Both as elapsed time and as this process's CPU time (steadier on a shared machine).
    """
    import numpy as np

    from models.forecast.registry import ModelSpec
    from models.forecast.series import aggregate, load_table

    maxes = load_table(os.path.join(args.data, "max.csv.gz"))
    avgs = load_table(os.path.join(args.data, "avg.csv.gz"))
    ids = list(maxes.ids[: args.vms])
    size = args.window_minutes // 5
    first = args.train_samples // size
    rows = []
    for name in [m for m in args.models.split(",") if m]:
        fit_s, predict_s, fit_cpu, predict_cpu, windows = [], [], [], [], 0
        for vm in ids:
            series = aggregate(maxes.column(vm), avgs.column(vm), size)
            origins = np.arange(first, len(series))
            model = ModelSpec(name).build(args.window_minutes)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                start, start_cpu = time.perf_counter(), time.process_time()
                model.fit(series.head(first))
                mid, mid_cpu = time.perf_counter(), time.process_time()
                model.one_step(series, origins).quantile(0.99)
                end, end_cpu = time.perf_counter(), time.process_time()
            fit_s.append(mid - start)
            predict_s.append(end - mid)
            fit_cpu.append(mid_cpu - start_cpu)
            predict_cpu.append(end_cpu - mid_cpu)
            windows += origins.size
        rows.append({"model": name, "vms": len(ids), "fit_s_per_vm": float(np.mean(fit_s)),
                     "predict_s_per_vm": float(np.mean(predict_s)), "fit_cpu_s_per_vm": float(np.mean(fit_cpu)),
                     "predict_cpu_s_per_vm": float(np.mean(predict_cpu)),
                     "predict_us_per_window": 1e6 * float(np.sum(predict_s)) / max(windows, 1)})
    return {"window_minutes": args.window_minutes, "train_samples": args.train_samples, "rows": rows}


def table(result: dict[str, Any]) -> str:
    lines = [f"forecasters, {result['window_minutes']}-minute windows, fit on {result['train_samples']} samples",
             f"{'model':10s} {'VMs':>4s} {'fit ms/VM':>10s} {'(cpu)':>8s} {'predict ms/VM':>14s} {'(cpu)':>8s} "
             f"{'us/window':>10s}"]
    for r in result["rows"]:
        lines.append(f"{r['model']:10s} {r['vms']:4d} {1e3 * r['fit_s_per_vm']:10.2f} "
                     f"{1e3 * r['fit_cpu_s_per_vm']:8.2f} {1e3 * r['predict_s_per_vm']:14.2f} "
                     f"{1e3 * r['predict_cpu_s_per_vm']:8.2f} {r['predict_us_per_window']:10.2f}")
    return "\n".join(lines)
