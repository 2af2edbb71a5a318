"""`sowsched bench capacity`: quoting with a capacity model vs assuming the mean, on real capacity series.

For each workload, each capacity series (every VM type of the Azure files) and each seed, the same realization
(jobs and capacity) is simulated twice: with the AR(1) + mixture capacity model (`forecast`) and with C = the
series' mean (`fixed`). The protocol holds out: the series is scaled and the model fitted on its first
`--fit-rows` rows, and run k plays rows fit_rows + (k * stride + t) mod (rows - fit_rows) (`--fit-rows 0`: fitted
on and playing the whole series). Reported per (workload, series, model): the calibration of the raw failure
estimates (models/calibration.py), evictions + cancellations, welfare and revenue per run, and the ratio of the
clairvoyant optimum (which knows the realized capacity) to the welfare, on the first `--offline-seeds` seeds (of
`--first-seed`, ..., `--first-seed` + `--seeds` - 1); per
(workload, series) and pooled, the paired differences forecast - fixed of welfare and of evictions +
cancellations, with standard errors over the seeds (the job realizations), each seed's difference averaged over
the series first when pooled; per series also C and the mean capacity of the rows the runs play, and pooled the
least-squares line of the series' welfare differences on that level minus C (`level_fit`). With `--against
BASE.json`, also this run's forecast runs minus those of an earlier result on the same realizations
(benchmarks/capacity_against.py). With `--quantile fit`, each (workload, series) first chooses q on its fit rows
(models/capacity_tune.py); the forecast row carries the choice and the welfare of each q's replays (`tuning`).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.paired import mean, paired_mean, per_seed, std
from cli.args import bounded_int, level_weight, nonempty, positive_float, quantile_or_fit
from mechanism.capacity import DEFAULT_QUANTILE
from models.data import AZURE_CAPACITY

if TYPE_CHECKING:  # the fit's module loads numpy and scikit-learn; the command line does not need them to parse
    from models.capacity_fit import LevelWeight

MODELS = ("fixed", "forecast")
FILES = ("capacity_azure2017.csv", "capacity_azure2019.csv")
FIT_ROWS = 168  # the first week of the hourly Azure series fits the model; the second week is played
VM_TYPES = ("t1str", "t2str", "t3str", "t5str", "t6str", "t7str")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workloads", default="overload,pipelines", help="comma-separated (default %(default)s)")
    parser.add_argument("--series", type=nonempty, default=None,
                        help="comma-separated PATH:KEY (default: every VM type of both Azure capacity files)")
    parser.add_argument("--seeds", type=bounded_int(1), default=40, help="runs per series and model")
    parser.add_argument("--first-seed", type=bounded_int(0), default=0,
                        help="the runs use seeds FIRST_SEED, ..., FIRST_SEED + SEEDS - 1 (default %(default)s): a "
                             "later range replicates a result on job realizations it has not seen")
    parser.add_argument("--rounds", type=bounded_int(1), default=20, help="rounds of jobs per run")
    parser.add_argument("--load", type=positive_float, default=1.0, help="scale the workloads' job rate")
    parser.add_argument("--stride", type=bounded_int(0), default=13,
                        help="run k starts at row k * stride of the played rows")
    parser.add_argument("--fit-rows", type=bounded_int(0), default=FIT_ROWS,
                        help="scale and fit on the first rows only and play the rest (0: fit on and play every row; "
                             "default %(default)s)")
    parser.add_argument("--offline-seeds", type=bounded_int(0), default=4,
                        help="seeds per series with the clairvoyant optimum (CP-SAT)")
    parser.add_argument("--offline-time-limit", type=positive_float, default=2.0,
                        help="CP-SAT deterministic time per optimum")
    parser.add_argument("--quantile", type=quantile_or_fit, default=DEFAULT_QUANTILE, metavar="Q|fit",
                        help="capacity quantile for C' (forecast; default %(default)s); 'fit' chooses it per series "
                             "from 0.1, 0.3, 0.5 by replaying the workload on the fit rows (models/capacity_tune.py)")
    parser.add_argument("--level-weight", type=level_weight, default=None, metavar="LAM|fit",
                        help="forecast: the model's mean tracks the feed with weight LAM in [0, 1), or 'fit' (chosen "
                             "on the fit rows; docs/capacity-model.md); default fit; 0 keeps the fitted mean")
    parser.add_argument("--price-floor", action="store_true",
                        help="forecast: each round's capacity quantile in the prices is at least C (the failure "
                             "estimates still follow the model)")
    parser.add_argument("--processes", type=bounded_int(1), default=None,
                        help="local processes over the (workload, series) pairs (default: every core; 1 runs in "
                             "this process); the numbers do not depend on it")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.add_argument("--against", type=nonempty, metavar="BASE.json", default=None,
                        help="also pair this run's forecast runs, seed by seed, with those of an earlier result "
                             "(--out or --json) of the same workloads, series, seeds, first seed, rounds, load, stride "
                             "and fit rows (another --quantile, --level-weight or --price-floor): this - base per "
                             "series and pooled")


def _level_weight(args: argparse.Namespace) -> LevelWeight:
    from models.capacity_fit import DEFAULT_LEVEL_WEIGHT

    given = getattr(args, "level_weight", None)
    return DEFAULT_LEVEL_WEIGHT if given is None else given


def default_series() -> list[str]:
    return [f"{AZURE_CAPACITY / f}:{k}" for f in FILES for k in VM_TYPES]


def run(args: argparse.Namespace) -> dict[str, Any]:
    from models.sweep import run_tasks

    series = args.series.split(",") if args.series else default_series()
    settings = _Settings(seeds=args.seeds, first_seed=getattr(args, "first_seed", 0), rounds=args.rounds,
                         load=getattr(args, "load", 1.0), stride=args.stride,
                         fit_rows=_fit_rows(args), quantile=args.quantile,
                         level_weight=_level_weight(args),
                         price_floor=bool(getattr(args, "price_floor", False)), offline_seeds=args.offline_seeds,
                         offline_time_limit=args.offline_time_limit)
    tasks = [(workload, spec, settings) for workload in args.workloads.split(",") for spec in series]
    echoed = {k: getattr(settings, k) for k in ("seeds", "first_seed", "rounds", "load", "stride", "fit_rows",
                                               "quantile", "level_weight", "price_floor", "offline_seeds")}
    against = getattr(args, "against", None)
    if against:  # checked before anything runs
        from benchmarks.capacity_against import read_base

        base = read_base(against, echoed, [(w, Path(spec).name) for w, spec, _ in tasks])
    # Every run is a pure function of (workload, series, seed): the rows do not depend on the number of processes.
    per_task = run_tasks(_series_rows, tasks, processes=getattr(args, "processes", 1),
                         progress=not getattr(args, "no_progress", True), desc="series")
    rows = [row for pair in per_task for row in pair]
    result = {**echoed, "rows": rows, "pooled": pool_rows(rows)}
    if against:
        from benchmarks.capacity_against import against as pair_with

        result["against"] = pair_with(result, base, against)
    return result


@dataclass(frozen=True)
class _Settings:
    """What a (workload, series) task needs of the command line (picklable, unlike the parsed namespace)."""

    seeds: int
    first_seed: int
    rounds: int
    load: float
    stride: int
    fit_rows: int
    quantile: float | str  # a probability, or "fit": chosen per (workload, series) by models/capacity_tune.py
    level_weight: LevelWeight
    price_floor: bool
    offline_seeds: int
    offline_time_limit: float


def _series_rows(task: tuple[str, str, _Settings]) -> list[dict[str, Any]]:
    """The fixed and forecast rows of one (workload, series): every seed simulated under both models."""
    from models.calibration import calibrate
    from models.capacity_fit import with_capacity
    from models.simulation import run_simulation
    from models.workloads import make_workload

    workload, spec, args = task
    quantile, tuning = _quantile(workload, spec, args)
    runs: dict[str, list[Any]] = {m: [] for m in MODELS}
    ratios: dict[str, list[float]] = {m: [] for m in MODELS}
    for k, seed in enumerate(range(args.first_seed, args.first_seed + args.seeds)):
        base = make_workload(workload, seed=seed, load=args.load, rounds=args.rounds)
        optimum = None
        for m in MODELS:
            w = with_capacity(base, spec, m, quantile=quantile, start=seed * args.stride,
                              fit_rows=args.fit_rows, level_weight=args.level_weight, price_floor=args.price_floor)
            result = run_simulation(w)
            runs[m].append(result)
            if k < args.offline_seeds:
                optimum = optimum if optimum is not None else _optimum(w, result, args.offline_time_limit)
                if result.welfare > 0:
                    ratios[m].append(optimum / result.welfare)
    rows = [_row(workload, spec, m, runs[m], ratios[m], calibrate(runs[m])) for m in MODELS]
    rows[-1].update(_paired(rows[-2], rows[-1]))
    played = w.capacity or (w.platform.C,)  # the last seed's rows: every seed plays the same rows, from its own start
    for row in rows:  # the level the runs play against the C that `fixed` assumes
        row.update({"C": w.platform.C, "played_mean": sum(played) / len(played)})
    rows[-1].update({"quantile": quantile, "tuning": tuning})
    return rows


def _quantile(workload: str, spec: str, args: _Settings) -> tuple[float, dict[str, Any] | None]:
    """The forecast runs' q: the given one, or with "fit" the one `tune_quantile` chooses on the fit rows from
    replays of the same workload (its own seeds) under the same level weight and floor."""
    if args.quantile != "fit":
        return float(args.quantile), None
    from models.capacity_tune import tune_quantile
    from models.workloads import make_workload

    choice = tune_quantile(lambda seed: make_workload(workload, seed=seed, load=args.load, rounds=args.rounds), spec,
                           args.fit_rows, level_weight=args.level_weight, price_floor=args.price_floor)
    return choice.quantile, choice.as_dict()


def _fit_rows(args: argparse.Namespace) -> int:
    return int(getattr(args, "fit_rows", FIT_ROWS))


def _paired(fixed: dict[str, Any], forecast: dict[str, Any]) -> dict[str, Any]:
    """Per seed, forecast - fixed of welfare and of evictions + cancellations: their means and standard errors."""
    dw = [b - a for a, b in zip(fixed["welfares"], forecast["welfares"], strict=True)]
    df = [b - a for a, b in zip(fixed["failed"], forecast["failed"], strict=True)]
    dp = {k: [b[k] - a[k] for a, b in zip(fixed["parts"], forecast["parts"], strict=True)] for k in PARTS}
    return {"d_welfare": dw, "d_failed": df, "d_parts": dp}


def _optimum(workload: Any, result: Any, time_limit: float) -> float:
    from models.offline import report as offline
    from models.offline.baselines import fcfs
    from models.offline.hindsight import HindsightInstance

    instance = HindsightInstance.from_realized(workload)
    best = offline.hindsight_optimum(instance, result, offline.OfflineConfig(time_limit=time_limit),
                                     fcfs(instance).starts)
    return float(best.value)


PARTS = ("completed", "not_scheduled", "cancelled", "evicted", "wait", "welfare", "revenue")  # the decomposition


def _parts(r: Any) -> dict[str, float]:
    """A run's outcome counts, the mean planned wait (start - birth) of the jobs whose realized outcome had a start,
    welfare and revenue."""
    waits = [j.start - j.birth for j in r.jobs if j.start is not None]
    out = {k: float(r.counts.get(k, 0)) for k in PARTS[:4]}
    return {**out, "wait": sum(waits) / len(waits) if waits else 0.0, "welfare": r.welfare, "revenue": r.revenue}


def _row(workload: str, spec: str, model: str, runs: list[Any], ratios: list[float], cal: Any) -> dict[str, Any]:
    n = len(runs)
    failed = [r.evicted_cancelled for r in runs]
    return {"workload": workload, "series": Path(spec).name, "model": model, "runs": n, "jobs": cal.jobs,
            "estimate": cal.estimate, "realized": cal.realized, "gap": cal.gap, "gap_se": cal.gap_se,
            "evicted_cancelled": sum(failed) / n, "welfare": sum(r.welfare for r in runs) / n,
            "revenue": sum(r.revenue for r in runs) / n,
            "ratio": sum(ratios) / len(ratios) if ratios else None, "gaps": _run_gaps(runs),
            "welfares": [r.welfare for r in runs], "failed": failed, "parts": [_parts(r) for r in runs]}


def _run_gaps(runs: list[Any]) -> list[float]:
    from models.calibration import scheduled_jobs

    out = []
    for r in runs:
        est, fail = scheduled_jobs(r)
        if est.size:
            out.append(float(fail.mean() - est.mean()))
    return out


def pool_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per workload and model, over every series: the gap of all runs, and the means of the per-run numbers."""
    out = []
    for workload in sorted({r["workload"] for r in rows}):
        for model in MODELS:
            sel = [r for r in rows if r["workload"] == workload and r["model"] == model]
            gaps = [g for r in sel for g in r["gaps"]]
            se = float(std(gaps) / math.sqrt(len(gaps))) if len(gaps) > 1 else math.nan
            ratios = [r["ratio"] for r in sel if r["ratio"] is not None]
            out.append({"workload": workload, "model": model, "runs": len(gaps),
                        "gap": sum(gaps) / len(gaps) if gaps else math.nan, "gap_se": se,
                        "evicted_cancelled": mean([r["evicted_cancelled"] for r in sel]),
                        "welfare": mean([r["welfare"] for r in sel]), "revenue": mean([r["revenue"] for r in sel]),
                        "ratio": mean(ratios) if ratios else None})
            if model == MODELS[-1]:
                out[-1].update(_pooled_paired(sel))
                out[-1].update(_level_fit(sel))
    return out


