"""choose_plan and plan_usage give bit for bit what their plain reference forms (kept here) give, on random inputs."""

from __future__ import annotations

import math
import pickle
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism.launch_plan import FailureEstimates, choose_plan
from mechanism.plans import GroupPlan, LaunchPlan, OutcomeQuote
from mechanism.pricing import PriceBook, PriceMenu, plan_usage
from mechanism.sow import SoW
from tests.conftest import small_platform

# ---- the reference forms: one numpy expression per step, one Python object per outcome built field by field ----


def reference_utility_and_price(sow: SoW, birth: int, menu: PriceMenu,
                                est: FailureEstimates) -> tuple[np.ndarray, np.ndarray]:
    t = sow.table
    n_starts = est.raw.shape[0]
    s = np.arange(n_starts, dtype=np.int64)[:, None]
    d = t.duration[None, :]
    value = sow.value(s + d)
    price = menu.price(birth + s, sow.concurrency, d)
    keep = 1.0 - est.announced[s, d - 1]
    return keep * (value - price), price


def reference_choose_plan(sow: SoW, birth: int, menu: PriceMenu, est: FailureEstimates) -> LaunchPlan:
    t = sow.table
    u, price = reference_utility_and_price(sow, birth, menu, est)
    n_starts = u.shape[0]
    weighted = u * t.probability[None, :]
    order = np.argsort(t.group, kind="stable")
    bounds = np.searchsorted(t.group[order], np.arange(len(t.groups)))
    group_u = np.add.reduceat(weighted[:, order], bounds, axis=1)
    s_idx = np.arange(n_starts)[:, None]
    arrival = np.array([a for a, _ in t.groups], dtype=np.int64)[None, :]
    group_u = np.where(s_idx >= arrival, group_u, -np.inf)
    best = np.argmax(group_u, axis=0)
    best_u = group_u[best, np.arange(len(t.groups))]
    chosen = np.where(best_u > 0.0, best, -1)
    groups = tuple(
        GroupPlan(arrival=birth + a, signal=sig, start=None if s < 0 else birth + s, utility=u if s >= 0 else 0.0)
        for (a, sig), s, u in zip(t.groups, chosen.tolist(), best_u.tolist(), strict=True)
    )
    s = chosen[t.group]
    s0 = np.maximum(s, 0)
    column = np.arange(t.group.size)
    prices = price[s0, column].tolist()
    raw = est.raw[s0, t.duration - 1].tolist()
    announced = est.announced[s0, t.duration - 1].tolist()
    util = u[s0, column].tolist()
    outcomes = []
    for i, (o, sig) in enumerate(zip(sow.outcomes, sow.signals, strict=True)):
        if s[i] >= 0:
            outcomes.append(OutcomeQuote(birth + o.arrival_offset, o.duration, sig, o.probability, birth + int(s[i]),
                                         prices[i], raw[i], announced[i], util[i]))
        else:
            outcomes.append(OutcomeQuote(birth + o.arrival_offset, o.duration, sig, o.probability,
                                         None, None, None, None, 0.0))
    total = math.fsum(o.probability * o.utility for o in outcomes)
    return LaunchPlan(birth=birth, groups=groups, outcomes=tuple(outcomes), utility=total)


def reference_plan_usage(concurrency: int, probability: np.ndarray, start_offset: np.ndarray,
                         duration: np.ndarray, length: int) -> np.ndarray:
    run = start_offset >= 0
    diff = np.zeros(length + 1, dtype=np.float64)
    np.add.at(diff, start_offset[run], probability[run])
    np.add.at(diff, start_offset[run] + duration[run], -probability[run])
    inc = np.cumsum(diff[:-1]) * concurrency
    cover = np.zeros(length + 1, dtype=np.int64)
    np.add.at(cover, start_offset[run], 1)
    np.add.at(cover, start_offset[run] + duration[run], -1)
    return np.where(np.cumsum(cover[:-1]) > 0, np.maximum(inc, 0.0), 0.0)


# ---- inputs ----

P = small_platform(C=6, samples=100, C_m=4, D_m=5, S_m=8)


def bits(x: Any) -> Any:
    """Every float as its exact bits (0.0 and -0.0 differ), every other value with its type."""
    if isinstance(x, float):
        return ("float", x.hex())
    if isinstance(x, tuple | list):
        return tuple(bits(v) for v in x)
    if isinstance(x, GroupPlan | OutcomeQuote | LaunchPlan):
        return (type(x).__name__, tuple(bits(getattr(x, f)) for f in x.__dataclass_fields__))
    return (type(x).__name__, x)


