"""Welfare report: one simulated run against its offline optimum and the baselines, and the sweep's aggregates.

Per (load, seed) run: the mechanism's welfare and revenue, the offline optimum of the same realization (CP-SAT,
the HiGHS MILP, or both in turn, warm-started with the best of the mechanism's, FCFS's and the density-greedy
schedules, all feasible in hindsight), its bound (the tighter of the solver's and the time-indexed LP
relaxation's) and gap, the ratio, FCFS and reservation welfare, the per-round series and the (announced failure
estimate, failed?) pairs. Across seeds: the competitive ratio E[OPT] / E[mechanism welfare]
(docs/model.md section 8), spreads, and calibration bins.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from models.offline.baselines import fcfs, reservation
from models.offline.cpsat import BOUND_MODELS, STRATEGIES, BoundModel, CpSatParams, Strategy, solve_cpsat
from models.offline.greedy import density_greedy
from models.offline.hindsight import HindsightInstance, OfflineResult, Status, combine, relative_gap
from models.offline.milp import LpBound, MilpParams, lp_bound, solve_milp
from models.simulation import SimulationResult, Workload, run_simulation

OfflineSolver = Literal["cpsat", "milp", "both"]
OFFLINE_SOLVERS: tuple[OfflineSolver, ...] = ("cpsat", "milp", "both")
BOTH_NAME = "highs-milp+cpsat"
CALIBRATION_BINS = 10
LP_TIME_LIMIT = 60.0  # seconds for the LP relaxation; it solves in well under a second on the workloads here
LP_TOLERANCE = 1e-6  # relative slack on HiGHS's LP optimum (its feasibility tolerances are 1e-7)


@dataclass(frozen=True)
class OfflineConfig:
    """Which offline solver, its limit (CP-SAT: deterministic time units, so runs are reproducible), workers.

    `both`: HiGHS, then CP-SAT unless HiGHS proved optimality; the limit applies to each of them.
    """

    solver: OfflineSolver = "cpsat"
    time_limit: float = 10.0
    workers: int = 1
    strategy: Strategy = "two_phase"  # CP-SAT only
    bound_model: BoundModel = "indexed"  # CP-SAT two_phase: its second model (indexed: tighter gaps at high load)

    def __post_init__(self) -> None:
        if self.solver not in OFFLINE_SOLVERS:
            raise ValueError(f"solver={self.solver!r} is not one of {', '.join(OFFLINE_SOLVERS)}")
        if not self.time_limit > 0:
            raise ValueError(f"time_limit={self.time_limit} must be above 0 seconds")
        if self.workers < 1:
            raise ValueError(f"workers={self.workers} is below the bound 1")
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy={self.strategy!r} is not one of {', '.join(STRATEGIES)}")
        if self.bound_model not in BOUND_MODELS:
            raise ValueError(f"bound_model={self.bound_model!r} is not one of {', '.join(BOUND_MODELS)}")


def mechanism_schedule(sim: SimulationResult) -> dict[str, int | None]:
    """The starts of the jobs the mechanism completed (the others earned nothing), from the completion events: a
    job's record has no start when its realized outcome is not among the declared ones, yet it may complete."""
    starts: dict[str, int | None] = {j.id: None for j in sim.jobs}
    for e in sim.events:
        if e.type == "complete":
            starts[e.job] = int(e.data["start"])
    return starts


def solve_offline(instance: HindsightInstance, hint: dict[str, int | None], config: OfflineConfig) -> OfflineResult:
    """The configured solver, warm-started with `hint`, never below the hint's value, bounded by the LP too."""
    if config.solver == "both":
        result = _milp_then_cpsat(instance, hint, config)
    elif config.solver == "cpsat":
        result = _cpsat(instance, hint, config)
    else:
        result = _milp(instance, hint, config)
    return tighten_with_lp(at_least_hint(instance, result, hint), lp_bound(instance, LP_TIME_LIMIT))


def _cpsat(instance: HindsightInstance, hint: dict[str, int | None], config: OfflineConfig) -> OfflineResult:
    return solve_cpsat(instance, CpSatParams(config.time_limit, config.workers, hint=hint, strategy=config.strategy,
                                             bound_model=config.bound_model, deterministic=True))


def _milp(instance: HindsightInstance, hint: dict[str, int | None], config: OfflineConfig) -> OfflineResult:
    return solve_milp(instance, MilpParams(config.time_limit, config.workers, hint=hint))