def _level_fit(sel: list[dict[str, Any]]) -> dict[str, Any]:
    """Over the series (3 or more), the least-squares line of the mean paired welfare difference on the played
    level minus C, and their correlation: how much of forecast - fixed the capacity the runs meet explains."""
    if len(sel) < 3:
        return {}
    import numpy as np

    level = np.array([r["played_mean"] - r["C"] for r in sel])
    dw = np.array([mean(r["d_welfare"]) for r in sel])
    if float(np.ptp(level)) == 0.0 or float(np.ptp(dw)) == 0.0:
        return {}
    slope, intercept = np.polyfit(level, dw, 1)
    return {"level_fit": {"slope": float(slope), "intercept": float(intercept),
                          "correlation": float(np.corrcoef(level, dw)[0, 1]), "series": len(sel)}}


def _pooled_paired(sel: list[dict[str, Any]]) -> dict[str, Any]:
    """The paired differences of every series, averaged per seed over the series (the runs of one seed share their
    jobs, so the seeds are the independent units), with their mean and standard error over the seeds."""
    out: dict[str, Any] = {}
    for key in ("d_welfare", "d_failed"):
        out[key], out[f"{key}_se"] = paired_mean(per_seed([r[key] for r in sel]))
    out["d_parts"] = {k: paired_mean(per_seed([r["d_parts"][k] for r in sel])) for k in PARTS}
    return out


