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
    n_starts = est.raw.shape[0]
    s = np.arange(n_starts, dtype=np.int64)[:, None]
    d = t.duration[None, :]
    value = sow.value(s + d)
    price = menu.price(birth + s, sow.concurrency, d)
    keep = 1.0 - est.announced[s, d - 1]
    return keep * (value - price), price


def choose_plan(sow: SoW, birth: int, menu: PriceMenu, est: FailureEstimates) -> LaunchPlan:
    """argmax_s U(s) per group over s in [a, b + S_m - 1]; never when the best U <= 0; ties to the earliest."""
    t = sow.table
    u, price = _utility_and_price(sow, birth, menu, est)  # (S, n)
    n_starts = u.shape[0]
    weighted = u * t.probability[None, :]
    order = np.argsort(t.group, kind="stable")
    bounds = np.searchsorted(t.group[order], np.arange(len(t.groups)))
    group_u = np.add.reduceat(weighted[:, order], bounds, axis=1)  # U(s) per group (eq. 1)
    s_idx = np.arange(n_starts)[:, None]
    arrival = np.array([a for a, _ in t.groups], dtype=np.int64)[None, :]
    group_u = np.where(s_idx >= arrival, group_u, -np.inf)
    best = np.argmax(group_u, axis=0)  # first maximum = earliest start
    best_u = group_u[best, np.arange(len(t.groups))]
    chosen = np.where(best_u > 0.0, best, -1)

    groups = tuple(
        GroupPlan(arrival=birth + a, signal=sig, start=None if s < 0 else birth + s, utility=u if s >= 0 else 0.0)
        for (a, sig), s, u in zip(t.groups, chosen.tolist(), best_u.tolist(), strict=True)
    )
    outcomes = _outcome_quotes(sow, birth, price, est, u, chosen)
    # fsum is exactly rounded: the total cannot depend on summation order, BLAS or CPU.
    total = math.fsum(o.probability * o.utility for o in outcomes)
    return LaunchPlan(birth=birth, groups=groups, outcomes=outcomes, utility=total)


def _outcome_quotes(sow: SoW, birth: int, prices: np.ndarray, est: FailureEstimates, u: np.ndarray,
                    chosen: np.ndarray) -> tuple[OutcomeQuote, ...]:
    """Price, failure estimates and utility of every outcome at its group's chosen start (vectorised; `prices` and
    `u` as `_utility_and_price` gives them)."""
    t = sow.table
    s = chosen[t.group]
    runs = s >= 0
    s0 = np.maximum(s, 0)
    column = np.arange(t.group.size)
    price = prices[s0, column].tolist()
    raw = est.raw[s0, t.duration - 1].tolist()
    announced = est.announced[s0, t.duration - 1].tolist()
    util = u[s0, column].tolist()
    out = []
    for i, (o, sig) in enumerate(zip(sow.outcomes, sow.signals, strict=True)):
        if runs[i]:
            out.append(OutcomeQuote(birth + o.arrival_offset, o.duration, sig, o.probability, birth + int(s[i]),
                                    price[i], raw[i], announced[i], util[i]))
        else:
            out.append(OutcomeQuote(birth + o.arrival_offset, o.duration, sig, o.probability,
                                    None, None, None, None, 0.0))
    return tuple(out)


__all__ = ["FailureEstimates", "GroupPlan", "LaunchPlan", "OutcomeQuote", "_plan_from_rows", "choose_plan",
           "utility_matrix"]
