"""Launch plans (eq. 1-2): per (arrival, signal) group, the start that maximises estimated utility, or never."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

# What a plan is lives in plans.py (a client reading a quote needs no numpy); it is named here too, where older
# pickles of archived plans look for it (`mechanism.launch_plan._plan_from_rows`).
from mechanism.plans import GroupPlan, LaunchPlan, OutcomeQuote, _plan_from_rows
from mechanism.pricing import Menu, PriceMenu
from mechanism.sow import SoW


@dataclass(frozen=True)
class FailureEstimates:
    """E(s, d) for start offsets s in [0, S_m) after birth and durations d in [1, D_m] (column d - 1)."""

    raw: np.ndarray  # float64, shape (S_m, D_m)
    announced: np.ndarray  # raw, with values <= epsilon/10 + eps0 zeroed

    @staticmethod
    def from_raw(raw: np.ndarray, threshold: float) -> FailureEstimates:
        """The announced estimates zero every raw one not above `threshold` (np.where(raw > threshold, raw, 0.0),
        compiled for the (S_m, D_m) float arrays the oracles give)."""
        if raw.ndim == 2 and raw.dtype == np.float64:
            return FailureEstimates(raw=raw, announced=_announced(raw, threshold))
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
    n_starts = est.raw.shape[0]
    if isinstance(menu, Menu):  # the window sums compiled; any other menu prices the (s, d) grid itself
        price = menu.start_prices(n_starts, sow.concurrency, t.duration)
    else:
        price = menu.price(birth + np.arange(n_starts, dtype=np.int64)[:, None], sow.concurrency,
                           t.duration[None, :])
    u, weighted = _utilities(price, t.deadline, t.step_value, est.announced, t.duration, t.probability)
    singleton = len(t.groups) == t.group.size  # one outcome per group: U(s) of a group is its outcome's P u
    # U(s) per group (eq. 1), each group's terms added as numpy adds them
    group_u = weighted if singleton else _group_sums(weighted, t.group, len(t.groups))
    chosen, best_u, start, o_price, o_raw, o_announced, o_util = _best_starts(
        group_u, singleton, t.group, t.group_arrival, u, price, est.raw, est.announced, t.duration)

    groups = tuple(
        GroupPlan(birth + a, sig, birth + s, u) if s >= 0 else GroupPlan(birth + a, sig, None, 0.0)
        for (a, sig), s, u in zip(t.groups, chosen.tolist(), best_u.tolist(), strict=True)
    )
    outcomes = tuple(
        OutcomeQuote(birth + o.arrival_offset, o.duration, sig, o.probability, birth + s, pr, raw, announced, util)
        if s >= 0 else OutcomeQuote(birth + o.arrival_offset, o.duration, sig, o.probability, None, None, None, None,
                                    0.0)
        for o, sig, s, pr, raw, announced, util in zip(
            sow.outcomes, sow.signals, start.tolist(), o_price.tolist(), o_raw.tolist(), o_announced.tolist(),
            o_util.tolist(), strict=True)
    )
    # fsum is exactly rounded: the total cannot depend on summation order, BLAS or CPU.
    total = math.fsum(o.probability * o.utility for o in outcomes)
    return LaunchPlan(birth=birth, groups=groups, outcomes=outcomes, utility=total)


@numba.njit(cache=True, nogil=True)
def _announced(raw: np.ndarray, threshold: float) -> np.ndarray:  # pragma: no cover (compiled)
    """raw where raw > threshold, else 0.0 (NaN too), as np.where gives it."""
    out = np.empty(raw.shape)
    for s in range(raw.shape[0]):
        for d in range(raw.shape[1]):
            x = raw[s, d]
            out[s, d] = x if x > threshold else 0.0
    return out


def _group_sums(weighted: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    """[s, g] = the sum of column s of the outcomes of group g, in outcome order, as np.add.reduceat adds them."""
    order = np.argsort(group, kind="stable")
    bounds = np.searchsorted(group[order], np.arange(n_groups))
    return np.add.reduceat(weighted[:, order], bounds, axis=1)


@numba.njit(cache=True, nogil=True)
def _utilities(price: np.ndarray, deadline: np.ndarray, step_value: np.ndarray, announced: np.ndarray,
               duration: np.ndarray, probability: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover
    """u[s, i] = (1 - announced[s, d_i - 1]) (V(s + d_i) - price[s, i]) and u[s, i] P_i: numpy's operations, one by
    one (no fused multiply-add, no reordering: the same IEEE results). V(f) is step_value at the first deadline
    >= f (`SoW.value`'s searchsorted), the trailing 0 past the last."""
    n_starts, n = price.shape
    u = np.empty((n_starts, n))
    weighted = np.empty((n_starts, n))
    for s in range(n_starts):
        for i in range(n):
            f, j = s + duration[i], 0
            while j < deadline.size and deadline[j] < f:
                j += 1
            x = (1.0 - announced[s, duration[i] - 1]) * (step_value[j] - price[s, i])
            u[s, i] = x
            weighted[s, i] = x * probability[i]
    return u, weighted


@numba.njit(cache=True, nogil=True)
def _best_starts(group_u: np.ndarray, singleton: bool, group: np.ndarray, arrival: np.ndarray, u: np.ndarray,
                 price: np.ndarray, raw: np.ndarray, announced: np.ndarray,
                 duration: np.ndarray) -> tuple[np.ndarray, ...]:  # pragma: no cover (compiled)
    """Per group the first start of greatest U(s) from its arrival on (-inf before it, NaN greatest, as np.argmax),
    -1 for never (that U not > 0), and that U; per outcome its group's start and the price, raw and announced
    estimates and utility there (row 0 for never). `group_u` has a column per group, or per outcome if `singleton`."""
    n_starts = group_u.shape[0]
    n_groups, n = arrival.size, group.size
    column = np.arange(n_groups)
    if singleton:
        for i in range(n):
            column[group[i]] = i
    chosen = np.empty(n_groups, dtype=np.int64)
    best_u = np.empty(n_groups)
    for g in range(n_groups):
        c, a = column[g], arrival[g]
        best, top = 0, -np.inf if a > 0 else group_u[0, c]
        if not np.isnan(top):
            for s in range(1, n_starts):
                x = -np.inf if s < a else group_u[s, c]
                if not x <= top:  # greater, or NaN (the first NaN wins, as in np.argmax)
                    best, top = s, x
                    if np.isnan(x):
                        break
        chosen[g] = best if top > 0.0 else -1
        best_u[g] = top
    start = np.empty(n, dtype=np.int64)
    o_price, o_raw, o_announced, o_util = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    for i in range(n):
        s = chosen[group[i]]
        start[i] = s
        r = max(s, 0)
        o_price[i] = price[r, i]
        o_raw[i] = raw[r, duration[i] - 1]
        o_announced[i] = announced[r, duration[i] - 1]
        o_util[i] = u[r, i]
    return chosen, best_u, start, o_price, o_raw, o_announced, o_util


__all__ = ["FailureEstimates", "GroupPlan", "LaunchPlan", "OutcomeQuote", "_plan_from_rows", "choose_plan",
           "utility_matrix"]