def _milp_then_cpsat(instance: HindsightInstance, hint: dict[str, int | None], config: OfflineConfig) -> OfflineResult:
    """HiGHS first; unless it proves optimality, CP-SAT warm-started with the better of the hint and HiGHS's
    schedule: HiGHS closes instances CP-SAT leaves open (docs/offline-benchmark.md, not done), and where it stops at
    its limit CP-SAT may still find a better schedule or a lower bound."""
    milp = at_least_hint(instance, _milp(instance, hint, config), hint)
    if milp.optimal:
        return replace(milp, solver=BOTH_NAME)
    return combine(milp, _cpsat(instance, milp.starts, config), BOTH_NAME, LP_TOLERANCE)


def at_least_hint(instance: HindsightInstance, result: OfflineResult, hint: dict[str, int | None]) -> OfflineResult:
    """If the solver stopped below its hint, the hint (feasible in hindsight) is the better known schedule."""
    hinted = instance.schedule_value(hint)
    if hinted <= result.value:
        return result
    instance.check_schedule(hint)
    bound = max(result.bound, hinted)
    return replace(result, value=hinted, bound=bound, gap=relative_gap(hinted, bound), status="feasible",
                   starts=dict(hint))


def tighten_with_lp(result: OfflineResult, lp: LpBound) -> OfflineResult:
    """A solved LP relaxation bounds the optimum too: bound = min(solver bound, LP optimum + tolerance), and a
    value within the tolerance of the LP optimum is proven optimal (LP_TOLERANCE relative)."""
    if lp.status != "optimal":
        return result
    tol = LP_TOLERANCE * max(1.0, abs(lp.bound))
    bound = max(min(result.bound, lp.bound + tol), result.value)
    status: Status = "optimal" if result.optimal or result.value >= lp.bound - tol else result.status
    return replace(result, bound=bound, gap=relative_gap(result.value, bound), status=status)


def hindsight_optimum(instance: HindsightInstance, sim: SimulationResult, config: OfflineConfig,
                      *schedules: dict[str, int | None]) -> OfflineResult:
    """The offline optimum of the run's realization, warm-started with the best of the mechanism's own, the
    density-greedy and any further `schedules` (all feasible in hindsight), never below it."""
    candidates = (mechanism_schedule(sim), *schedules, density_greedy(instance))
    return solve_offline(instance, max(candidates, key=instance.schedule_value), config)


def against_optimum(offline: OfflineResult, welfare: float) -> dict[str, Any]:
    """How close a run came to the clairvoyant scheduler: the optimum (or the best schedule found, its bound and
    gap) and the ratios offline / online (docs/model.md section 8)."""
    return {"value": offline.value, "bound": offline.bound, "gap": offline.gap, "status": offline.status,
            "solver": offline.solver, "ratio": ratio(offline.value, welfare),
            "ratio_bound": ratio(offline.bound, welfare)}


def evaluate(workload: Workload, load: float, seed: int, config: OfflineConfig) -> dict[str, Any]:
    """Simulate, solve the hindsight problem, run both baselines; a JSON-able row."""
    sim = run_simulation(workload)
    instance = HindsightInstance.from_realized(workload)
    first = fcfs(instance)
    offline = hindsight_optimum(instance, sim, config, first.starts)
    reserved = reservation(workload)
    return {
        "workload": workload.name, "load": load, "seed": seed, "jobs": len(workload.jobs), "rounds": sim.rounds,
        "welfare": sim.welfare, "revenue": sim.revenue, "utility": sim.utility, "utilization": sim.utilization,
        "counts": {k: int(v) for k, v in sorted(sim.counts.items())},
        "offline_value": offline.value, "offline_bound": offline.bound, "offline_gap": offline.gap,
        "offline_status": offline.status, "offline_solver": offline.solver,
        "ratio": ratio(offline.value, sim.welfare), "ratio_bound": ratio(offline.bound, sim.welfare),
        "fcfs_welfare": first.welfare, "reservation_welfare": reserved.welfare,
        "reservation_rejected": reserved.rejected,
        "series": series(sim),
        "calibration": calibration_pairs(sim),
    }


def ratio(offline: float, online: float) -> float | None:
    """offline / online; 1 when both are 0 (nothing to earn), None when only the online welfare is 0 (unbounded)."""
    if online <= 0 and offline <= 0:
        return 1.0
    return offline / online if online > 0 else None


