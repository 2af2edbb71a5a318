"""Thm 3.2: against the same announced menu, truthful reporting maximises the agent's estimated utility."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism.engine import Engine
from mechanism.failure_exact import ExactOracle
from mechanism.launch_plan import FailureEstimates, LaunchPlan, choose_plan
from mechanism.sow import SoW
from tests.conftest import random_sow, small_platform


def true_utility(plan: LaunchPlan, reported: SoW, truth: SoW, engine: Engine, menu: Any = None) -> float:
    """Estimated utility under the TRUE SoW of following `plan` (chosen for `reported`) at the same menu (the
    engine's exponential one unless `menu`, e.g. bundle prices, is given).

    The job really needs truth.concurrency nodes: declaring fewer means it cannot run (0). It pays and risks
    failure at the declared concurrency. An arrival outside the declared support is refused (0).
    """
    if reported.concurrency < truth.concurrency:
        return 0.0
    p = engine.platform
    oracle = engine._current_oracle()
    est = FailureEstimates.from_raw(oracle.estimates(reported.concurrency), p.failure_threshold)
    menu = engine.prices.menu(engine.now) if menu is None else menu
    starts = {(g.arrival - plan.birth, g.signal): g.start for g in plan.groups}
    total = 0.0
    for o, sig in zip(truth.outcomes, truth.signals, strict=True):
        s = starts.get((o.arrival_offset, sig))
        if s is None:
            continue
        rel = s - engine.now
        keep = 1.0 - est.announced[rel, o.duration - 1]
        value = float(truth.value(rel + o.duration))
        total += o.probability * keep * (value - float(menu.price(s, reported.concurrency, o.duration)))
    return total


def engine_with_history(seed: int, samples: int = 400, jobs_below: int = 6,
                        overload: str = "newest") -> tuple[Engine, np.random.Generator]:
    """An engine that admitted fewer than `jobs_below` random SoWs over a few rounds, and the generator, to go on."""
    p = small_platform(C=4, samples=samples, seed=seed % 1000, overload=overload)
    rng = np.random.default_rng(seed)
    e = Engine(p)
    for i in range(int(rng.integers(0, jobs_below))):
        e.submit(f"bg{i}", random_sow(rng, p))
        if rng.random() < 0.3:
            e.advance()
    return e, rng


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["none", "duration"]), st.integers(0, 3),
       st.sampled_from(["newest", "newest_demanding"]))
def test_truthful_plan_is_never_beaten_by_a_misreport(seed: int, mode: str, kind: int, overload: str) -> None:
    e, _ = engine_with_history(seed, overload=overload)
    p = e.platform
    rng = np.random.default_rng(seed + 1)
    truth = random_sow(rng, p, max_outcomes=4, signal_mode=mode)
    if kind == 0:  # another distribution
        lie = random_sow(rng, p, max_outcomes=4, signal_mode=mode, concurrency=truth.concurrency)
        lie = lie.model_copy(update={"value_steps": truth.value_steps})
    elif kind == 1:  # other values
        lie = random_sow(rng, p, max_outcomes=4, signal_mode=mode, concurrency=truth.concurrency)
        lie = truth.model_copy(update={"value_steps": lie.value_steps})
    elif kind == 2:  # a lower concurrency (a higher one is the known exception below)
        lie = truth.model_copy(update={"concurrency": int(rng.integers(1, truth.concurrency + 1))})
    else:  # everything at once, at most the true concurrency
        lie = random_sow(
            rng, p, max_outcomes=4, signal_mode=mode, concurrency=int(rng.integers(1, truth.concurrency + 1))
        )
    lie = SoW.parse(lie.model_dump(), p)

    def plan_for(sow: SoW) -> LaunchPlan:
        est = FailureEstimates.from_raw(e._current_oracle().estimates(sow.concurrency), p.failure_threshold)
        return choose_plan(sow, e.now, e.prices.menu(e.now), est)

    honest = true_utility(plan_for(truth), truth, truth, e)
    lying = true_utility(plan_for(lie), lie, truth, e)
    assert honest >= lying - 1e-9 * max(1.0, abs(honest))
    assert honest >= 0.0


def test_over_reporting_concurrency_can_insure_against_losing_outcomes_a_known_exception() -> None:
    """Over-reporting concurrency is not covered by the argument of docs/model.md section 9: it changes the failure
    estimates and prices the job faces, not only which plan is chosen. Failed jobs pay nothing, so a concurrency
    that makes failure certain exactly for the outcomes that would lose money (here the longer durations of an
    arrival group whose signal does not tell them apart) turns their losses into 0 while the short outcome still
    completes. Found by the mutation review of session 7: 3 of 2,000 seeds of the property above (with over-reports
    allowed) in a scan. docs/design.md ("Decisions beyond the model") says so; a mechanism change that closes it
    fails here."""
    e, _ = engine_with_history(397)
    p = e.platform
    rng = np.random.default_rng(398)
    truth = random_sow(rng, p, max_outcomes=4, signal_mode="none")
    lie = SoW.parse(truth.model_copy(update={"concurrency": int(rng.integers(1, p.C_m + 1))}).model_dump(), p)
    assert (truth.concurrency, lie.concurrency) == (2, 3)

    def plan_for(sow: SoW) -> LaunchPlan:
        est = FailureEstimates.from_raw(e._current_oracle().estimates(sow.concurrency), p.failure_threshold)
        return choose_plan(sow, e.now, e.prices.menu(e.now), est)

    lying_plan = plan_for(lie)
    assert [o.failure for o in lying_plan.outcomes if o.start is not None] == [0.4175, 1.0, 1.0]  # long ones fail
    assert true_utility(plan_for(truth), truth, truth, e) == pytest.approx(0.0302, abs=1e-4)
    assert true_utility(lying_plan, lie, truth, e) == pytest.approx(0.7627, abs=1e-4)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["none", "duration"]))
def test_the_realised_gain_of_lying_is_at_most_2_mu_h(seed: int, mode: str) -> None:
    """docs/model.md section 9: with the true failure probabilities (exact enumeration) in place of the announced ones,
    a misreport gains at most 2 mu H, mu the largest gap between announced and true estimates (30 samples: mu is
    large, the bound is exercised)."""
    e, rng = engine_with_history(seed, samples=30, jobs_below=5)
    p = e.platform
    exact = ExactOracle(p, max_combinations=100_000)
    exact.reset(e.now, e.residuals())
    truth = random_sow(rng, p, max_outcomes=4, signal_mode=mode)
    lie = random_sow(rng, p, max_outcomes=4, signal_mode=mode)
    menu = e.prices.menu(e.now)
    gaps = []

    def realised(reported: SoW) -> float:
        est = FailureEstimates.from_raw(e._current_oracle().estimates(reported.concurrency), p.failure_threshold)
        true_e = exact.estimates(reported.concurrency)
        gaps.append(float(np.abs(est.announced - true_e).max()))
        plan = choose_plan(reported, e.now, menu, est)
        if reported.concurrency < truth.concurrency:
            return 0.0
        starts = {(g.arrival - plan.birth, g.signal): g.start for g in plan.groups}
        total = 0.0
        for o, sig in zip(truth.outcomes, truth.signals, strict=True):
            s = starts.get((o.arrival_offset, sig))
            if s is not None:
                rel = s - e.now
                total += o.probability * (1.0 - true_e[rel, o.duration - 1]) * (
                    float(truth.value(rel + o.duration)) - float(menu.price(s, reported.concurrency, o.duration)))
        return total

    honest, lying = realised(truth), realised(lie)
    assert lying - honest <= 2.0 * max(gaps) * p.H + 1e-9


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["none", "duration"]))
def test_reporting_the_true_arrival_and_signal_is_never_beaten_by_a_later_arrival_or_another_signal(
        seed: int, mode: str) -> None:
    """Sec. 6-7 after the quote: a job that is ready at a with signal sigma may instead report any later arrival or
    any other signal its SoW declares (it cannot report before it is ready) and so take that group's start. Under
    its true outcomes (those of group (a, sigma)), at the quote's prices and failure estimates, none of those starts
    beats the one the plan gives the truthful report: each is a start the plan could have chosen for (a, sigma)."""
    e, _ = engine_with_history(seed)
    p = e.platform
    truth = random_sow(np.random.default_rng(seed + 2), p, max_outcomes=5, signal_mode=mode)
    est = FailureEstimates.from_raw(e._current_oracle().estimates(truth.concurrency), p.failure_threshold)
    menu = e.prices.menu(e.now)
    assert_no_later_report_beats_the_truth(e, truth, menu, est)


def assert_no_later_report_beats_the_truth(e: Engine, truth: SoW, menu: Any, est: FailureEstimates) -> None:
    """Under the true outcomes of each group (a, sigma), at the quote's prices `menu` (exponential or bundle) and
    failure estimates `est`, no start the plan gives a report of a later arrival or another signal beats the start
    it gives the truthful one."""
    plan = choose_plan(truth, e.now, menu, est)

    def utility_under(group: tuple[int, object], start: int | None) -> float:
        """Estimated utility of starting at `start` for the outcomes of the true `group` (0 if never started)."""
        if start is None:
            return 0.0
        rel = start - e.now
        return sum(o.probability * (1.0 - est.announced[rel, o.duration - 1]) * (
            float(truth.value(rel + o.duration)) - float(menu.price(start, truth.concurrency, o.duration)))
            for o, sig in zip(truth.outcomes, truth.signals, strict=True) if (o.arrival_offset, sig) == group)

    starts = {(g.arrival - e.now, g.signal): g.start for g in plan.groups}
    for true_group, truthful_start in starts.items():
        honest = utility_under(true_group, truthful_start)
        assert honest >= 0.0
        for reported, start in starts.items():
            if reported[0] >= true_group[0]:  # reports no earlier than the job is ready
                lying = utility_under(true_group, start)
                assert honest >= lying - 1e-9 * max(1.0, abs(honest)), (true_group, reported)
