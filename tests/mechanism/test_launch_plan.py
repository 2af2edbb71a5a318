"""Launch plans equal a brute-force argmax of eq. (1); the toy example of seed 002 Sec. 1.1."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism.engine import Engine
from mechanism.launch_plan import FailureEstimates, choose_plan
from mechanism.pricing import PriceBook
from mechanism.sow import SoW
from models.workloads import toy_platform, toy_sow
from tests.conftest import random_sow, small_platform


def brute_force_plan(sow: SoW, birth: int, menu: object, est: FailureEstimates, S_m: int) -> dict[object, int | None]:
    """Try every start for every group with plain Python loops; never when the best utility is <= 0."""
    plan: dict[object, int | None] = {}
    for a, sig in sow.group_keys():
        best_u, best_s = 0.0, None
        for s in range(a, S_m):
            u = 0.0
            for o, osig in zip(sow.outcomes, sow.signals, strict=True):
                if (o.arrival_offset, osig) != (a, sig):
                    continue
                value = float(sow.value(s + o.duration))
                price = float(menu.price(birth + s, sow.concurrency, o.duration))  # type: ignore[attr-defined]
                u += o.probability * (1.0 - est.announced[s, o.duration - 1]) * (value - price)
            if u > best_u + 1e-9 * max(1.0, abs(best_u)):
                best_u, best_s = u, s
        plan[(a, sig)] = None if best_s is None else birth + best_s
    return plan


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["none", "duration"]))
def test_plan_equals_brute_force_argmax(seed: int, mode: str) -> None:
    p = small_platform(C=5, samples=100)
    rng = np.random.default_rng(seed)
    sow = random_sow(rng, p, max_outcomes=5, signal_mode=mode)
    book = PriceBook(p)
    book.commit(0, rng.uniform(0, 6, size=p.horizon))
    menu = book.menu(0)
    raw = rng.choice([0.0, 0.01, 0.3, 0.7, 1.0], size=(p.S_m, p.D_m))
    est = FailureEstimates.from_raw(raw, p.failure_threshold)
    plan = choose_plan(sow, 0, menu, est)
    expected = brute_force_plan(sow, 0, menu, est, p.S_m)
    assert {(g.arrival, g.signal): g.start for g in plan.groups} == expected


def test_plan_utility_is_the_probability_weighted_sum_of_outcome_utilities() -> None:
    p = small_platform(C=5, samples=100)
    sow = random_sow(np.random.default_rng(3), p, max_outcomes=5)
    plan = Engine(p).submit("a", sow).plan
    assert plan.utility == pytest.approx(sum(o.probability * o.utility for o in plan.outcomes))
    assert plan.utility == pytest.approx(sum(g.utility for g in plan.groups))


def test_announced_estimates_zero_values_at_or_below_the_threshold() -> None:
    raw = np.array([[0.0, 0.05, 0.06, 0.5]])
    est = FailureEstimates.from_raw(raw, 0.06)
    assert est.announced.tolist() == [[0.0, 0.0, 0.0, 0.5]]


def test_ties_go_to_never_when_the_best_utility_is_not_positive() -> None:
    p = small_platform(C=4, samples=100)
    sow = SoW.parse({"concurrency": 1, "value_steps": [[6, 1.0]], "outcomes": [[0, 1, 1.0]]}, p)
    book = PriceBook(p)
    book.commit(0, np.full(p.horizon, 100.0))  # every round costs more than the job is worth
    est = FailureEstimates.from_raw(np.zeros((p.S_m, p.D_m)), p.failure_threshold)
    assert choose_plan(sow, 0, book.menu(0), est).groups[0].start is None


def test_ties_between_starts_go_to_the_earliest() -> None:
    p = small_platform(C=4, samples=100)
    sow = SoW.parse({"concurrency": 1, "value_steps": [[6, 10.0]], "outcomes": [[1, 1, 1.0]]}, p)
    est = FailureEstimates.from_raw(np.zeros((p.S_m, p.D_m)), p.failure_threshold)
    assert choose_plan(sow, 0, PriceBook(p).menu(0), est).groups[0].start == 1


@pytest.mark.parametrize("X", range(1, 9))
def test_toy_example_starts_immediately_and_expected_welfare_is_x_plus_2_to_minus_x(X: int) -> None:
    """Seed 002 Sec. 1.1: scheduled on arrival the job earns sum_k P(k) V(k) = X + 2^-X: linear in X."""
    p = toy_platform(X, seed=0, samples=500)
    sow = toy_sow(X, p)
    plan = Engine(p).submit("toy", sow).plan
    assert all(g.start == g.arrival for g in plan.groups)
    started = [o for o in plan.outcomes if o.start is not None]
    assert len(started) == len(plan.outcomes)
    expected_welfare = sum(
        o.probability * float(sow.value(o.start + o.duration)) for o in started if o.start is not None
    )
    assert expected_welfare == pytest.approx(X + 2.0 ** -X, rel=1e-12)


def test_toy_simulated_welfare_per_job_grows_linearly_in_x() -> None:
    from models.simulation import run_simulation
    from models.workloads import make_workload

    per_job = {}
    for X in (2, 4, 6, 8):
        runs = [run_simulation(make_workload("toy", seed=s, X=X, jobs=60)) for s in range(3)]
        assert all(r.counts["completed"] == 60 for r in runs)
        per_job[X] = float(np.mean([r.welfare / 60 for r in runs]))
    slope = np.polyfit(list(per_job), list(per_job.values()), 1)[0]
    assert slope == pytest.approx(1.0, abs=0.25), per_job


def test_every_start_in_range_is_considered() -> None:
    p = small_platform(C=4, samples=100)
    sow = SoW.parse({"concurrency": 1, "value_steps": [[6, 10.0]], "outcomes": [[0, 1, 1.0]]}, p)
    rng = np.random.default_rng(0)
    for _ in range(20):
        raw = np.ones((p.S_m, p.D_m))
        free = int(rng.integers(0, p.S_m))
        raw[free, :] = 0.0  # only one start is safe
        est = FailureEstimates.from_raw(raw, p.failure_threshold)
        assert choose_plan(sow, 0, PriceBook(p).menu(0), est).groups[0].start == free


def test_a_pickled_launch_plan_unpickles_equal_field_for_field() -> None:
    import pickle
    from dataclasses import astuple
    rng = np.random.default_rng(5)
    e = Engine(small_platform())
    plans = []
    for i in range(30):
        plans.append(e.submit(f"j{i}", random_sow(rng, e.platform, max_outcomes=6, signal_mode="explicit")).plan)
        if i % 5 == 4:
            e.advance()
    assert any(g.start is None for p in plans for g in p.groups) and any(
        g.start is not None for p in plans for g in p.groups
    )
    for plan in plans:
        back = pickle.loads(pickle.dumps(plan, protocol=pickle.HIGHEST_PROTOCOL))
        assert back == plan
        # the same values of the same types in the same fields (an int start stays an int, a None price None)
        assert [tuple(map(type, astuple(x))) for x in back.outcomes] == [
            tuple(map(type, astuple(x))) for x in plan.outcomes
        ]
        assert [astuple(x) for x in back.groups] == [astuple(x) for x in plan.groups]


def test_a_never_group_is_worth_exactly_0_and_its_outcomes_start_at_minus_1() -> None:
    # Arriving at offset 0 the job runs at once: 0.5 (10 - p(0)) with p(0) = 1 / (2 D_m) = 1/6. Arriving at
    # offset 4 it completes at 5 > k = 2: worth 0, it would only pay, so never, worth 0 (not the -1/6 of a start).
    p = small_platform(C=4, samples=100)
    sow = SoW.parse({"concurrency": 1, "value_steps": [[2, 10.0]], "outcomes": [[0, 1, 0.5], [4, 1, 0.5]]}, p)
    est = FailureEstimates.from_raw(np.zeros((p.S_m, p.D_m)), p.failure_threshold)
    plan = choose_plan(sow, 0, PriceBook(p).menu(0), est)
    assert [(g.arrival, g.start) for g in plan.groups] == [(0, 0), (4, None)]
    assert plan.groups[0].utility == pytest.approx(0.5 * (10.0 - 1.0 / 6.0), rel=1e-12)
    assert plan.groups[1].utility == 0.0
    assert plan.utility == pytest.approx(0.5 * (10.0 - 1.0 / 6.0), rel=1e-12)
    assert plan.outcome_starts(sow).tolist() == [0, -1]


def test_utility_uses_the_announced_estimate_and_the_quote_carries_both() -> None:
    # Threshold epsilon/10 + eps0 = 0.01 + 0.05 = 0.06. E_raw(0, 1) = 0.05 is announced as 0, so every start in
    # [0, 5] is worth 10 - 1/6 and the tie goes to the earliest, 0 (with the raw 0.05, start 0 would lose to 1).
    p = small_platform(C=4, samples=100)
    sow = SoW.parse({"concurrency": 1, "value_steps": [[6, 10.0]], "outcomes": [[0, 1, 1.0]]}, p)
    raw = np.zeros((p.S_m, p.D_m))
    raw[0, 0] = 0.05
    plan = choose_plan(sow, 0, PriceBook(p).menu(0), FailureEstimates.from_raw(raw, p.failure_threshold))
    (o,) = plan.outcomes
    assert (o.start, o.failure_raw, o.failure) == (0, 0.05, 0.0)
    assert o.utility == pytest.approx(10.0 - 1.0 / 6.0, rel=1e-12)


def test_a_plan_pickles_every_field_of_its_groups_outcome_quotes_and_itself_in_declaration_order() -> None:
    # GroupPlan(*row) and OutcomeQuote(*row) rebuild them positionally: a field added or moved must move the rows
    # too (an added field with a default would otherwise come back as its default, silently).
    from dataclasses import fields

    from mechanism.plans import _GROUP_ROW, _OUTCOME_ROW, GroupPlan, LaunchPlan, OutcomeQuote
    group = GroupPlan(*range(len(fields(GroupPlan))))  # a distinct value in every field
    quote = OutcomeQuote(*range(len(fields(OutcomeQuote))))
    assert _GROUP_ROW(group) == tuple(range(len(fields(GroupPlan))))
    assert _OUTCOME_ROW(quote) == tuple(range(len(fields(OutcomeQuote))))
    plan = LaunchPlan(7, (group,), (quote,), 0.5)
    rebuild, args = plan.__reduce__()
    n = len(fields(LaunchPlan))  # its own fields, then the rows' field names
    assert args[n:] == (tuple(f.name for f in fields(GroupPlan)), tuple(f.name for f in fields(OutcomeQuote)))
    assert rebuild(*args) == plan


def test_a_group_plans_and_an_outcome_quotes_constructors_set_exactly_their_fields_in_declaration_order() -> None:
    # Their __init__ is written out (each slot set through its descriptor): it must stay the generated one's.
    import copy
    import inspect
    import pickle
    from dataclasses import FrozenInstanceError, asdict, fields, replace
    from typing import Any

    from mechanism.plans import GroupPlan, OutcomeQuote
    for cls in (GroupPlan, OutcomeQuote):
        names = [f.name for f in fields(cls)]
        assert list(inspect.signature(cls).parameters) == names
        values: list[Any] = [f"v{i}" for i in range(len(names))]
        obj = cls(*values)
        assert asdict(obj) == dict(zip(names, values, strict=True))
        assert cls(**asdict(obj)) == obj and hash(cls(**asdict(obj))) == hash(obj)
        assert pickle.loads(pickle.dumps(obj)) == obj == copy.deepcopy(obj)
        never: list[Any] = [None if n == "start" else v for n, v in zip(names, values, strict=True)]
        assert replace(obj, start=None) == cls(*never)
        with pytest.raises(FrozenInstanceError, match="cannot assign"):
            obj.start = 1  # type: ignore[misc]


def test_a_pickled_plan_reads_back_by_field_name_under_a_changed_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    # Archived completed jobs keep their plans for good (server/archive.py pickles each ended Job once), and a
    # server of later code reads them: a field added or moved in GroupPlan or OutcomeQuote must not shift the old
    # rows' values into other fields.
    import pickle
    from dataclasses import asdict, dataclass, fields

    from mechanism import plans
    from mechanism.plans import GroupPlan, LaunchPlan, OutcomeQuote
    plan = LaunchPlan(0, (GroupPlan(4, "s", 5, 2.5),), (OutcomeQuote(4, 2, "s", 1.0, 5, 0.25, 0.5, 0.75, 2.5),), 2.5)
    blob = pickle.dumps(plan, protocol=pickle.HIGHEST_PROTOCOL)

    @dataclass(frozen=True)
    class LaterGroupPlan:  # a field added in front, the others reordered
        priority: int = 0
        start: int | None = None
        utility: float = 0.0
        signal: str | None = None
        arrival: int = 0

    @dataclass(frozen=True)
    class LaterOutcomeQuote:
        note: str = ""
        utility: float = 0.0
        failure: float | None = None
        failure_raw: float | None = None
        price: float | None = None
        start: int | None = None
        probability: float = 0.0
        signal: str | None = None
        duration: int = 0
        arrival: int = 0

    for name, later in (("GroupPlan", LaterGroupPlan), ("OutcomeQuote", LaterOutcomeQuote)):  # the later code
        monkeypatch.setattr(plans, name, later)
    monkeypatch.setattr(plans, "_GROUP_FIELDS", tuple(f.name for f in fields(LaterGroupPlan)))
    monkeypatch.setattr(plans, "_OUTCOME_FIELDS", tuple(f.name for f in fields(LaterOutcomeQuote)))
    back = pickle.loads(blob)
    assert asdict(back.groups[0]) == {**asdict(plan.groups[0]), "priority": 0}
    assert asdict(back.outcomes[0]) == {**asdict(plan.outcomes[0]), "note": ""}


def test_a_plan_pickled_before_its_field_names_travelled_reads_back_equal() -> None:
    # the layout rows had from 20ce32c until the names went with them: plans archived then stay readable
    from mechanism.launch_plan import GroupPlan, LaunchPlan, OutcomeQuote, _plan_from_rows
    group, quote = GroupPlan(4, None, None, 0.0), OutcomeQuote(4, 2, None, 1.0, None, None, None, None, 0.0)
    assert _plan_from_rows(3, ((4, None, None, 0.0),), ((4, 2, None, 1.0, None, None, None, None, 0.0),), 0.0) \
        == LaunchPlan(3, (group,), (quote,), 0.0)


def test_a_plan_pickled_under_the_launch_plan_module_name_reads_back_equal() -> None:
    # plans archived before plans.py existed name mechanism.launch_plan._plan_from_rows in their pickles
    import pickle

    from mechanism.plans import GroupPlan, LaunchPlan, OutcomeQuote
    plan = LaunchPlan(0, (GroupPlan(4, "s", 5, 2.5),), (OutcomeQuote(4, 2, "s", 1.0, 5, 0.25, 0.5, 0.75, 2.5),), 2.5)
    blob = pickle.dumps(plan, protocol=pickle.HIGHEST_PROTOCOL)
    assert b"mechanism.plans" in blob
    old = blob.replace(b"\x8c\x0fmechanism.plans", b"\x8c\x15mechanism.launch_plan")
    assert old != blob and pickle.loads(old) == plan


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 9), st.integers(1, 9), st.sampled_from([0.0, 0.06, 0.5, 1.0]))
def test_the_compiled_announced_estimates_are_nps_where_raw_is_above_the_threshold(seed: int, rows: int, cols: int,
                                                                                  threshold: float) -> None:
    rng = np.random.default_rng(seed)
    raw = rng.choice([0.0, -0.0, 0.06, 0.0600001, 0.5, 1.0, np.nan, np.inf], size=(rows, cols))
    want = np.where(raw > threshold, raw, 0.0)
    got = FailureEstimates.from_raw(raw, threshold).announced
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    fortran = FailureEstimates.from_raw(np.asfortranarray(raw), threshold).announced  # any layout
    assert fortran.tobytes() == want.tobytes()