def table(result: dict[str, Any]) -> str:
    head = ("| workload | series | model | runs | jobs | estimate | realized | gap (se) | evict+cancel | welfare | "
            "revenue | ratio |\n| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    lines = [head]
    for r in result["rows"]:
        lines.append(f"| {r['workload']} | {r['series']} | {r['model']} | {r['runs']} | {r['jobs']} | "
                     f"{r['estimate']:.3f} | {r['realized']:.3f} | {r['gap']:+.3f} ({r['gap_se']:.3f}) | "
                     f"{r['evicted_cancelled']:.2f} | {r['welfare']:.1f} | {r['revenue']:.1f} | "
                     f"{_fmt(r['ratio'])} |")
    lines += ["", "| workload | series | C | played mean | runs | welfare forecast - fixed (se) | "
              "evict+cancel forecast - fixed (se) |", "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in result["rows"]:
        if "d_welfare" in r:
            (dw, dw_se), (df, df_se) = paired_mean(r["d_welfare"]), paired_mean(r["d_failed"])
            lines.append(f"| {r['workload']} | {r['series']} | {r['C']} | {r['played_mean']:.2f} | {r['runs']} | "
                         f"{dw:+.1f} ({dw_se:.1f}) | {df:+.2f} ({df_se:.2f}) |")
    lines += ["", "| workload | model | runs | gap (se) | evict+cancel | welfare | revenue | ratio | "
              "welfare forecast - fixed (se) | evict+cancel forecast - fixed (se) |",
              "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in result["pooled"]:
        paired = (f"{r['d_welfare']:+.1f} ({r['d_welfare_se']:.1f}) | {r['d_failed']:+.2f} ({r['d_failed_se']:.2f})"
                  if "d_welfare" in r else "- | -")
        lines.append(f"| {r['workload']} | {r['model']} | {r['runs']} | {r['gap']:+.4f} ({r['gap_se']:.4f}) | "
                     f"{r['evicted_cancelled']:.2f} | {r['welfare']:.1f} | {r['revenue']:.1f} | {_fmt(r['ratio'])} | "
                     f"{paired} |")
    lines += ["", "| workload | forecast - fixed per run (se over seeds) | " + " | ".join(PARTS) + " |",
              "| --- | --- |" + " ---: |" * len(PARTS)]
    for r in result["pooled"]:
        if "d_parts" in r:
            cells = " | ".join(f"{m:+.2f} ({se:.2f})" for m, se in (r["d_parts"][k] for k in PARTS))
            lines.append(f"| {r['workload']} | all series | {cells} |")
    for r in result["pooled"]:
        if "level_fit" in r:
            f = r["level_fit"]
            lines += ["", f"{r['workload']}: per series, welfare forecast - fixed = {f['intercept']:+.1f} "
                          f"{f['slope']:+.1f} x (played mean - C) by least squares over {f['series']} series "
                          f"(correlation {f['correlation']:+.2f})"]
    tuned = [r for r in result["rows"] if r.get("tuning")]
    if tuned:
        lines += ["", "| workload | series | q chosen | " + " | ".join(
            f"q = {g['quantile']:g}: welfare; evict+cancel" for g in tuned[0]["tuning"]["grid"]) + " |",
            "| --- | --- | ---: |" + " ---: |" * len(tuned[0]["tuning"]["grid"])]
        for r in tuned:
            cells = " | ".join(f"{g['welfare']:.1f}; {g['evicted_cancelled']:.2f}" for g in r["tuning"]["grid"])
            lines.append(f"| {r['workload']} | {r['series']} | {r['quantile']:g} | {cells} |")
    if "against" in result:
        from benchmarks.capacity_against import table as against_table

        lines += ["", against_table(result["against"])]
    return "\n".join(lines)


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"
