"""`bench capacity_daily`: the daily-profile capacity model against the AR(1), k-step RMSE on the held-out week."""

from __future__ import annotations

import argparse
from typing import Any

from benchmarks.capacity import FIT_ROWS, default_series
from benchmarks.paired import mean
from cli.args import bounded_int, nonempty

HORIZONS = (1, 2, 4, 6, 12, 18, 24)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--series", type=nonempty, default=None,
                        help="comma-separated PATH:KEY (default: every VM type of both Azure capacity files)")
    parser.add_argument("--C", type=bounded_int(1), default=16, help="nodes the first week's mean is scaled to")
    parser.add_argument("--fit-rows", type=bounded_int(48), default=FIT_ROWS,
                        help="fit on the first rows, score on the rest (default %(default)s: one week)")


def run(args: argparse.Namespace) -> dict[str, Any]:
    from models.capacity_daily import held_out_errors
    from models.capacity_fit import read_series

    specs = args.series.split(",") if args.series else default_series()
    rows = []
    for spec in specs:
        series = read_series(spec)
        if series.raw.size <= args.fit_rows + max(HORIZONS):
            raise ValueError(f"--series {spec}: {series.raw.size} rows leave no held-out origin after "
                             f"--fit-rows {args.fit_rows} at horizon {max(HORIZONS)}")
        scored = held_out_errors(series.scaled(args.C, rows=args.fit_rows), args.fit_rows, HORIZONS)
        rows.append({"series": series.name, **scored})
    pooled = {m: [mean([r["rmse"][m][i] for r in rows]) for i in range(len(HORIZONS))] for m in ("ar1", "daily")}
    wins = [sum(r["rmse"]["daily"][i] < r["rmse"]["ar1"][i] for r in rows) for i in range(len(HORIZONS))]
    return {"C": args.C, "fit_rows": args.fit_rows, "horizons": list(HORIZONS), "rows": rows,
            "pooled": {"rmse": pooled, "daily_wins": wins, "series": len(rows)}}


def table(result: dict[str, Any]) -> str:
    hs = result["horizons"]
    head = "| series | model | phi | " + " | ".join(f"k={k}" for k in hs) + " |"
    lines = [f"k-step RMSE in nodes on the held-out rows (C = {result['C']}, fit on rows 0-{result['fit_rows'] - 1})",
             "", head, "| --- | --- | ---: | " + " | ".join("---:" for _ in hs) + " |"]
    for r in result["rows"]:
        for m in ("ar1", "daily"):
            lines.append(f"| {r['series']} | {m} | {r[m]['phi']:.3f} | "
                         + " | ".join(f"{x:.2f}" for x in r["rmse"][m]) + " |")
    p = result["pooled"]
    for m in ("ar1", "daily"):
        lines.append(f"| mean of {p['series']} series | {m} | | " + " | ".join(f"{x:.2f}" for x in p["rmse"][m]) + " |")
    lines.append("| daily better on | | | " + " | ".join(f"{w}/{p['series']}" for w in p["daily_wins"]) + " |")
    return "\n".join(lines)
