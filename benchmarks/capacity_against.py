"""`bench capacity --against BASE.json`: this run's forecast runs minus those of an earlier result, seed by seed.

Two `bench capacity` results over the same workloads, series, seeds (first seed and count), rounds, load, stride
and fit rows simulate the same job realizations on the same capacity rows; they may differ in what the forecast
model is told (the quantile q, the level weight, the price floor). Run k of one and run k of the other are then a
pair, and the difference of their forecast runs isolates the option. Per (workload, series) and pooled (each seed's
difference averaged over the series first, as `bench capacity` pools forecast - fixed), the mean and standard error
over the seeds of the differences of welfare and of evictions + cancellations. `fixed_equal` says whether the
fixed-C runs of both results are equal run for run, the check that the realizations are the same.
"""

from __future__ import annotations

import json
from typing import Any

from benchmarks.paired import paired_mean, per_seed
from cli.args import BenchInputError

SAME = ("seeds", "first_seed", "rounds", "load", "stride", "fit_rows")  # the settings that fix the realizations
OPTIONS = ("quantile", "level_weight", "price_floor", "offline_seeds")  # what the pairing compares
ABSENT = {"price_floor": False, "first_seed": 0}  # what a result written before the key existed ran with


def setting(result: dict[str, Any], key: str) -> Any:
    """A result's echoed setting; one written before the key existed (absent, or echoed as null) reads as ABSENT's."""
    value = result.get(key)
    return ABSENT.get(key) if value is None else value


def read_base(path: str, settings: dict[str, Any], pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """The earlier result at `path`, checked against this run's settings and (workload, series name) pairs before
    anything runs; BenchInputError names the file and what does not match."""
    try:
        with open(path, encoding="utf-8") as fh:
            base = json.load(fh)
    except (OSError, ValueError) as e:
        raise BenchInputError(f"--against {path}: cannot read it as JSON ({e})") from None
    if not isinstance(base, dict) or not isinstance(base.get("rows"), list):
        raise BenchInputError(f"--against {path}: not a `bench capacity --json` result (no 'rows' list)")
    for key in SAME:
        there = setting(base, key)
        if there != settings[key]:
            raise BenchInputError(f"--against {path}: {key} is {there!r} there and {settings[key]!r} here; "
                                  f"the runs must share {', '.join(SAME)}")
    rows = _index(base["rows"])
    for workload, series in pairs:
        for model in ("fixed", "forecast"):
            row = rows.get((workload, series, model))
            if row is None or len(row.get("welfares", ())) != settings["seeds"] or \
                    len(row.get("failed", ())) != settings["seeds"]:
                raise BenchInputError(f"--against {path}: no {model} row of {settings['seeds']} runs for "
                                      f"{workload} {series}")
    return base


def against(result: dict[str, Any], base: dict[str, Any], path: str) -> dict[str, Any]:
    """This result's forecast runs minus the base's, per (workload, series) and pooled per workload."""
    old, now = _index(base["rows"]), _index(result["rows"])
    rows = []
    for r in result["rows"]:
        if r["model"] != "forecast":
            continue
        b = old[(r["workload"], r["series"], "forecast")]
        fixed_now = now[(r["workload"], r["series"], "fixed")]
        dw = [x - y for x, y in zip(r["welfares"], b["welfares"], strict=True)]
        df = [float(x - y) for x, y in zip(r["failed"], b["failed"], strict=True)]
        rows.append({"workload": r["workload"], "series": r["series"], "d_welfare": dw, "d_failed": df,
                     "fixed_equal": fixed_now["welfares"] == old[(r["workload"], r["series"], "fixed")]["welfares"]})
    return {"file": path, "base": {k: setting(base, k) for k in OPTIONS}, "rows": rows,
            "pooled": pool_pairs(rows)}


def pool_pairs(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per workload, each seed's differences averaged over the series, then their mean and standard error."""
    pooled = []
    for workload in sorted({r["workload"] for r in rows}):
        sel = [r for r in rows if r["workload"] == workload]
        out: dict[str, Any] = {"workload": workload, "series": len(sel)}
        for key in ("d_welfare", "d_failed"):
            out[key], out[f"{key}_se"] = paired_mean(per_seed([r[key] for r in sel]))
        pooled.append({**out, "fixed_equal": all(r["fixed_equal"] for r in sel)})
    return pooled


def table(pairing: dict[str, Any]) -> str:
    """The pairing as markdown: per series and pooled, this - base with its standard error over the seeds."""
    base = ", ".join(f"{k} {v}" for k, v in pairing["base"].items() if k != "offline_seeds")
    lines = [f"forecast runs, this - base ({pairing['file']}: {base}), per run (se over seeds):", "",
             "| workload | series | welfare (se) | evict+cancel (se) | fixed runs equal |",
             "| --- | --- | ---: | ---: | --- |"]
    for r in pairing["rows"]:
        (dw, dw_se), (df, df_se) = paired_mean(r["d_welfare"]), paired_mean(r["d_failed"])
        lines.append(f"| {r['workload']} | {r['series']} | {dw:+.1f} ({dw_se:.1f}) | {df:+.2f} ({df_se:.2f}) | "
                     f"{_yes(r['fixed_equal'])} |")
    for p in pairing["pooled"]:
        lines.append(f"| {p['workload']} | all {p['series']} series | {p['d_welfare']:+.1f} ({p['d_welfare_se']:.1f}) "
                     f"| {p['d_failed']:+.2f} ({p['d_failed_se']:.2f}) | {_yes(p['fixed_equal'])} |")
    return "\n".join(lines)


def _index(rows: list[Any]) -> dict[tuple[Any, Any, Any], dict[str, Any]]:
    return {(r.get("workload"), r.get("series"), r.get("model")): r for r in rows if isinstance(r, dict)}


def _yes(flag: bool) -> str:
    return "yes" if flag else "**no**"
