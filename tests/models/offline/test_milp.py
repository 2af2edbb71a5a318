"""Time-indexed MILP (HiGHS) and its LP bound: agreement with brute force, bound >= optimum, honest status."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.offline.brute import solve_brute
from models.offline.greedy import density_greedy
from models.offline.hindsight import HindsightInstance, HindsightJob
from models.offline.instances import random_instance
from models.offline.milp import MilpParams, build, lp_bound, solve_milp
from tests.offline_cases import HAND, HAND_OPTIMUM, HAND_SCHEDULE, enumerable


def test_milp_proves_the_optimum_with_a_matching_bound() -> None:
    result = solve_milp(HAND)
    assert result.status == "optimal" and result.value == HAND_OPTIMUM
    assert result.starts == HAND_SCHEDULE
    assert result.bound == pytest.approx(HAND_OPTIMUM)
    assert result.solver == "highs-milp" and result.solve_seconds is not None


def test_time_indexed_model_has_a_column_per_valuable_start_and_rows_for_jobs_and_rounds() -> None:
    model = build(HAND)
    assert list(zip(model.column_job, model.column_start.tolist(), strict=True)) == [
        ("A", 0), ("A", 1), ("A", 2), ("B", 0), ("C", 1)]
    assert model.cost.tolist() == [10.0, 5.0, 5.0, 8.0, 3.0]
    # Three job rows, then rounds 0..3 (A at 2 occupies rounds 2 and 3).
    assert model.n_job_rows == 3 and model.n_rows == 3 + 4


def test_the_lp_relaxation_bounds_the_optimum_from_above() -> None:
    bound = lp_bound(HAND)
    assert bound.status == "optimal" and bound.bound >= HAND_OPTIMUM - 1e-9


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(1, 6))
def test_milp_optimum_equals_brute_force_and_lp_bound_is_at_least_it(seed: int, n: int) -> None:
    inst = enumerable(seed, n)
    exact = solve_brute(inst)
    result = solve_milp(inst)
    assert result.status == "optimal"
    assert result.value == pytest.approx(exact.value, abs=1e-6)
    inst.check_schedule(result.starts)
    assert lp_bound(inst).bound >= exact.value - 1e-6


def test_milp_under_a_tiny_time_limit_reports_its_gap_honestly() -> None:
    inst = random_instance(400, 3)
    result = solve_milp(inst, MilpParams(time_limit=0.3))
    assert result.status in ("feasible", "unknown")
    assert result.bound >= result.value and result.gap > 0
    assert result.gap == pytest.approx((result.bound - result.value) / result.bound)
    inst.check_schedule(result.starts)


def test_milp_with_a_feasible_hint_keeps_at_least_its_value() -> None:
    result = solve_milp(HAND, MilpParams(time_limit=10.0, hint={"A": 0}))
    assert result.value == HAND_OPTIMUM



def test_milp_stopped_at_once_returns_its_feasible_hint() -> None:
    # 1 ms is over before HiGHS finds a schedule of its own on 400 jobs (without a hint it reports "unknown"):
    # the MIP start is the schedule it returns.
    inst = random_instance(400, 3)
    hint = density_greedy(inst)
    hinted = solve_milp(inst, MilpParams(time_limit=1e-3, hint=hint))
    assert hinted.status == "feasible" and hinted.value >= inst.schedule_value(hint) > 0
    inst.check_schedule(hinted.starts)


def test_milp_bound_is_never_below_its_value_even_by_a_rounding_error() -> None:
    # HiGHS's dual bound here is 9.190535287279499, an ulp below the schedule's value 7.1 + 1.5 + 0.5905352872795
    # summed exactly: the reported bound must still be at least the value.
    inst = HindsightInstance(3, (
        HindsightJob("j0", 0, 0, 2, 3, ((1, 15.8477227),)),
        HindsightJob("j1", 3, 3, 2, 2, ((1, 7.2), (5, 7.1))),
        HindsightJob("j2", 2, 2, 1, 1, ((6, 1.5),)),
        HindsightJob("j3", 0, 0, 3, 1, ((1, 5.935932781142664), (2, 4.7), (6, 0.5905352872795))),
    ))
    result = solve_milp(inst)
    assert result.optimal and result.value == pytest.approx(solve_brute(inst).value)
    assert result.bound >= result.value and result.gap == 0.0


def test_milp_stopped_before_any_bound_reports_the_trivial_bound() -> None:
    # With no dual bound from HiGHS the bound is every job earning its best value once, never more.
    inst = random_instance(400, 3)
    result = solve_milp(inst, MilpParams(time_limit=1e-3))
    best = sum(max(job.value(s) for s in job.starts()) for job in inst.jobs if job.can_earn)
    assert result.value <= result.bound <= best + 1e-9


def test_lp_stopped_before_its_optimum_falls_back_to_the_trivial_bound() -> None:
    # 1 ms does not solve the LP of 400 jobs: its unfinished objective is no bound, the best value per job is.
    inst = random_instance(400, 3)
    bound = lp_bound(inst, time_limit=1e-3)
    assert bound.status != "optimal"
    assert bound.bound == pytest.approx(sum(max(job.value(s) for s in job.starts()) for job in inst.jobs
                                            if job.can_earn))

def test_milp_and_lp_on_an_instance_without_valuable_starts_return_zero() -> None:
    inst = HindsightInstance(2, (HindsightJob("late", 0, 5, 2, 1, ((3, 4.0),)),))
    assert solve_milp(inst).value == 0.0 and solve_milp(inst).status == "optimal"
    assert lp_bound(inst).bound == 0.0


@pytest.mark.parametrize(("kw", "match"), [
    ({"time_limit": -1.0}, "time_limit=-1.0 must be above 0 seconds"),
    ({"time_limit": 0.0}, "time_limit=0.0 must be above 0 seconds"),
    ({"threads": 0}, "threads=0 is below the bound 1"),
])
def test_milp_params_validation_names_field_and_bound(kw: dict[str, float], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        MilpParams(**kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("first", ["highspy", "ortools.sat.python.cp_model"])
def test_highs_and_cp_sat_load_in_one_process_whichever_comes_first(first: str) -> None:
    # The benchmark and the welfare reports run both solvers in one process. ortools >= 9.12 bundles its own
    # libhighs.so.1, and the loader then binds highspy (or ortools) to the other's HiGHS: an ImportError.
    second = "ortools.sat.python.cp_model" if first == "highspy" else "highspy"
    code = f"import importlib; importlib.import_module({first!r}); importlib.import_module({second!r})"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_solve_prints_nothing_on_stdout_so_json_output_stays_one_document() -> None:
    """HiGHS prints its banner on file descriptor 1 at the first instance of a process, whatever output_flag says:
    `models.highs.quiet_highs` sends it to /dev/null (`sowsched simulate --json` parses whole only then)."""
    code = ("from models.offline.milp import solve_milp\nfrom tests.offline_cases import HAND\n"
            "print(solve_milp(HAND).status)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout == "optimal\n"
