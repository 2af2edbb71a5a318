"""Window LNS: never loses value, keeps schedules feasible, and with one window over everything finds the optimum."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.offline.brute import combinations, solve_brute
from models.offline.cpsat import CpSatParams, solve_cpsat
from models.offline.greedy import density_greedy
from models.offline.hindsight import HindsightInstance, HindsightJob
from models.offline.instances import random_instance
from models.offline.lns import LnsParams, improve, is_free
from tests.offline_cases import HAND, HAND_OPTIMUM, HAND_SCHEDULE, TINY, enumerable


def test_one_window_freeing_every_job_reaches_the_optimum() -> None:
    # From A alone at 0 (value 10), the window [0, 4) frees every job.
    result = improve(HAND, {"A": 0, "B": None, "C": None}, LnsParams(window=4, step=4, time_limit=10.0))
    assert result.value == HAND_OPTIMUM and result.starts == HAND_SCHEDULE
    assert result.improved == 1 and result.windows == 2  # the improving pass, then one that changes nothing


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(1, 6), window=st.integers(1, 4), step=st.integers(1, 4))
def test_window_lns_never_loses_value_and_stays_feasible(seed: int, n: int, window: int, step: int) -> None:
    inst = random_instance(n, seed, TINY)
    start = density_greedy(inst)
    result = improve(inst, start, LnsParams(window=window, step=step, window_time=2.0, time_limit=5.0))
    inst.check_schedule(result.starts)
    assert result.value == pytest.approx(inst.schedule_value(result.starts))
    assert result.value >= inst.schedule_value(start) - 1e-9
    if combinations(inst) <= 200_000:
        assert result.value <= solve_brute(inst).value + 1e-9


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(1, 6))
def test_a_window_over_the_whole_horizon_reaches_the_brute_force_optimum(seed: int, n: int) -> None:
    inst = enumerable(seed, n)
    whole = max(inst.horizon, 1)
    result = improve(inst, {j.id: None for j in inst.jobs}, LnsParams(window=whole, step=whole, time_limit=10.0))
    assert result.value == pytest.approx(solve_brute(inst).value, abs=1e-6)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(1, 6))
def test_two_phase_with_window_lns_proves_the_brute_force_optimum(seed: int, n: int) -> None:
    inst = enumerable(seed, n)
    result = solve_cpsat(inst, CpSatParams(time_limit=10.0, workers=1, lns_share=0.3, bound_model="indexed"))
    assert result.status == "optimal"
    assert result.value == pytest.approx(solve_brute(inst).value, abs=1e-6)
    inst.check_schedule(result.starts)


def test_a_window_frees_run_jobs_starting_in_it_and_idle_jobs_that_could_start_in_it() -> None:
    a_job = HAND.by_id()["A"]  # valuable starts 0..2
    assert is_free(a_job, 1, 1, 3) and not is_free(a_job, 0, 1, 3)
    assert is_free(a_job, None, 2, 5) and not is_free(a_job, None, 3, 5)



def test_a_window_is_half_open_for_run_jobs_and_idle_jobs() -> None:
    a_job, c_job = HAND.by_id()["A"], HAND.by_id()["C"]  # A: valuable starts 0..2; C: only 1
    assert is_free(a_job, 1, 0, 2) and not is_free(a_job, 2, 0, 2)  # a run job starting at b is not freed
    assert not is_free(c_job, None, 0, 1) and is_free(c_job, None, 1, 2)  # nor an idle job arriving at b


def test_jobs_outside_the_only_window_keep_their_start_or_stay_out() -> None:
    # C = 1, one window [0, 1) per pass (step 100). It frees only Y (run at 0). Z runs at 3 though 1 would earn
    # 9 instead of 1, and X (arriving at 2) is out though it would earn 5: neither may change.
    inst = HindsightInstance(1, (
        HindsightJob("Y", 0, 0, 1, 1, ((1, 1.0),)),
        HindsightJob("Z", 0, 1, 1, 1, ((3, 9.0), (6, 1.0))),
        HindsightJob("X", 0, 2, 1, 1, ((5, 5.0),)),
    ))
    start: dict[str, int | None] = {"Y": 0, "Z": 3, "X": None}
    result = improve(inst, start, LnsParams(window=1, step=100, time_limit=5.0))
    assert result.starts == start and result.value == 2.0
    assert (result.windows, result.improved) == (1, 0)


def test_the_first_and_the_last_window_of_the_horizon_are_solved() -> None:
    # V can only start at 0, W only at 3 (arrival 3, last deadline 4): the windows are [0, 2) and [2, 4), the
    # first frees only V and the last only W.
    inst = HindsightInstance(
        1, (HindsightJob("V", 0, 0, 1, 1, ((1, 4.0),)), HindsightJob("W", 0, 3, 1, 1, ((4, 5.0),)))
    )
    result = improve(inst, {"V": None, "W": None}, LnsParams(window=2, step=2, time_limit=5.0))
    assert result.starts == {"V": 0, "W": 3} and result.value == 9.0


def test_a_window_gets_at_most_the_time_left_of_the_limit() -> None:
    # One window over all 200 jobs may take 1 unit of deterministic time, but only 0.05 are left of the limit.
    inst = random_instance(200, 5)
    params = LnsParams(window=1000, step=1000, window_time=1.0, time_limit=0.05, deterministic=True)
    result = improve(inst, density_greedy(inst), params)
    assert result.windows == 1 and result.seconds <= 0.05 * 1.2

def test_deterministic_window_lns_gives_the_same_schedule_twice() -> None:
    inst = random_instance(30, 3)
    params = LnsParams(window=20, step=10, window_time=0.5, time_limit=3.0, deterministic=True)
    first = improve(inst, density_greedy(inst), params)
    assert improve(inst, density_greedy(inst), params) == first


def test_an_infeasible_start_schedule_is_refused() -> None:
    with pytest.raises(ValueError, match="round 0 load=3 exceeds the bound capacity=2"):
        improve(HAND, {"A": 0, "B": 0}, LnsParams())


@pytest.mark.parametrize(("field", "value", "message"), [
    ("window", 0, "window=0 is below the bound 1"),
    ("step", 0, "step=0 is below the bound 1"),
    ("workers", 0, "workers=0 is below the bound 1"),
    ("window_time", 0.0, "window_time=0.0 must be above 0 seconds"),
    ("time_limit", -1.0, "time_limit=-1.0 must be above 0 seconds"),
])
def test_lns_params_are_validated_naming_the_field(field: str, value: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LnsParams(**{field: value})  # type: ignore[arg-type]


def test_lns_share_must_leave_time_for_the_bound_model() -> None:
    with pytest.raises(ValueError, match=r"lns_share=0.5 .* plain_share \+ lns_share = 1.0 is not below 1"):
        CpSatParams(plain_share=0.5, lns_share=0.5)
    with pytest.raises(ValueError, match=r"lns_share=-0\.1 must be at least 0"):
        CpSatParams(lns_share=-0.1)


def test_lns_share_needs_two_phase() -> None:
    with pytest.raises(ValueError, match=r"lns_share=0\.2 needs strategy='two_phase'.*not 'plain'"):
        CpSatParams(strategy="plain", lns_share=0.2)
