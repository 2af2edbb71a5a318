"""CP-SAT hindsight model: agrees with brute force, reports an honest status and gap, uses hints, validates."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism.offline.brute import combinations, solve_brute
from mechanism.offline.cpsat import CpSatParams, Strategy, build, combine, solve_cpsat
from mechanism.offline.hindsight import HindsightInstance, HindsightJob, OfflineResult
from mechanism.offline.instances import random_instance
from tests.offline_cases import HAND, HAND_OPTIMUM, HAND_SCHEDULE, TINY

FAST = CpSatParams(time_limit=10.0, workers=1)


@pytest.mark.parametrize("strategy", ["plain", "channel", "two_phase"])
def test_cpsat_proves_the_hand_computed_optimum(strategy: Strategy) -> None:
    result = solve_cpsat(HAND, CpSatParams(time_limit=10.0, workers=1, strategy=strategy))
    assert result.status == "optimal"
    assert result.value == HAND_OPTIMUM and result.bound == pytest.approx(HAND_OPTIMUM)
    assert result.starts == HAND_SCHEDULE
    assert result.solver == "cpsat" and result.solve_seconds is not None


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(1, 6), strategy=st.sampled_from(["plain", "channel"]))
def test_cpsat_optimum_equals_brute_force_on_tiny_instances(seed: int, n: int, strategy: Strategy) -> None:
    inst = random_instance(n, seed, TINY)
    if combinations(inst) > 200_000:
        return
    exact = solve_brute(inst)
    result = solve_cpsat(inst, CpSatParams(time_limit=10.0, workers=1, strategy=strategy))
    assert result.status == "optimal"
    assert result.value == pytest.approx(exact.value, abs=1e-6)
    assert result.bound >= exact.value - 1e-6
    inst.check_schedule(result.starts)


def test_cpsat_value_scale_rounding_is_added_to_the_bound() -> None:
    inst = HindsightInstance(1, (HindsightJob("x", 0, 0, 1, 1, ((1, 1.25),)),))
    result = solve_cpsat(inst, CpSatParams(time_limit=5.0, workers=1, value_scale=1.0))
    # 1.25 is rounded to 1 in the model; the bound must still cover the true value 1.25.
    assert result.value == 1.25 and result.bound >= 1.25
    assert build(inst, value_scale=1.0).rounding_slack == pytest.approx(0.25)


def test_cpsat_under_a_tiny_time_limit_reports_its_gap_honestly() -> None:
    inst = random_instance(400, 3)
    result = solve_cpsat(inst, CpSatParams(time_limit=0.3, workers=1))
    assert result.status in ("feasible", "unknown")
    assert result.bound >= result.value
    assert result.gap == pytest.approx((result.bound - result.value) / result.bound)
    assert result.gap > 0
    inst.check_schedule(result.starts)
    assert result.value == pytest.approx(inst.schedule_value(result.starts))


@pytest.mark.parametrize("strategy", ["channel", "two_phase"])
def test_cpsat_under_a_tiny_time_limit_keeps_bound_above_value_per_strategy(strategy: Strategy) -> None:
    inst = random_instance(200, 5)
    result = solve_cpsat(inst, CpSatParams(time_limit=0.5, workers=1, strategy=strategy))
    assert result.bound >= result.value
    assert result.optimal or result.gap > 0
    inst.check_schedule(result.starts)


def test_combine_keeps_the_better_schedule_and_the_tighter_bound() -> None:
    a = OfflineResult(10.0, 30.0, 2 / 3, "feasible", 1.0, {"x": 1}, "cpsat")
    b = OfflineResult(8.0, 12.0, 1 / 3, "feasible", 2.0, {"x": 2}, "cpsat")
    both = combine(a, b)
    assert (both.value, both.bound, both.starts, both.status, both.solve_seconds) == (10.0, 12.0, {"x": 1},
                                                                                      "feasible", 3.0)
    assert both.gap == pytest.approx(2 / 12)
    assert combine(a, OfflineResult(10.0, 10.0, 0.0, "optimal", 1.0, {"x": 3}, "cpsat")).status == "optimal"
    unknown = OfflineResult(0.0, 30.0, 1.0, "unknown", 1.0, {"x": None}, "cpsat")
    assert combine(unknown, unknown).status == "unknown"


def test_cpsat_with_the_optimal_hint_still_proves_the_optimum() -> None:
    result = solve_cpsat(HAND, CpSatParams(time_limit=10.0, workers=1, hint=HAND_SCHEDULE))
    assert result.status == "optimal" and result.value == HAND_OPTIMUM


def test_cpsat_hint_outside_valuable_starts_is_read_as_not_run() -> None:
    result = solve_cpsat(HAND, CpSatParams(time_limit=10.0, workers=1, hint={"A": 99, "B": None}))
    assert result.value == HAND_OPTIMUM


def test_cpsat_on_jobs_that_cannot_earn_returns_empty_optimum() -> None:
    inst = HindsightInstance(2, (HindsightJob("late", 0, 5, 2, 1, ((3, 4.0),)),))
    result = solve_cpsat(inst, FAST)
    assert result.status == "optimal" and result.value == 0.0 and result.starts == {"late": None}


@pytest.mark.parametrize(("kw", "match"), [
    ({"time_limit": 0.0}, "time_limit=0.0 must be above 0 seconds"),
    ({"workers": 0}, "workers=0 is below the bound 1"),
    ({"value_scale": 0.5}, "value_scale=0.5 is below the bound 1"),
    ({"strategy": "lns"}, "strategy='lns' is not one of plain, channel, two_phase"),
    ({"plain_share": 1.0}, "plain_share=1.0 must lie strictly between 0 and 1"),
])
def test_cpsat_params_validation_names_field_and_bound(kw: dict[str, float], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        CpSatParams(**kw)  # type: ignore[arg-type]
