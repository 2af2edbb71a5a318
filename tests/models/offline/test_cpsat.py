"""CP-SAT hindsight model: agrees with brute force, reports an honest status and gap, uses hints, validates."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from models.offline import cpsat, cpsat_model
from models.offline.brute import solve_brute
from models.offline.cpsat import (
    MAX_SCALED_WEIGHT,
    BoundModel,
    CpSatParams,
    Model,
    Strategy,
    add_hint,
    auto_scale,
    build,
    build_indexed,
    combine,
    shifted_hint,
    solve_cpsat,
    solve_model,
    trivial_bound,
)
from models.offline.hindsight import HindsightInstance, HindsightJob, OfflineResult
from models.offline.instances import random_instance
from tests.offline_cases import HAND, HAND_OPTIMUM, HAND_SCHEDULE, enumerable

FAST = CpSatParams(time_limit=10.0, workers=1)


@pytest.mark.parametrize("strategy", ["plain", "channel", "two_phase"])
def test_cpsat_proves_the_optimum_with_every_strategy(strategy: Strategy) -> None:
    result = solve_cpsat(HAND, CpSatParams(time_limit=10.0, workers=1, strategy=strategy))
    assert result.status == "optimal"
    assert result.value == HAND_OPTIMUM and result.bound == pytest.approx(HAND_OPTIMUM)
    assert result.starts == HAND_SCHEDULE
    assert result.solver == "cpsat" and result.solve_seconds is not None


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(1, 6), model=st.sampled_from(["plain", "channel", "indexed"]))
def test_cpsat_optimum_equals_brute_force_on_tiny_instances(seed: int, n: int, model: Model) -> None:
    inst = enumerable(seed, n)
    exact = solve_brute(inst)
    result = solve_model(inst, CpSatParams(time_limit=10.0, workers=1), model)
    assert result.status == "optimal"
    assert result.value == pytest.approx(exact.value, abs=1e-6)
    assert result.bound >= exact.value - 1e-6
    inst.check_schedule(result.starts)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(1, 6), model=st.sampled_from(["channel", "indexed"]))
def test_cpsat_with_left_shift_dominance_keeps_the_brute_force_optimum(seed: int, n: int, model: Model) -> None:
    inst = enumerable(seed, n)
    exact = solve_brute(inst)
    result = solve_model(inst, CpSatParams(time_limit=10.0, workers=1, left_shift=True), model)
    assert result.status == "optimal"
    assert result.value == pytest.approx(exact.value, abs=1e-6)
    inst.check_schedule(result.starts)


def test_left_shift_model_admits_only_schedules_starting_at_arrival_or_an_end() -> None:
    # Alone on the platform, a job may start only at its arrival: every later start is cut off.
    job = HindsightJob("x", 0, 2, 2, 1, ((10, 5.0),))
    built = build(HindsightInstance(1, (job,)), left_shift=True)
    built.model.add(built.start["x"] == 3)
    built.model.add(built.run["x"] == 1)
    solver = cp_model.CpSolver()
    assert solver.solve(built.model) == cp_model.INFEASIBLE
    # Behind a blocker that ends at 4, the late start 4 is allowed again.
    blocker = HindsightJob("b", 0, 2, 2, 1, ((10, 9.0),))
    built = build(HindsightInstance(1, (job, blocker)), left_shift=True)
    built.model.add(built.start["x"] == 4)
    built.model.add(built.run["x"] == 1)
    assert solver.solve(built.model) == cp_model.OPTIMAL
    assert solver.value(built.start["b"]) == 2


def test_left_shift_turns_an_infeasible_hint_into_itself_and_a_feasible_one_semi_active() -> None:
    late = {"A": None, "B": 3, "C": None}
    assert shifted_hint(HAND, late) == {"A": None, "B": 0, "C": None}
    overloaded = {"A": 0, "B": 0, "C": None}
    assert shifted_hint(HAND, overloaded) == overloaded
    result = solve_cpsat(HAND, CpSatParams(time_limit=10.0, workers=1, strategy="channel", left_shift=True,
                                           hint=late))
    assert result.status == "optimal" and result.value == HAND_OPTIMUM


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(1, 6), bound_model=st.sampled_from(["channel", "indexed"]))
def test_two_phase_with_either_bound_model_equals_brute_force(seed: int, n: int, bound_model: BoundModel) -> None:
    inst = enumerable(seed, n)
    result = solve_cpsat(inst, CpSatParams(time_limit=10.0, workers=1, bound_model=bound_model))
    assert result.status == "optimal"
    assert result.value == pytest.approx(solve_brute(inst).value, abs=1e-6)


def test_indexed_model_adds_the_worst_step_rounding_per_job_to_the_bound() -> None:
    inst = HindsightInstance(1, (HindsightJob("x", 0, 0, 1, 1, ((1, 1.25), (3, 1.0))),))
    assert build_indexed(inst, value_scale=1.0).rounding_slack == pytest.approx(0.25)
    result = solve_model(inst, CpSatParams(time_limit=5.0, workers=1, value_scale=1.0), "indexed")
    assert result.value == 1.25 and result.bound >= 1.25 and result.starts == {"x": 0}


def test_cpsat_value_scale_rounding_is_added_to_the_bound() -> None:
    inst = HindsightInstance(1, (HindsightJob("x", 0, 0, 1, 1, ((1, 1.25),)),))
    result = solve_cpsat(inst, CpSatParams(time_limit=5.0, workers=1, value_scale=1.0))
    # 1.25 is rounded to 1 in the model; the bound must still cover the true value 1.25.
    assert result.value == 1.25 and result.bound >= 1.25
    assert build(inst, value_scale=1.0).rounding_slack == pytest.approx(0.25)


@pytest.mark.parametrize("model", ["plain", "channel"])
def test_cpsat_optimum_of_many_small_steps_equals_brute_force_despite_rounding(model: Model) -> None:
    # 100 steps 4e-7 apart: at the scale 1e6 each step's increment rounds to 0, yet together they are worth 4e-5,
    # so a start hinted at the last deadline must not be taken as optimal (the optimum holds up to the scale's
    # rounding of one value, 0.5e-6 here).
    steps = tuple((k, 1.0 + (101 - k) * 4e-7) for k in range(1, 102))
    inst = HindsightInstance(1, (HindsightJob("x", 0, 0, 1, 1, steps),))
    result = solve_model(inst, CpSatParams(time_limit=5.0, workers=1, hint={"x": 100}), model)
    assert result.optimal
    assert result.value == pytest.approx(solve_brute(inst).value, rel=1e-6)


@pytest.mark.parametrize("strategy", ["plain", "channel", "two_phase"])
def test_cpsat_solves_values_up_to_the_bound_h_next_to_a_value_that_needs_the_finest_scale(strategy: Strategy) -> None:
    # Values lie in [1, H] with H up to 1e12; 1.1234567 asks for the scale 1e6, at which ten jobs worth 1e12 give
    # objective coefficients CP-SAT refuses as a possible integer overflow.
    jobs = (HindsightJob("small", 0, 0, 1, 1, ((1, 1.1234567),)),
            *(HindsightJob(f"big{i}", 0, 0, 1, 1, ((1, 1e12),)) for i in range(10)))
    inst = HindsightInstance(4, jobs)
    result = solve_cpsat(inst, CpSatParams(time_limit=5.0, workers=1, strategy=strategy))
    assert result.optimal and result.value == pytest.approx(solve_brute(inst).value) == 4e12



def test_auto_scale_is_the_smallest_power_of_ten_up_to_1e6_that_makes_values_whole() -> None:
    def lone(value: float) -> HindsightInstance:
        return HindsightInstance(1, (HindsightJob("x", 0, 0, 1, 1, ((1, value),)),))

    assert auto_scale(lone(3.0)) == 1.0
    assert auto_scale(lone(1.25)) == 100.0
    assert auto_scale(lone(1.1234567)) == 1e6  # 7 decimals: capped at 1e6, never 1e7


def test_indexed_objective_weight_counts_every_start_of_a_job() -> None:
    # Ten jobs worth 1e12 with 50 valuable starts each put 50 objective terms of 1e12 * scale per job into the
    # indexed model: the scale drops to 10 so that the coefficients sum to at most 2^53.
    jobs = (HindsightJob("small", 0, 0, 1, 1, ((1, 1.1234567),)),
            *(HindsightJob(f"big{i}", 0, 0, 1, 1, ((50, 1e12),)) for i in range(10)))
    inst = HindsightInstance(4, jobs)
    built = build_indexed(inst)
    assert built.scale == 10.0
    assert sum(abs(c) for c in built.model.proto.objective.coeffs) <= MAX_SCALED_WEIGHT
    result = solve_model(inst, CpSatParams(time_limit=10.0, workers=1), "indexed")
    assert result.optimal and result.value == pytest.approx(1e13 + 1.1234567)


def test_cpsat_bound_covers_the_true_optimum_when_coarse_rounding_misleads_the_model() -> None:
    # value_scale 1: three 1-node jobs worth 1.4 (rounded to 1 each) against one 3-node job worth 3.5 (rounded to
    # 4), all only at round 0 on C = 3. The rounded model runs the 3.5; the true optimum is 4.2, and the bound
    # (the model's 4 plus the rounding slack 3 * 0.4 + 0.5) must cover it.
    inst = HindsightInstance(3, (*(HindsightJob(f"s{i}", 0, 0, 1, 1, ((1, 1.4),)) for i in range(3)),
                                 HindsightJob("big", 0, 0, 1, 3, ((1, 3.5),))))
    result = solve_model(inst, CpSatParams(time_limit=5.0, workers=1, value_scale=1.0), "plain")
    assert result.value == 3.5 and result.bound == pytest.approx(5.7)
    assert result.bound >= solve_brute(inst).value == pytest.approx(4.2)


def test_cpsat_bound_never_exceeds_the_trivial_bound() -> None:
    # 1.5 rounds to 2 at value_scale 1, so the model's bound plus slack is 2.5; no schedule beats the value 1.5.
    inst = HindsightInstance(1, (HindsightJob("x", 0, 0, 1, 1, ((1, 1.5),)),))
    result = solve_model(inst, CpSatParams(time_limit=5.0, workers=1, value_scale=1.0), "plain")
    assert (result.value, result.bound, result.gap) == (1.5, 1.5, 0.0)
    assert trivial_bound(HAND) == 10.0 + 8.0 + 3.0  # each job's best reachable value


def test_cpsat_bound_is_never_below_its_value_even_by_a_rounding_error() -> None:
    # 0.1 + 0.2 summed in floating point is 0.30000000000000004, above the model's 3 / 10.
    inst = HindsightInstance(2, (HindsightJob("x", 0, 0, 1, 1, ((1, 0.1),)),
                                 HindsightJob("y", 0, 0, 1, 1, ((1, 0.2),))))
    result = solve_model(inst, CpSatParams(time_limit=5.0, workers=1), "plain")
    assert result.optimal and result.value == 0.1 + 0.2
    assert result.bound >= result.value


def test_cpsat_stopped_with_a_schedule_is_feasible_not_optimal() -> None:
    # Deterministic time 0.05 on 200 jobs: a schedule, far from the bound, and not claimed optimal.
    inst = random_instance(200, 5)
    result = solve_model(inst, CpSatParams(time_limit=0.05, workers=1, deterministic=True), "plain")
    assert result.status == "feasible" and result.gap > 0.1
    inst.check_schedule(result.starts)


def test_two_phase_hints_its_second_phase_with_the_first_phase_schedule(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, CpSatParams, OfflineResult]] = []

    def recording(instance: HindsightInstance, params: CpSatParams, model: Model) -> OfflineResult:
        result = solve_model(instance, params, model)
        calls.append((model, params, result))
        return result

    monkeypatch.setattr(cpsat, "solve_model", recording)
    inst = random_instance(200, 5)
    solve_cpsat(inst, CpSatParams(time_limit=0.2, workers=1, deterministic=True, bound_model="indexed"))
    (plain, first_params, first), (indexed, second_params, _) = calls
    assert (plain, indexed) == ("plain", "indexed") and first.status == "feasible"
    assert first_params.time_limit == pytest.approx(0.2 * 0.3) and second_params.time_limit == pytest.approx(0.2 * 0.7)
    assert second_params.hint == first.starts


def test_two_phase_leaves_the_lns_share_out_of_the_second_phase(monkeypatch: pytest.MonkeyPatch) -> None:
    limits: list[float] = []

    def recording(instance: HindsightInstance, params: CpSatParams, model: Model) -> OfflineResult:
        limits.append(params.time_limit)
        return solve_model(instance, params, model)

    monkeypatch.setattr(cpsat, "solve_model", recording)
    solve_cpsat(random_instance(200, 5), CpSatParams(time_limit=0.2, workers=1, deterministic=True, lns_share=0.2))
    assert limits == pytest.approx([0.2 * 0.3, 0.2 * (1.0 - 0.3 - 0.2)])


def test_two_phase_without_a_plain_schedule_runs_no_lns_and_claims_no_schedule() -> None:
    # Deterministic time 0.05 on 400 jobs: neither phase finds a schedule; window LNS must not start from the
    # empty stand-in, so the result is "unknown" with value 0 and nothing run.
    inst = random_instance(400, 3)
    result = solve_cpsat(inst, CpSatParams(time_limit=0.05, workers=1, deterministic=True, lns_share=0.3))
    assert result.status == "unknown" and result.value == 0.0
    assert all(s is None for s in result.starts.values())


def test_add_hint_hints_the_schedule_and_reads_an_unusable_start_as_not_run() -> None:
    built = build(HAND, time_indexed=True)
    add_hint(built, {"A": 2, "B": 0, "C": 99})
    hint = dict(zip(built.model.proto.solution_hint.vars, built.model.proto.solution_hint.values, strict=True))

    def hinted(var: cp_model.IntVar) -> int:
        return hint[var.index]

    assert [hinted(built.at["A"][s]) for s in (0, 1, 2)] == [0, 0, 1]
    assert (hinted(built.run["A"]), hinted(built.start["A"])) == (1, 2)
    assert (hinted(built.run["B"]), hinted(built.at["B"][0])) == (1, 1)
    # C's start 99 earns nothing: C is hinted as not run, at its arrival.
    assert (hinted(built.run["C"]), hinted(built.start["C"]), hinted(built.at["C"][1])) == (0, 1, 0)

def test_cpsat_under_a_tiny_time_limit_reports_its_gap_honestly() -> None:
    inst = random_instance(400, 3)
    result = solve_cpsat(inst, CpSatParams(time_limit=0.3, workers=1))
    assert result.status in ("feasible", "unknown")
    assert result.bound >= result.value
    assert result.gap == pytest.approx((result.bound - result.value) / result.bound)
    assert result.gap > 0
    inst.check_schedule(result.starts)
    assert result.value == pytest.approx(inst.schedule_value(result.starts))


@pytest.mark.parametrize(("strategy", "bound_model"), [("channel", "channel"), ("two_phase", "channel"),
                                                      ("two_phase", "indexed")])
def test_cpsat_under_a_tiny_time_limit_keeps_bound_above_value_per_strategy(strategy: Strategy,
                                                                            bound_model: BoundModel) -> None:
    inst = random_instance(200, 5)
    result = solve_cpsat(inst, CpSatParams(time_limit=0.5, workers=1, strategy=strategy, bound_model=bound_model))
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


def test_combine_of_an_unknown_and_a_feasible_result_is_feasible() -> None:
    unknown = OfflineResult(0.0, 30.0, 1.0, "unknown", 1.0, {"x": None}, "cpsat")
    found = OfflineResult(8.0, 12.0, 1 / 3, "feasible", 2.0, {"x": 2}, "cpsat")
    assert combine(unknown, found).status == "feasible" and combine(found, unknown).status == "feasible"


def test_two_phase_with_left_shift_builds_its_plain_phase_without_the_dominance() -> None:
    result = solve_cpsat(HAND, CpSatParams(time_limit=10.0, workers=1, left_shift=True))
    assert result.optimal and result.value == HAND_OPTIMUM


def test_left_shift_hints_the_left_shifted_schedule(monkeypatch: pytest.MonkeyPatch) -> None:
    hints: list[dict[str, int | None]] = []
    real_add_hint = cpsat.add_hint

    def recording(built: cpsat.CpSatModel, hint: dict[str, int | None]) -> None:
        hints.append(dict(hint))
        real_add_hint(built, hint)

    monkeypatch.setattr(cpsat_model, "add_hint", recording)  # solve() hints the model it solves
    late = {"A": None, "B": 3, "C": None}  # B three rounds after its arrival: left-shifted to 0
    solve_model(HAND, CpSatParams(time_limit=10.0, workers=1, left_shift=True, hint=late), "channel")
    assert hints == [{"A": None, "B": 0, "C": None}]


def test_combine_never_reports_a_bound_below_the_better_value() -> None:
    # b solved a model fixed to schedules worth more than a's 10 and proved its best is 5 (bound 8): the
    # optimum is a's 10, and so is the bound.
    a = OfflineResult(10.0, 30.0, 2 / 3, "feasible", 1.0, {"x": 1}, "cpsat")
    b = OfflineResult(5.0, 8.0, 3 / 8, "optimal", 1.0, {"x": 2}, "cpsat")
    both = combine(a, b)
    assert (both.value, both.bound, both.gap, both.status, both.starts) == (10.0, 10.0, 0.0, "optimal", {"x": 1})


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
    ({"left_shift": True, "strategy": "plain"}, "left_shift=True needs the time-indexed channel"),
    ({"bound_model": "plain"}, "bound_model='plain' is not one of channel, indexed"),
])
def test_cpsat_params_validation_names_field_and_bound(kw: dict[str, float], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        CpSatParams(**kw)  # type: ignore[arg-type]


def test_build_refuses_left_shift_without_the_channel() -> None:
    with pytest.raises(ValueError, match="left_shift=True needs time_indexed=True"):
        build(HAND, time_indexed=False, left_shift=True)