@st.composite
def sows(draw: st.DrawFn) -> SoW:
    """SoWs of 1-12 outcomes in any order; explicit labels from a few letters make groups of one and of several,
    listed in an order the outcomes are not."""
    mode = draw(st.sampled_from(["explicit", "none", "duration"]))
    pairs = draw(st.lists(st.tuples(st.integers(0, P.S_m - 1), st.integers(1, P.D_m)), min_size=1, max_size=12,
                          unique=True))
    weights = draw(st.lists(st.integers(1, 9), min_size=len(pairs), max_size=len(pairs)))
    labels = draw(st.lists(st.sampled_from(["b", "a", "2", "10"]), min_size=len(pairs), max_size=len(pairs)))
    total = sum(weights)
    outcomes: list[list[Any]] = []
    for (a, d), w, label in zip(pairs, weights, labels, strict=True):
        row: list[Any] = [a, d, w / total]
        if mode == "explicit":
            row.append(label)
        outcomes.append(row)
    outcomes[-1][2] = 1.0 - math.fsum(o[2] for o in outcomes[:-1])
    steps = draw(st.lists(st.integers(1, P.S_m), min_size=1, max_size=3, unique=True))
    values = sorted(draw(st.lists(st.floats(1.0, P.H), min_size=len(steps), max_size=len(steps), unique=True)),
                    reverse=True)
    return SoW.parse({"concurrency": draw(st.integers(1, P.C_m)), "value_steps": list(zip(sorted(steps), values,
                      strict=True)), "outcomes": outcomes, "signal_mode": mode}, P)


@settings(max_examples=300, deadline=None)
@given(sows(), st.integers(0, 40), st.integers(0, 2**32 - 1), st.sampled_from([0.0, 3.0, 30.0]))
def test_choose_plan_equals_the_reference_form_bit_for_bit(sow: SoW, birth: int, seed: int, load: float) -> None:
    rng = np.random.default_rng(seed)
    book = PriceBook(P)
    book.commit(birth, rng.uniform(0.0, load, size=P.horizon))  # 0: every price equal, ties everywhere
    menu = book.menu(birth)
    # few distinct values: equal utilities across starts (ties to the earliest) and zero utilities (never)
    raw = rng.choice([0.0, 0.01, 0.3, 0.7, 1.0], size=(P.S_m, P.D_m))
    est = FailureEstimates.from_raw(raw, P.failure_threshold)
    plan = choose_plan(sow, birth, menu, est)
    expected = reference_choose_plan(sow, birth, menu, est)
    assert bits(plan) == bits(expected)
    assert pickle.dumps(plan) == pickle.dumps(expected)


class TableMenu:
    """Any prices per (start offset, duration), infinite ones too: pi(s, c, d) = c * table[s - birth, d - 1]."""

    def __init__(self, birth: int, table: np.ndarray) -> None:
        self.birth, self.table = birth, table

    def price(self, start: np.ndarray | int, concurrency: int, duration: np.ndarray | int) -> np.ndarray:
        return concurrency * self.table[np.asarray(start) - self.birth, np.asarray(duration) - 1]


@settings(max_examples=300, deadline=None)
@given(sows(), st.integers(0, 2**32 - 1))
def test_choose_plan_equals_the_reference_form_where_utilities_are_infinite_or_nan(sow: SoW, seed: int) -> None:
    # an infinite price where the job surely fails (announced 1) makes 0 * -inf = NaN: argmax takes the first NaN
    rng = np.random.default_rng(seed)
    menu = TableMenu(3, rng.choice([0.0, 1.0, 40.0, 1e300, np.inf], size=(P.S_m, P.D_m)))
    est = FailureEstimates.from_raw(rng.choice([0.0, 0.3, 1.0], size=(P.S_m, P.D_m)), P.failure_threshold)
    with np.errstate(invalid="ignore", over="ignore"):
        plan = choose_plan(sow, 3, menu, est)
        expected = reference_choose_plan(sow, 3, menu, est)
    assert bits(plan) == bits(expected)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(-1, 9), st.integers(1, 6), st.floats(1e-6, 1.0)), min_size=0, max_size=20),
       st.integers(1, 8))
def test_plan_usage_equals_the_reference_form_bit_for_bit(rows: list[tuple[int, int, float]],
                                                          concurrency: int) -> None:
    start = np.array([r[0] for r in rows], dtype=np.int64)
    duration = np.array([r[1] for r in rows], dtype=np.int64)
    probability = np.array([r[2] for r in rows], dtype=np.float64)
    inc = plan_usage(concurrency, probability, start, duration, 16)
    assert inc.dtype == np.float64
    assert inc.tobytes() == reference_plan_usage(concurrency, probability, start, duration, 16).tobytes()


def test_plan_usage_refuses_an_outcome_that_runs_past_its_length() -> None:
    with pytest.raises(ValueError, match="runs until offset 7, past the 6 rounds"):
        plan_usage(1, np.array([0.5, 0.5]), np.array([4, -1]), np.array([3, 9]), 6)
