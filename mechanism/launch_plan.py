"""Launch plans (eq. 1-2): per (arrival, signal) group, the start that maximises estimated utility, or never."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# What a plan is lives in plans.py (a client reading a quote needs no numpy); it is named here too, where older
# pickles of archived plans look for it (`mechanism.launch_plan._plan_from_rows`).
from mechanism.plans import GroupPlan, LaunchPlan, OutcomeQuote, _plan_from_rows
from mechanism.pricing import PriceMenu
from mechanism.sow import SoW


@dataclass(frozen=True)
class FailureEstimates:
    """E(s, d) for start offsets s in [0, S_m) after birth and durations d in [1, D_m] (column d - 1)."""

    raw: np.ndarray  # float64, shape (S_m, D_m)
    announced: np.ndarray  # raw, with values <= epsilon/10 + eps0 zeroed

    @staticmethod
    def from_raw(raw: np.ndarray, threshold: float) -> FailureEstimates:
        return FailureEstimates(raw=raw, announced=np.where(raw > threshold, raw, 0.0))


def utility_matrix(sow: SoW, birth: int, menu: PriceMenu, est: FailureEstimates) -> np.ndarray:
    """u[s, i] = (1 - E_bar(s, c, d_i)) (V(s + d_i) - pi_b(s, c, d_i)) for start offsets s in [0, S_m)."""
    return _utility_and_price(sow, birth, menu, est)[0]


def _utility_and_price(sow: SoW, birth: int, menu: PriceMenu,
                       est: FailureEstimates) -> tuple[np.ndarray, np.ndarray]:
    """`utility_matrix` and the prices pi_b(s, c, d_i) it used, [s, i] (a price is a function of (s, d) alone)."""
    t = sow.table
    s = np.arange(est.raw.shape[0], dtype=np.int64)[:, None]
    d = t.duration[None, :]
    value = sow.value(s + d)
    price = menu.price(birth + s, sow.concurrency, d)
    keep = 1.0 - est.announced[:, t.duration - 1]  # column d_i - 1 of every start: announced[s, d_i - 1]
    return keep * (value - price), price


def choose_plan(sow: SoW, birth: int, menu: PriceMenu, est: FailureEstimates) -> LaunchPlan:
    """argmax_s U(s) per group over s in [a, b + S_m - 1]; never when the best U <= 0; ties to the earliest."""
    t = sow.table
    u, price = _utility_and_price(sow, birth, menu, est)  # (S, n)
    n_groups = len(t.groups)
    weighted = u * t.probability
    if n_groups == t.group.size:  # one outcome per group: U(s) of group g is its outcome's P u, nothing to add
        group_u = np.empty_like(weighted)
        group_u[:, t.group] = weighted
    else:
        order = np.argsort(t.group, kind="stable")
        bounds = np.searchsorted(t.group[order], np.arange(n_groups))
        group_u = np.add.reduceat(weighted[:, order], bounds, axis=1)  # U(s) per group (eq. 1), left to right
    arrival = np.fromiter((a for a, _ in t.groups), dtype=np.int64, count=n_groups)
    group_u[np.arange(group_u.shape[0])[:, None] < arrival] = -np.inf  # no start before the group's arrival
    best = np.argmax(group_u, axis=0)  # first maximum = earliest start
    best_u = group_u[best, np.arange(n_groups)]
    chosen = np.where(best_u > 0.0, best, -1)

    groups = tuple(
        GroupPlan(birth + a, sig, birth + s, u) if s >= 0 else GroupPlan(birth + a, sig, None, 0.0)
        for (a, sig), s, u in zip(t.groups, chosen.tolist(), best_u.tolist(), strict=True)
    )
    outcomes = _outcome_quotes(sow, birth, price, est, u, chosen)
    # fsum is exactly rounded: the total cannot depend on summation order, BLAS or CPU.
    total = math.fsum(o.probability * o.utility for o in outcomes)
    return LaunchPlan(birth=birth, groups=groups, outcomes=outcomes, utility=total)


def _outcome_quotes(sow: SoW, birth: int, prices: np.ndarray, est: FailureEstimates, u: np.ndarray,
                    chosen: np.ndarray) -> tuple[OutcomeQuote, ...]:
    """Price, failure estimates and utility of every outcome at its group's chosen start (vectorised; `prices` and
    `u` as `_utility_and_price` gives them): each column gathered at once and read back as Python numbers."""
    t = sow.table
    s = chosen[t.group]
    s0 = np.maximum(s, 0)
    column = np.arange(t.group.size)
    cell = (s0, t.duration - 1)
    return tuple(
        OutcomeQuote(birth + o.arrival_offset, o.duration, sig, o.probability, birth + start, price, raw, announced,
                     util)
        if start >= 0 else OutcomeQuote(birth + o.arrival_offset, o.duration, sig, o.probability,
                                        None, None, None, None, 0.0)
        for o, sig, start, price, raw, announced, util in zip(
            sow.outcomes, sow.signals, s.tolist(), prices[s0, column].tolist(), est.raw[cell].tolist(),
            est.announced[cell].tolist(), u[s0, column].tolist(), strict=True)
    )


__all__ = ["FailureEstimates", "GroupPlan", "LaunchPlan", "OutcomeQuote", "_plan_from_rows", "choose_plan",
           "utility_matrix"]
