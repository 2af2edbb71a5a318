"""`sowsched capacity-fit`: fit a capacity model to a series; print the `[platform.capacity]` table servers read."""

from __future__ import annotations

import argparse
import json
from typing import Any

from cli.args import add_output_arguments, bounded_int, level_weight, positive_float, probability, usage_errors
from cli.verbs import add_verb

FLAGS = {"capacity_series": "series", "capacity_fit_rows": "--fit-rows", "capacity_level_weight": "--level-weight"}
MAX_C = 1_000_000  # Platform.C's bound (mechanism/capacity.py MAX_CAPACITY; not imported so the parser stays light)


def register(sub: Any) -> None:
    p = add_verb(sub, "capacity-fit")
    p.add_argument("series", metavar="PATH[:KEY]",
                   help="capacity history, CSV or gzip CSV: KEY is a column of a wide CSV or a VM type (Column1) of "
                        "the long-format Azure capacity files")
    p.add_argument("--C", dest="C", type=bounded_int(1, MAX_C), required=True, metavar="N",
                   help="the platform's nominal capacity in nodes ([platform] C)")
    p.add_argument("--scale", type=positive_float, default=None, metavar="F",
                   help="nodes per unit of the series (default: the factor that makes the fitted rows' mean C)")
    p.add_argument("--fit-rows", type=bounded_int(0), default=0, metavar="F",
                   help="fit on the first F rows only (default 0: every row)")
    p.add_argument("--quantile", type=probability, default=None, metavar="Q",
                   help="the quantile of the capacity the prices' C' uses (default 0.3)")
    p.add_argument("--level-weight", type=level_weight, default=None, metavar="LAM|fit",
                   help="the mean tracks the feed, mu_t = (1 - LAM) mu_{t-1} + LAM C_{t-1}; 'fit' (the default) "
                        "chooses LAM on the rows; 0 keeps the fitted mean")
    p.add_argument("--price-floor", action="store_true",
                   help="prices never assume less than C (the failure estimates still follow the model)")
    add_output_arguments(p)
    p.set_defaults(func=usage_errors("capacity-fit", run, FLAGS))


def run(args: argparse.Namespace) -> int:
    from mechanism.capacity import DEFAULT_QUANTILE
    from models.capacity_fit import DEFAULT_LEVEL_WEIGHT, fitted_model, scaled_rows

    quantile = DEFAULT_QUANTILE if args.quantile is None else args.quantile
    lam = DEFAULT_LEVEL_WEIGHT if args.level_weight is None else args.level_weight
    rows, _ = scaled_rows(args.series, args.C, args.scale, args.fit_rows)
    model = fitted_model(rows, args.C, quantile, lam, args.price_floor)
    table = model.model_dump(mode="json")
    if args.json:
        fitted = {"rows": int(rows.size), "mean": float(rows.mean()), "min": int(rows.min()), "max": int(rows.max())}
        print(json.dumps({"C": args.C, "series": args.series, "fitted_rows": fitted, "capacity": table},
                         sort_keys=True))
    else:
        print(toml_table(table, args))
    return 0


def toml_table(table: dict[str, Any], args: argparse.Namespace) -> str:
    """The model as platform.toml's `[platform.capacity]` table; floats written in full (repr), so the file reads
    back to the very model that was fitted."""
    options = [f"--{name.replace('_', '-')} {getattr(args, name)}" for name in ("scale", "fit_rows", "quantile")
               if getattr(args, name)] + ([] if args.level_weight is None else [f"--level-weight {args.level_weight}"])
    options += ["--price-floor"] if args.price_floor else []
    command = " ".join(["sowsched capacity-fit", args.series, "--C", str(args.C), *options])
    lines = [f"# {command}: docs/capacity-model.md; [platform] C = {args.C}", "[platform.capacity]"]
    for key, value in table.items():
        lines.append(f"{key} = {_toml_value(value)}")
    return "\n".join(lines)


def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return repr(value)
