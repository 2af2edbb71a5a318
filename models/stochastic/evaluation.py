"""The two pricings on workloads drawn from the prior, each against the clairvoyant optimum of its realization."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from models.offline.baselines import fcfs
from models.offline.hindsight import HindsightInstance
from models.offline.report import OfflineConfig, against_optimum, hindsight_optimum, mechanism_schedule, ratio
from models.simulation import SimulationResult, run_simulation
from models.stochastic.pricing import StochasticPricing, stochastic_pricing
from models.workloads import stochastic_workload

PRICINGS = ("exponential", "stochastic")
ROUNDS = 20  # birth rounds of the `stochastic` workload


def compare_run(seed: int, load: float, pricing: StochasticPricing, time_limit: float,
                rounds: int = ROUNDS) -> dict[str, Any]:
    """One draw from the prior of `load`, run under both pricings; one offline optimum (the same realization)."""
    workload = stochastic_workload(seed=seed, load=load, rounds=rounds)
    priced = dataclasses.replace(workload, platform=pricing.platform.model_copy(update={"seed": seed}))
    sims: dict[str, SimulationResult] = {"exponential": run_simulation(workload), "stochastic": run_simulation(priced)}
    instance = HindsightInstance.from_realized(workload)
    best = hindsight_optimum(instance, sims["exponential"], OfflineConfig(time_limit=time_limit),
                             fcfs(instance).starts, mechanism_schedule(sims["stochastic"]))
    row: dict[str, Any] = {"load": load, "seed": seed, "jobs": len(workload.jobs), "offline": best.value,
                           "offline_bound": best.bound, "offline_status": best.status}
    for name, sim in sims.items():
        opt = against_optimum(best, sim.welfare)
        row[name] = {"welfare": sim.welfare, "revenue": sim.revenue, "ratio": opt["ratio"],
                     "ratio_bound": opt["ratio_bound"], "completed": sim.counts.get("completed", 0),
                     "evicted": sim.evicted_cancelled,
                     "utilization": sim.utilization}
    return row


def sweep(loads: list[float], seeds: list[int], time_limit: float, rounds: int = ROUNDS) -> dict[str, Any]:
    """Every (load, seed); per load the LP and bundles once (the prior does not depend on the seed)."""
    rows, per_load = [], []
    for load in loads:
        base = stochastic_workload(seed=0, load=load, rounds=rounds)
        assert base.prior is not None
        pricing = stochastic_pricing(base.prior, base.platform)
        load_rows = [compare_run(seed, load, pricing, time_limit, rounds) for seed in seeds]
        rows.extend(load_rows)
        per_load.append({"load": load, "pricing": pricing.report(), **summary(load_rows)})
    return {"loads": loads, "seeds": seeds, "rounds": rounds, "offline_time_limit": time_limit, "per_load": per_load,
            "overall": summary(rows), "rows": rows}


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean welfare and the ratio of means E[opt] / E[welfare] (MODEL.md section 8) per pricing, and how often
    the stochastic pricing's welfare beat the exponential one's."""
    out: dict[str, Any] = {"runs": len(rows), "offline_mean": _mean([r["offline"] for r in rows])}
    for name in PRICINGS:
        welfare = _mean([r[name]["welfare"] for r in rows])
        out[name] = {"welfare_mean": welfare, "ratio": ratio(out["offline_mean"], welfare),
                     "ratio_mean": _mean([r[name]["ratio"] for r in rows if r[name]["ratio"] is not None])}
    out["stochastic_better"] = sum(r["stochastic"]["welfare"] > r["exponential"]["welfare"] for r in rows)
    return out


def _mean(xs: list[float]) -> float:
    return math.fsum(xs) / len(xs) if xs else math.nan


def table(result: dict[str, Any]) -> str:
    """Per load: LP size, kept value, mean welfare, the ratio of means E[opt] / E[welfare] and the mean of the
    per-run ratios of both pricings, and in how many runs the stochastic pricing's welfare was higher."""
    head = (f"{'load':>5} {'LP rows x cols':>15} {'kept':>6} {'bundles':>7} {'opt':>9} {'W exp':>9} {'W sto':>9} "
            f"{'ratio exp':>9} {'ratio sto':>9} {'mean r exp':>10} {'mean r sto':>10} {'sto>exp':>7}")
    lines = [head]
    for s in [*result["per_load"], {"load": None, **result["overall"]}]:
        lp = s.get("pricing", {}).get("lp")
        size = f"{lp['rows']} x {lp['cols']}" if lp else ""
        kept = f"{s['pricing']['allocation']['kept']:.2f}" if lp else ""
        bundles = str(s["pricing"]["allocation"]["bundles"]) if lp else ""
        label = "all" if s["load"] is None else f"{s['load']:g}"
        lines.append(f"{label:>5} {size:>15} {kept:>6} {bundles:>7} {s['offline_mean']:9.1f} "
                     f"{s['exponential']['welfare_mean']:9.1f} {s['stochastic']['welfare_mean']:9.1f} "
                     f"{_fmt(s['exponential']['ratio']):>9} {_fmt(s['stochastic']['ratio']):>9} "
                     f"{_fmt(s['exponential']['ratio_mean']):>10} {_fmt(s['stochastic']['ratio_mean']):>10} "
                     f"{s['stochastic_better']:>3}/{s['runs']:<3}")
    return "\n".join(lines)


def _fmt(x: float | None) -> str:
    return "inf" if x is None else f"{x:.3f}"
