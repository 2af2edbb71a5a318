"""What a launch plan is: per (arrival, signal) group a start or never, per outcome its quote, and its pickle form.

How a plan is chosen (eq. 1-2) is mechanism/launch_plan.py; this module needs neither numpy nor pydantic, so a
client that reads quotes loads neither.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from operator import attrgetter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from mechanism.sow import Signal, SoW


# Every quote builds one GroupPlan per group and one OutcomeQuote per outcome: slotted, and constructed by setting each
# slot through its descriptor (the generated frozen __init__ calls object.__setattr__ per field, twice the time).
@dataclass(frozen=True, slots=True)
class GroupPlan:
    arrival: int  # absolute round
    signal: Signal
    start: int | None  # absolute round, None = never
    utility: float  # estimated utility U of the group at its chosen start (0 for never)

    def __init__(self, arrival: int, signal: Signal, start: int | None, utility: float) -> None:
        _set_arrival(self, arrival)
        _set_signal(self, signal)
        _set_start(self, start)
        _set_utility(self, utility)


@dataclass(frozen=True, slots=True)
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

    def __init__(self, arrival: int, duration: int, signal: Signal, probability: float, start: int | None,
                 price: float | None, failure_raw: float | None, failure: float | None, utility: float) -> None:
        _set_o_arrival(self, arrival)
        _set_duration(self, duration)
        _set_o_signal(self, signal)
        _set_probability(self, probability)
        _set_o_start(self, start)
        _set_price(self, price)
        _set_failure_raw(self, failure_raw)
        _set_failure(self, failure)
        _set_o_utility(self, utility)


_set_arrival, _set_signal, _set_start, _set_utility = (
    GroupPlan.__dict__[name].__set__ for name in ("arrival", "signal", "start", "utility"))
(_set_o_arrival, _set_duration, _set_o_signal, _set_probability, _set_o_start, _set_price, _set_failure_raw,
 _set_failure, _set_o_utility) = (
    OutcomeQuote.__dict__[name].__set__ for name in ("arrival", "duration", "signal", "probability", "start", "price",
                                                     "failure_raw", "failure", "utility"))


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
        import numpy as np  # here only: reading a plan (a client's quote) needs no numpy

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