def series(sim: SimulationResult) -> dict[str, list[Any]]:
    """Per-round unit price, expected usage y, running load, and the rounds of evictions."""
    return {"unit_price": list(sim.unit_price), "expected_usage": list(sim.expected_usage),
            "running": list(sim.running), "capacity": [sim.platform.C],
            "evictions": sorted(e.round for e in sim.events if e.type == "evict")}


def calibration_pairs(sim: SimulationResult) -> list[list[float]]:
    """[announced estimate, raw estimate, failed (0/1)] for every job that was given a start and then ran or
    waited: it fails when evicted or cancelled instead of completing."""
    out = []
    for j in sim.jobs:
        if j.start is None or j.failure is None or j.state not in ("completed", "evicted", "cancelled"):
            continue
        raw = j.failure_raw if j.failure_raw is not None else j.failure
        out.append([float(j.failure), float(raw), 0.0 if j.state == "completed" else 1.0])
    return out


def calibration_bins(pairs: list[list[float]], column: int = 0, bins: int = CALIBRATION_BINS) -> list[dict[str, Any]]:
    """Equal-width bins of the estimate in `column` (0 announced, 1 raw): count, mean estimate, failure rate."""
    if bins < 1:
        raise ValueError(f"bins={bins} is below the bound 1")
    out = []
    arr = np.asarray(pairs, dtype=np.float64).reshape(-1, 3)
    idx = np.minimum((arr[:, column] * bins).astype(np.int64), bins - 1)
    for b in range(bins):
        sel = arr[idx == b]
        out.append({"lo": b / bins, "hi": (b + 1) / bins, "count": len(sel),
                    "mean_estimate": float(sel[:, column].mean()) if len(sel) else None,
                    "failure_rate": float(sel[:, 2].mean()) if len(sel) else None})
    return out


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per load: means and standard deviations across seeds, and the competitive ratio E[OPT] / E[welfare]."""
    out = []
    for load in sorted({r["load"] for r in rows}):
        group = [r for r in rows if r["load"] == load]
        mech = _mean(r["welfare"] for r in group)
        opt = _mean(r["offline_value"] for r in group)
        bound = _mean(r["offline_bound"] for r in group)
        out.append({
            "load": load, "seeds": len(group),
            "welfare": mech, "welfare_std": _std(r["welfare"] for r in group),
            "revenue": _mean(r["revenue"] for r in group),
            "offline": opt, "offline_std": _std(r["offline_value"] for r in group),
            "offline_bound": bound, "optimal": sum(r["offline_status"] == "optimal" for r in group),
            "competitive_ratio": ratio(opt, mech), "competitive_ratio_bound": ratio(bound, mech),
            "ratio_std": _std(r["ratio"] for r in group if r["ratio"] is not None),
            "fcfs": _mean(r["fcfs_welfare"] for r in group),
            "reservation": _mean(r["reservation_welfare"] for r in group),
        })
    return out


def summary_table(summary: list[dict[str, Any]]) -> str:
    head = (f"{'load':>5} {'seeds':>5} | {'mechanism':>10} {'revenue':>9} | {'offline':>10} {'bound':>10} "
            f"{'opt':>4} | {'ratio':>6} {'<=':>6} | {'fcfs':>9} {'reserve':>9}")
    lines = [head, "-" * len(head)]
    for s in summary:
        lines.append(
            f"{s['load']:>5g} {s['seeds']:>5} | {s['welfare']:>10.1f} {s['revenue']:>9.1f} | {s['offline']:>10.1f} "
            f"{s['offline_bound']:>10.1f} {s['optimal']:>4} | {_fmt(s['competitive_ratio']):>6} "
            f"{_fmt(s['competitive_ratio_bound']):>6} | {s['fcfs']:>9.1f} {s['reservation']:>9.1f}")
    lines.append("ratio = E[offline] / E[mechanism welfare] over seeds; <= uses the offline bound; "
                 "opt = seeds whose offline value is proven optimal")
    return "\n".join(lines)


def _fmt(x: float | None) -> str:
    return "inf" if x is None else f"{x:.3f}"


def _mean(xs: Any) -> float:
    vals = list(xs)
    return math.fsum(vals) / len(vals) if vals else 0.0


def _std(xs: Any) -> float:
    vals = list(xs)
    return float(np.std(vals)) if len(vals) > 1 else 0.0
