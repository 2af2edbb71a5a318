"""`sowsched forecast evaluate` and `sowsched forecast compare`: VM CPU forecasts scored as seed 004 scores them."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from typing import Any

from cli.args import (
    add_output_arguments,
    bounded_int,
    choice_list,
    comma_list,
    interval,
    nonempty,
    positive_float,
    probability,
    usage_errors,
)
from cli.verbs import add_verb
from models.forecast.names import ERROR_MODELS, FIT_METHODS, MODELS

DEFAULT_CUTOFFS = "0.001,0.003,0.005,0.01,0.03,0.05,0.07,0.1"


_probabilities = comma_list(probability)


def _pair(text: str) -> tuple[int, int]:
    parts = text.split(",")
    one = bounded_int(1)
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(f"{text!r} must be two integers ON,OFF (e.g. 1,1)")
    return one(parts[0]), one(parts[1])


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--series", required=True, help="CSV or gzip CSV of 5-minute max CPU, one column per VM")
    p.add_argument("--average", type=nonempty,
                   help="the matching 5-minute average CPU file (needed by ar1x, var1, markovx)")
    pick = p.add_mutually_exclusive_group(required=True)
    pick.add_argument("--column", action="append", help="a VM id (repeatable)")
    pick.add_argument("--all", action="store_true", help="every VM column")
    p.add_argument("--train", choices=("offline", "online"), default="offline", help="fit once, or refit")
    p.add_argument("--online-size", choices=("fixed", "growing"), default="fixed",
                   help="online: refit on the last --train-samples samples, or on all before the window")
    p.add_argument("--refit-every", type=bounded_int(1), default=1, help="online: windows between refits")
    p.add_argument("--train-samples", type=bounded_int(1), default=840,
                   help="5-minute samples of the first fit (and of each fixed online fit)")
    p.add_argument("--steps", type=bounded_int(1), default=1,
                   help="extrapolate: forecast the window as this many sub-windows (1: aggregate)")
    p.add_argument("--adjust", type=_pair, help="adjustment policy ON,OFF: switch on after ON failures, off after "
                   "OFF successes (seed 004 1.9)")
    p.add_argument("--granularity", type=interval(0.0, 100.0, closed="lo,hi"), default=0.0,
                   help="CPU percent per core (0: none)")
    p.add_argument("--residuals", choices=ERROR_MODELS, default="normal", help="error model of the AR-type models")
    p.add_argument(
        "--fit",
        choices=FIT_METHODS,
        default="mle",
        help="ar1, ari11: exact ML, or conditional least squares (online refits in closed form with normal "
        "residuals)",
    )
    p.add_argument("--states", type=bounded_int(2), default=8, help="markov: number of states")
    p.add_argument("--partition", choices=("quantile", "fixed"), default="quantile", help="markov: state bins")
    p.add_argument("--half-life-minutes", type=positive_float, default=60.0, help="autopilot: histogram half-life")
    p.add_argument("--breaks", type=bounded_int(2), default=50, help="autopilot: histogram bins over [0, 100]")
    add_output_arguments(p)


def register(sub: Any) -> None:
    p = add_verb(sub, "forecast")
    fsub = p.add_subparsers(dest="forecast_command", required=True)
    e = fsub.add_parser("evaluate", help="survival and utilisation of one model at one cut-off")
    _common(e)
    e.add_argument("--model", required=True, choices=MODELS)
    e.add_argument("--window-minutes", type=bounded_int(5), default=60, help="window to forecast, minutes")
    e.add_argument("--cutoff", type=probability, required=True, help="cut-off probability c (u = 1-c quantile)")
    e.add_argument("--per-vm", action="store_true", help="add one row per VM")
    e.set_defaults(func=_on_series("forecast evaluate", _evaluate))
    c = fsub.add_parser("compare", help="every model against the Autopilot recommender on the same windows, "
                        "ranked by the area their trade-off curves dominate, with PNG plots")
    _common(c)
    c.add_argument("--models", type=choice_list(MODELS), default=",".join(MODELS),
                   help="comma-separated models (default all)")
    c.add_argument("--window-minutes", default="60", help="comma-separated windows, minutes (e.g. 10,30,60,180)")
    c.add_argument("--cutoffs", type=_probabilities, default=_probabilities(DEFAULT_CUTOFFS))
    c.add_argument("--reference", type=_probabilities, default=[0.5],
                   help="the survival from which dominated area is counted (utilisation from 0)")
    c.add_argument("--out", type=nonempty, default="forecast-compare", help="directory for the PNG plots")
    c.set_defaults(func=_on_series("forecast compare", _compare))


Body = Callable[[argparse.Namespace, Any, Any], int]


def _load(args: argparse.Namespace) -> tuple[Any, Any]:
    """The chosen VM columns of the max file, and of the average file when given (same ids, same rows)."""
    import numpy as np

    from models.forecast.series import Table, load_table

    maxes = load_table(args.series)
    avgs = load_table(args.average) if args.average else None
    ids = list(maxes.ids) if args.all else list(dict.fromkeys(args.column))
    m = Table(tuple(ids), np.column_stack([maxes.column(vm) for vm in ids]))
    if avgs is None:
        return m, None
    if avgs.values.shape[0] != maxes.values.shape[0]:
        raise ValueError(f"--average has {avgs.values.shape[0]} rows, --series {maxes.values.shape[0]}")
    return m, Table(tuple(ids), np.column_stack([avgs.column(vm) for vm in ids]))


def _spec(args: argparse.Namespace, name: str) -> Any:
    from models.forecast.registry import NEEDS_AVERAGE, ModelSpec

    if name in NEEDS_AVERAGE and not args.average:
        raise ValueError(f"--model {name} needs --average (it uses the window averages)")
    return ModelSpec(name, residuals=args.residuals, fit=args.fit, states=args.states, partition=args.partition,
                     half_life_minutes=args.half_life_minutes, breaks=args.breaks)


def _protocol(args: argparse.Namespace, window: int) -> Any:
    from models.forecast.evaluate import Protocol

    return Protocol(window_minutes=window, train_samples=args.train_samples, train=args.train,
                    online_size=args.online_size, refit_every=args.refit_every, steps=args.steps,
                    adjustment=args.adjust, granularity=args.granularity)


def _windows(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"--window-minutes={text!r} must be comma-separated integers") from None
    if not values or any(v < 5 or v % 5 for v in values):
        raise ValueError(f"--window-minutes={text!r} must name multiples of 5 minutes (>= 5)")
    return values


def _on_series(command: str, body: Body) -> Callable[[argparse.Namespace], int]:
    """`body` on the options checked and the series loaded; unreadable files, unknown columns and bad combinations
    are usage errors (cli/args.usage_errors)."""
    def run(args: argparse.Namespace) -> int:
        if command.endswith("evaluate"):
            _spec(args, args.model)
            _protocol(args, args.window_minutes)
        else:
            for name in args.models:
                _spec(args, name)
            for window in _windows(args.window_minutes):
                _protocol(args, window)
        return body(args, *_load(args))
    return usage_errors(command, run)


def _evaluate(args: argparse.Namespace, maxes: Any, avgs: Any) -> int:
    import numpy as np

    from models.forecast.evaluate import evaluate

    pooled, rows = evaluate(_spec(args, args.model), _protocol(args, args.window_minutes), list(maxes.ids),
                            maxes.values, None if avgs is None else avgs.values,
                            np.array([args.cutoff]))
    out: dict[str, Any] = {"model": args.model, "cutoff": args.cutoff, "window_minutes": args.window_minutes,
                           "train": args.train, "vms": len(rows), **pooled[0].as_dict(),
                           "failed": {r.vm: r.error for r in rows if r.error}}
    if args.per_vm:
        out["per_vm"] = [{"vm": r.vm, **(r.scores[0].as_dict() if r.scores else {}), "error": r.error}
                         for r in rows]
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"{args.model} c={args.cutoff} {args.window_minutes} min {args.train}: survival {out['survival']} "
          f"(weight {out['survival_weight']}), utilisation {out['utilization']} "
          f"(weight {out['utilization_weight']}), {out['predictions']} predictions on {len(rows)} VMs")
    return 0


def _compare(args: argparse.Namespace, maxes: Any, avgs: Any) -> int:
    from models.forecast.study import compare

    result = compare(args.models, lambda name: _spec(args, name),
                     lambda w: _protocol(args, w), _windows(args.window_minutes), args.cutoffs,
                     list(maxes.ids), maxes.values, None if avgs is None else avgs.values,
                     (args.reference[0], 0.0), args.out)
    if args.json:
        print(json.dumps(result))
        return 0
    for window, block in result["windows"].items():
        print(f"window {window} min (plot {block['plot']}):")
        for name in block["ranking"]:
            print(f"  {name:10s} area {block['area'][name]:.4f}")
    print(f"plots in {os.path.abspath(args.out)}")
    return 0
