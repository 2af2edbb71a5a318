"""Thm 3.2 under the stochastic pricing: against the same bundle menu, truthful reporting maximises the agent's
estimated utility (the properties of test_truthfulness.py, with Lemma E.2's prices)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism.engine import Engine
from mechanism.launch_plan import FailureEstimates, LaunchPlan, choose_plan
from mechanism.platform import Platform
from mechanism.sow import SoW
from tests.conftest import random_sow, small_platform
from tests.mechanism.test_truthfulness import assert_no_later_report_beats_the_truth, true_utility


def random_bundle_platform(rng: np.random.Generator, samples: int = 400, seed: int = 0) -> Platform:
    """small_platform (C = 4, C_m = 3) with 2 to 6 random bundles over rounds [0, 16)."""
    bundles = []
    for _ in range(int(rng.integers(2, 7))):
        cuts = np.sort(rng.choice(np.arange(0, 17), size=2 * int(rng.integers(1, 3)), replace=False))
        runs = [[int(cuts[i]), int(cuts[i + 1])] for i in range(0, cuts.size, 2)]
        runs = [r for i, r in enumerate(runs) if i == 0 or r[0] > runs[i - 1][1]]
        bundles.append({"price": float(rng.uniform(0.5, 15.0)), "rounds": runs})
    return small_platform(C=4, samples=samples, seed=seed, pricing="stochastic", bundles=bundles)


def engine_with_history(seed: int, samples: int = 400) -> tuple[Engine, np.random.Generator]:
    rng = np.random.default_rng(seed)
    e = Engine(random_bundle_platform(rng, samples=samples, seed=seed % 1000))
    for i in range(int(rng.integers(0, 6))):
        e.submit(f"bg{i}", random_sow(rng, e.platform, signal_mode="duration"))
        if rng.random() < 0.3:
            e.advance()
    return e, rng


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 3))
def test_truthful_plan_is_never_beaten_by_a_misreport_under_bundle_prices(seed: int, kind: int) -> None:
    e, _ = engine_with_history(seed)
    p = e.platform
    rng = np.random.default_rng(seed + 1)
    truth = random_sow(rng, p, max_outcomes=4, signal_mode="duration")
    if kind == 0:  # another distribution
        lie = random_sow(rng, p, max_outcomes=4, signal_mode="duration", concurrency=truth.concurrency)
        lie = lie.model_copy(update={"value_steps": truth.value_steps})
    elif kind == 1:  # other values
        lie = random_sow(rng, p, max_outcomes=4, signal_mode="duration", concurrency=truth.concurrency)
        lie = truth.model_copy(update={"value_steps": lie.value_steps})
    elif kind == 2:  # a lower concurrency
        lie = truth.model_copy(update={"concurrency": int(rng.integers(1, truth.concurrency + 1))})
    else:
        lie = random_sow(rng, p, max_outcomes=4, signal_mode="duration",
                         concurrency=int(rng.integers(1, truth.concurrency + 1)))
    lie = SoW.parse(lie.model_dump(), p)
    menu = e.current_menu()

    def plan_for(sow: SoW) -> LaunchPlan:
        est = FailureEstimates.from_raw(e._current_oracle().estimates(sow.concurrency), p.failure_threshold)
        return choose_plan(sow, e.now, menu, est)

    honest = true_utility(plan_for(truth), truth, truth, e, menu)
    lying = true_utility(plan_for(lie), lie, truth, e, menu)
    assert honest >= lying - 1e-9 * max(1.0, abs(honest))
    assert honest >= 0.0


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_reporting_the_true_arrival_is_never_beaten_under_bundle_prices(seed: int) -> None:
    """A job ready at a may report any later arrival its SoW declares (and the signal, its duration, of that
    group): none of those starts beats the truthful one under its true outcome."""
    e, _ = engine_with_history(seed)
    p = e.platform
    truth = random_sow(np.random.default_rng(seed + 2), p, max_outcomes=5, signal_mode="duration")
    est = FailureEstimates.from_raw(e._current_oracle().estimates(truth.concurrency), p.failure_threshold)
    menu = e.current_menu()
    assert_no_later_report_beats_the_truth(e, truth, menu, est)
