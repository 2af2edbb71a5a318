"""Launch plans (eq. 1-2): per (arrival, signal) group, the start that maximises estimated utility, or never."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Any

import numpy as np

from mechanism.pricing import PriceMenu
from mechanism.sow import Signal, SoW


@dataclass(frozen=True)
class FailureEstimates:
    """E(s, d) for start offsets s in [0, S_m) after birth and durations d in [1, D_m] (column d - 1)."""

    raw: np.ndarray  # float64, shape (S_m, D_m)
    announced: np.ndarray  # raw, with values <= epsilon/10 + eps0 zeroed

    @staticmethod
    def from_raw(raw: np.ndarray, threshold: float) -> FailureEstimates:
        return FailureEstimates(raw=raw, announced=np.where(raw > threshold, raw, 0.0))


@dataclass(frozen=True)
class GroupPlan:
    arrival: int  # absolute round
    signal: Signal
    start: int | None  # absolute round, None = never
    utility: float  # estimated utility U of the group at its chosen start (0 for never)


@dataclass(frozen=True)
class OutcomeQuote:
    arrival: int  # absolute round
    duration: int
    signal: Signal
    probability: float
    start: int | None
    price: float | None
    failure_raw: float | None
    failure: float | None
    utility: float  # (1 - E) (V(s + d) - pi_b(s, c, d)) at the chosen start; 0 for never


@dataclass(frozen=True)
class LaunchPlan:
    birth: int
    groups: tuple[GroupPlan, ...]
    outcomes: tuple[OutcomeQuote, ...]
    utility: float  # total estimated utility: sum over outcomes of P * utility

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle (server snapshots, archived completed jobs) as rows of plain tuples, not one dataclass state per
        group and outcome, with the rows' field names (one tuple each, shared by every plan in one pickle)."""
        return _plan_from_rows, (self.birth, tuple(map(_GROUP_ROW, self.groups)),
                                 tuple(map(_OUTCOME_ROW, self.outcomes)), self.utility, _GROUP_FIELDS, _OUTCOME_FIELDS)

    def start_for(self, arrival: int, signal: Signal) -> int | None:
        for g in self.groups:
            if g.arrival == arrival and g.signal == signal:
                return g.start
        raise KeyError((arrival, signal))

    def outcome_starts(self, sow: SoW) -> np.ndarray:
        """Start offset (relative to birth) per outcome of `sow`, -1 for never."""
        by_group = np.array([-1 if g.start is None else g.start - self.birth for g in self.groups], dtype=np.int64)
        return by_group[sow.table.group]


# Every field in declaration order (a field added later travels too, instead of coming back as its default).
_GROUP_FIELDS = tuple(f.name for f in fields(GroupPlan))
_OUTCOME_FIELDS = tuple(f.name for f in fields(OutcomeQuote))
_GROUP_ROW = attrgetter(*_GROUP_FIELDS)
_OUTCOME_ROW = attrgetter(*_OUTCOME_FIELDS)
# The rows' layout from 20ce32c until their field names were pickled with them (plans archived then keep it).
_FIRST_GROUP_FIELDS = ("arrival", "signal", "start", "utility")
_FIRST_OUTCOME_FIELDS = ("arrival", "duration", "signal", "probability", "start", "price", "failure_raw", "failure",
                         "utility")


def _plan_from_rows(birth: int, groups: tuple[tuple[Any, ...], ...], outcomes: tuple[tuple[Any, ...], ...],
                    utility: float, group_fields: tuple[str, ...] = _FIRST_GROUP_FIELDS,
                    outcome_fields: tuple[str, ...] = _FIRST_OUTCOME_FIELDS) -> LaunchPlan:
    """Unpickle a plan pickled by `LaunchPlan.__reduce__`. The store's archive keeps completed jobs' plans for good
    and pickles name this function, so it stays, and rows are read by the field names pickled with them: a plan
    written by code whose fields were different reads back field by field, not shifted."""
    return LaunchPlan(birth, _rows_as(GroupPlan, _GROUP_FIELDS, group_fields, groups),
                      _rows_as(OutcomeQuote, _OUTCOME_FIELDS, outcome_fields, outcomes), utility)


def _rows_as(
    cls: Any, own: tuple[str, ...], names: tuple[str, ...], rows: tuple[tuple[Any, ...], ...]
) -> tuple[Any, ...]:
    """`cls` (fields `own`) of each row holding the values of fields `names`: positionally when the layouts agree."""
    if names == own:
        return tuple(cls(*row) for row in rows)
    return tuple(cls(**dict(zip(names, row, strict=True))) for row in rows)


def utility_matrix(sow: SoW, birth: int, menu: PriceMenu, est: FailureEstimates) -> np.ndarray:
    """u[s, i] = (1 - E_bar(s, c, d_i)) (V(s + d_i) - pi_b(s, c, d_i)) for start offsets s in [0, S_m)."""
    t = sow.table
    n_starts = est.raw.shape[0]
    s = np.arange(n_starts, dtype=np.int64)[:, None]
    d = t.duration[None, :]
    value = sow.value(s + d)
    price = menu.price(birth + s, sow.concurrency, d)
    keep = 1.0 - est.announced[s, d - 1]
    return keep * (value - price)


def choose_plan(sow: SoW, birth: int, menu: PriceMenu, est: FailureEstimates) -> LaunchPlan:
    """argmax_s U(s) per group over s in [a, b + S_m - 1]; never when the best U <= 0; ties to the earliest."""
    t = sow.table
    u = utility_matrix(sow, birth, menu, est)  # (S, n)
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
    outcomes = _outcome_quotes(sow, birth, menu, est, u, chosen)
    # fsum is exactly rounded: the total cannot depend on summation order, BLAS or CPU.
    total = math.fsum(o.probability * o.utility for o in outcomes)
    return LaunchPlan(birth=birth, groups=groups, outcomes=outcomes, utility=total)


def _outcome_quotes(sow: SoW, birth: int, menu: PriceMenu, est: FailureEstimates, u: np.ndarray,
                    chosen: np.ndarray) -> tuple[OutcomeQuote, ...]:
    """Price, failure estimates and utility of every outcome at its group's chosen start (vectorised)."""
    t = sow.table
    s = chosen[t.group]
    runs = s >= 0
    s0 = np.maximum(s, 0)
    price = menu.price(birth + s0, sow.concurrency, t.duration).tolist()
    raw = est.raw[s0, t.duration - 1].tolist()
    announced = est.announced[s0, t.duration - 1].tolist()
    util = u[s0, np.arange(t.group.size)].tolist()
    out = []
    for i, (o, sig) in enumerate(zip(sow.outcomes, sow.signals, strict=True)):
        if runs[i]:
            out.append(OutcomeQuote(birth + o.arrival_offset, o.duration, sig, o.probability, birth + int(s[i]),
                                    price[i], raw[i], announced[i], util[i]))
        else:
            out.append(OutcomeQuote(birth + o.arrival_offset, o.duration, sig, o.probability,
                                    None, None, None, None, 0.0))
    return tuple(out)
