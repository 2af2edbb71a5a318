"""CP-SAT strategies for the hindsight problem: one model, or two phases with reduced-cost fixing and window LNS.

The model itself (its math, build, solve, extract) is models/offline/cpsat_model.py; this module picks and chains
the models by `CpSatParams.strategy` and combines what the phases found.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from ortools.sat.python import cp_model

from models.offline import dominance, hindsight, lns, rcfix
from models.offline.cpsat_model import (
    BOUND_MODELS,
    MAX_SCALED_WEIGHT,
    SOLVER_NAME,
    STRATEGIES,
    BoundModel,
    CpSatModel,
    CpSatParams,
    Model,
    Strategy,
    add_hint,
    auto_scale,
    build,
    build_indexed,
    extract,
    solve,
    start_of,
    trivial_bound,
)
from models.offline.hindsight import HindsightInstance, OfflineResult, relative_gap

__all__ = ["BOUND_MODELS", "MAX_SCALED_WEIGHT", "SOLVER_NAME", "STRATEGIES", "BoundModel", "CpSatModel",
           "CpSatParams", "Model", "Strategy", "add_hint", "auto_scale", "build", "build_indexed", "combine", "extract",
           "shifted_hint", "solve", "solve_cpsat", "solve_fixed", "solve_model", "start_of", "trivial_bound"]


def solve_cpsat(instance: HindsightInstance, params: CpSatParams | None = None) -> OfflineResult:
    """Build, solve and extract, by strategy.

    plain: the interval model alone (strong propagation and search, but only a weak bound under contention);
    channel: with the time-indexed channel (tight LP bound, slower search); two_phase: plain for `plain_share`
    of the limit, and unless that proved optimality, `bound_model` for the rest, hinted with the plain schedule:
    channel, or indexed, the time-indexed model alone (it reaches the LP bound soonest; its search is weak).
    With `rc_fixing` the second phase runs on the model reduced by reduced-cost fixing at the plain value (its
    LP solve, HiGHS, comes on top of the time limit); with `lns_share` > 0 window LNS improves the plain schedule
    for that share of the limit first.
    """
    params = params or CpSatParams()
    if params.strategy != "two_phase":
        return solve_model(instance, params, params.strategy)
    first = solve_model(instance, replace(params, time_limit=params.time_limit * params.plain_share), "plain")
    if first.optimal:
        return first
    if params.lns_share > 0 and first.status != "unknown":
        first = _window_lns(instance, params, first)
    hint = first.starts if first.status != "unknown" else params.hint
    rest = params.time_limit * (1.0 - params.plain_share - params.lns_share)
    second_params = replace(params, time_limit=rest, hint=hint)
    if params.rc_fixing:
        return _fixed_phase(instance, second_params, first)
    return combine(first, solve_model(instance, second_params, params.bound_model))


def _window_lns(instance: HindsightInstance, params: CpSatParams, first: OfflineResult) -> OfflineResult:
    """The plain phase's schedule improved by window LNS for `lns_share` of the limit (its bound still holds).

    One worker per window: the windows are small, and in 60 s runs on 2 cores 8 workers per window found worse
    schedules than 1 (the portfolio splits the cores among workers that each get too little time).
    """
    better = lns.improve(instance, first.starts, lns.LnsParams(
        time_limit=params.time_limit * params.lns_share, workers=1, deterministic=params.deterministic))
    bound = max(first.bound, better.value)
    return replace(first, value=better.value, starts=better.starts, bound=bound,
                   gap=relative_gap(better.value, bound), solve_seconds=(first.solve_seconds or 0.0) + better.seconds)


def _fixed_phase(instance: HindsightInstance, params: CpSatParams, first: OfflineResult) -> OfflineResult:
    """The bound model without the starts that no schedule worth more than `first` takes (its LP solve on top)."""
    prices = rcfix.lp_prices(instance, params.time_limit, 1)
    fixing = rcfix.fix(prices, first.value)
    second = solve_fixed(instance, params, params.bound_model, fixing)
    if second is None:  # no schedule is worth more than the first phase's: it is optimal
        return replace(first, bound=first.value, gap=0.0, status="optimal",
                       solve_seconds=(first.solve_seconds or 0.0) + prices.solve_seconds)
    return combine(first, replace(second, solve_seconds=(second.solve_seconds or 0.0) + prices.solve_seconds))


def solve_model(instance: HindsightInstance, params: CpSatParams, model: Model) -> OfflineResult:
    """One solve of one model (params.strategy is not read); the hint is left-shifted with `left_shift`."""
    built, params = _built(instance, params, model)
    solver, status = solve(built, params)
    return extract(built, solver, status)


def solve_fixed(instance: HindsightInstance, params: CpSatParams, model: Model,
                fixing: rcfix.Fixing) -> OfflineResult | None:
    """One solve of a time-indexed model with the fixed starts; None if that model has no schedule at all.

    Its optimum is the optimum over the schedules worth more than `fixing.incumbent`, if there are any, so the
    instance's optimum is max(incumbent, its optimum), and its bound bounds only those schedules.
    """
    if model == "plain":
        raise ValueError("model='plain' has no time-indexed starts to fix; use 'channel' or 'indexed'")
    built, params = _built(instance, params, model)
    _add_fixing(built, fixing)
    solver, status = solve(built, params)
    if status == cp_model.INFEASIBLE:
        return None
    return extract(built, solver, status)


def _built(instance: HindsightInstance, params: CpSatParams, model: Model) -> tuple[CpSatModel, CpSatParams]:
    left = params.left_shift and model != "plain"
    if model == "indexed":
        built = build_indexed(instance, params.value_scale, left)
    else:
        built = build(instance, params.value_scale, model == "channel", left)
    if left and params.hint is not None:
        params = replace(params, hint=shifted_hint(instance, params.hint))
    return built, params


def _add_fixing(built: CpSatModel, fixing: rcfix.Fixing) -> None:
    # Reduced-cost fixing: at[j,s] = 0 for (j, s) in zero, at[j,s] = 1 for (j, s) in one (rcfix.py).
    for value, starts in ((0, fixing.zero), (1, fixing.one)):
        for j, s in starts:
            if j not in built.at or s not in built.at[j]:
                raise ValueError(f"fixed start ({j!r}, {s}) is not a valuable start of the instance")
            built.model.add(built.at[j][s] == value)


def shifted_hint(instance: HindsightInstance, hint: Mapping[str, int | None]) -> Mapping[str, int | None]:
    """A feasible hint left-shifted so that it satisfies the dominance; an infeasible one is passed on as is."""
    try:
        return dominance.left_shift(instance, hint)
    except ValueError:
        return hint


def combine(a: OfflineResult, b: OfflineResult) -> OfflineResult:
    """Two solves of the same instance: the better schedule, the tighter bound, their total time."""
    return hindsight.combine(a, b, SOLVER_NAME)
