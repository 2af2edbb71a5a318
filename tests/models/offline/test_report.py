"""Welfare report: offline >= mechanism on the same realization, honest fallbacks, ratios and calibration bins."""

from __future__ import annotations

import pytest

from mechanism.platform import Platform
from mechanism.sow import SoW
from models.offline import report
from models.offline.baselines import fcfs
from models.offline.brute import solve_brute
from models.offline.cpsat import CpSatParams
from models.offline.greedy import density_greedy
from models.offline.hindsight import HindsightInstance, HindsightJob, OfflineResult
from models.offline.instances import random_instance
from models.offline.milp import LpBound, MilpParams
from models.offline.report import (
    BOTH_NAME,
    OfflineConfig,
    against_optimum,
    at_least_hint,
    calibration_bins,
    calibration_pairs,
    evaluate,
    hindsight_optimum,
    mechanism_schedule,
    ratio,
    solve_offline,
    summarize,
    tighten_with_lp,
)
from models.simulation import JobRecord, SimulationResult, Workload, WorkloadJob, run_simulation
from models.workloads import make_workload
from tests.offline_cases import HAND, HAND_OPTIMUM, HAND_SCHEDULE, TINY


@pytest.mark.parametrize(("name", "load", "seed"), [("toy", 1.0, 0), ("overload", 0.4, 1), ("overload", 0.6, 2)])
def test_offline_optimum_is_never_below_the_mechanism_welfare(name: str, load: float, seed: int) -> None:
    workload = make_workload(name, seed=seed, load=load)
    row = evaluate(workload, load, seed, OfflineConfig(time_limit=2.0))
    assert row["offline_value"] >= row["welfare"] - 1e-9
    assert row["offline_bound"] >= row["offline_value"]
    assert row["offline_value"] >= row["fcfs_welfare"] - 1e-9
    assert row["offline_value"] >= row["reservation_welfare"] - 1e-9
    assert row["ratio"] is None or row["ratio"] >= 1.0 - 1e-12
    assert row["ratio"] == ratio(row["offline_value"], row["welfare"])
    assert row["ratio_bound"] == ratio(row["offline_bound"], row["welfare"])
    assert row["fcfs_welfare"] == fcfs(HindsightInstance.from_realized(workload)).welfare
    assert set(row["series"]) == {"unit_price", "expected_usage", "running", "capacity", "evictions"}
    assert len(row["series"]["unit_price"]) == row["rounds"]


def test_mechanism_schedule_is_feasible_in_hindsight_and_worth_its_welfare() -> None:
    workload = make_workload("overload", seed=3, load=0.5)
    sim = run_simulation(workload)
    instance = HindsightInstance.from_realized(workload)
    schedule = mechanism_schedule(sim)
    instance.check_schedule(schedule)
    assert instance.schedule_value(schedule) == pytest.approx(sim.welfare)


def test_mechanism_schedule_keeps_a_completed_job_whose_realized_duration_was_not_declared() -> None:
    # No signal: the job starts at L(0, None) and completes after its realized 3 rounds, which its SoW (2 or 4)
    # does not list, so the quote has no outcome for it; its completion still earned 50.
    platform = Platform(C=4, C_m=4, D_m=4, S_m=8, H=100.0, seed=0, samples=50)
    sow = SoW.parse({"concurrency": 2, "value_steps": [[8, 50.0]], "outcomes": [[0, 2, 0.5], [0, 4, 0.5]],
                     "signal_mode": "none"}, platform)
    workload = Workload("undeclared", platform, (WorkloadJob("a", 0, sow, 0, 3),))
    sim = run_simulation(workload)
    instance = HindsightInstance.from_realized(workload)
    schedule = mechanism_schedule(sim)
    assert sim.welfare == 50.0
    instance.check_schedule(schedule)
    assert instance.schedule_value(schedule) == pytest.approx(sim.welfare)


def test_hindsight_instance_from_a_workload_uses_realized_arrival_and_duration() -> None:
    workload = make_workload("toy", seed=0, load=1.0)
    instance = HindsightInstance.from_realized(workload)
    job, first = instance.jobs[0], workload.jobs[0]
    assert instance.capacity == workload.platform.C
    assert (job.birth, job.arrival, job.duration) == (first.birth, first.birth + first.arrival_offset, first.duration)
    assert job.value_steps == first.sow.value_steps


def test_solver_result_below_its_hint_is_replaced_by_the_hint() -> None:
    empty = OfflineResult(0.0, 20.0, 1.0, "unknown", 0.1, {j.id: None for j in HAND.jobs}, "cpsat")
    result = at_least_hint(HAND, empty, HAND_SCHEDULE)
    assert result.value == HAND_OPTIMUM and result.starts == HAND_SCHEDULE
    assert result.status == "feasible" and result.bound == 20.0
    assert result.gap == pytest.approx((20.0 - HAND_OPTIMUM) / 20.0)


def test_solve_offline_falls_back_to_the_hint_and_the_lp_proves_it_optimal(monkeypatch: pytest.MonkeyPatch) -> None:
    # The LP relaxation of the hand case is 16 = the hint's value, so the hint is proven optimal by the LP.
    empty = OfflineResult(0.0, 20.0, 1.0, "unknown", 0.1, {j.id: None for j in HAND.jobs}, "cpsat")
    monkeypatch.setattr(report, "solve_cpsat", lambda *a, **k: empty)
    result = solve_offline(HAND, HAND_SCHEDULE, OfflineConfig())
    assert result.value == HAND_OPTIMUM and result.status == "optimal"
    assert result.bound == pytest.approx(HAND_OPTIMUM, rel=2e-6) and result.gap < 2e-6



def test_a_solver_result_as_good_as_its_hint_is_kept_with_its_status() -> None:
    proven = OfflineResult(HAND_OPTIMUM, HAND_OPTIMUM, 0.0, "optimal", 0.1, {"A": 2, "B": 0, "C": 1}, "cpsat")
    assert at_least_hint(HAND, proven, HAND_SCHEDULE) is proven


def test_a_better_hint_raises_a_bound_below_it_and_an_infeasible_hint_is_refused() -> None:
    stale = OfflineResult(0.0, 10.0, 1.0, "unknown", 0.1, {j.id: None for j in HAND.jobs}, "cpsat")
    result = at_least_hint(HAND, stale, HAND_SCHEDULE)
    assert result.value == result.bound == HAND_OPTIMUM and result.gap == 0.0
    with pytest.raises(ValueError, match="round 0 load=3 exceeds the bound capacity=2"):
        at_least_hint(HAND, stale, {"A": 0, "B": 0, "C": None})


def test_lp_bound_below_the_value_proves_it_optimal_without_lowering_the_bound_under_it() -> None:
    result = OfflineResult(10.0, 30.0, 2 / 3, "feasible", 1.0, {}, "cpsat")
    met = tighten_with_lp(result, LpBound(9.0, "optimal", 0.1))
    assert met.status == "optimal" and met.bound == 10.0 and met.gap == 0.0


def test_a_value_just_outside_the_lp_tolerance_is_not_proven_optimal() -> None:
    # LP_TOLERANCE is 1e-6 relative: 5e-6 below the LP optimum is a real gap.
    result = OfflineResult(1.0 - 5e-6, 30.0, 1.0, "feasible", 1.0, {}, "cpsat")
    assert tighten_with_lp(result, LpBound(1.0, "optimal", 0.1)).status == "feasible"


def test_against_optimum_gives_the_value_ratio_and_the_bound_ratio() -> None:
    row = against_optimum(OfflineResult(10.0, 12.0, 1 / 6, "feasible", 1.0, {}, "cpsat"), 5.0)
    assert (row["ratio"], row["ratio_bound"], row["status"]) == (2.0, 2.4, "feasible")


def test_solve_offline_passes_hint_bound_model_and_deterministic_time_to_cpsat(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[CpSatParams] = []

    def fake(instance: HindsightInstance, params: CpSatParams) -> OfflineResult:
        seen.append(params)
        return OfflineResult(0.0, 20.0, 1.0, "unknown", 0.1, {}, "cpsat")

    monkeypatch.setattr(report, "solve_cpsat", fake)
    solve_offline(HAND, HAND_SCHEDULE, OfflineConfig(time_limit=3.0, workers=2))
    (params,) = seen
    assert (params.time_limit, params.workers, params.hint, params.strategy, params.bound_model,
            params.deterministic) == (3.0, 2, HAND_SCHEDULE, "two_phase", "indexed", True)


def test_solve_offline_passes_the_hint_to_the_milp(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[MilpParams] = []

    def fake(instance: HindsightInstance, params: MilpParams) -> OfflineResult:
        seen.append(params)
        return OfflineResult(0.0, 20.0, 1.0, "unknown", 0.1, {}, "highs-milp")

    monkeypatch.setattr(report, "solve_milp", fake)
    solve_offline(HAND, HAND_SCHEDULE, OfflineConfig(solver="milp", time_limit=3.0))
    assert [(p.time_limit, p.hint) for p in seen] == [(3.0, HAND_SCHEDULE)]


def test_hindsight_optimum_is_warm_started_with_the_best_candidate_schedule(monkeypatch: pytest.MonkeyPatch) -> None:
    # C = 1. Density greedy runs the denser "short" (3 per node-round) and blocks "long" (5 over 2 rounds): 3.
    # The extra schedule running "long" is worth 5, the empty mechanism schedule 0: the hint must be the 5.
    inst = HindsightInstance(1, (HindsightJob("short", 0, 0, 1, 1, ((1, 3.0),)),
                                 HindsightJob("long", 0, 0, 2, 1, ((2, 5.0),))))
    sim = SimulationResult(workload="none", platform=Platform(C=1, C_m=1, D_m=3, S_m=10, H=100.0))
    hints: list[dict[str, int | None]] = []

    def fake(instance: HindsightInstance, hint: dict[str, int | None], config: OfflineConfig) -> OfflineResult:
        hints.append(hint)
        return OfflineResult(0.0, 0.0, 0.0, "optimal", 0.0, {}, "cpsat")

    monkeypatch.setattr(report, "solve_offline", fake)
    assert inst.schedule_value(density_greedy(inst)) == 3.0
    hindsight_optimum(inst, sim, OfflineConfig(), {"short": None, "long": 0})
    assert hints == [{"short": None, "long": 0}]

def test_lp_bound_tightens_a_looser_solver_bound_but_never_below_the_value() -> None:
    loose = OfflineResult(10.0, 30.0, 2 / 3, "feasible", 1.0, {}, "cpsat")
    tight = tighten_with_lp(loose, LpBound(12.0, "optimal", 0.1))
    assert tight.status == "feasible" and tight.bound == pytest.approx(12.0, rel=2e-6)
    assert tight.gap == pytest.approx(2 / 12, rel=1e-5)
    met = tighten_with_lp(loose, LpBound(10.0, "optimal", 0.1))
    assert met.status == "optimal" and met.bound >= 10.0
    assert tighten_with_lp(loose, LpBound(50.0, "optimal", 0.1)).bound == 30.0
    assert tighten_with_lp(loose, LpBound(11.0, "Time limit reached", 0.1)) == loose


def test_milp_offline_solver_is_selectable() -> None:
    result = solve_offline(HAND, {}, OfflineConfig(solver="milp"))
    assert result.solver == "highs-milp" and result.value == HAND_OPTIMUM


def test_competitive_ratio_is_ratio_of_means_not_mean_of_ratios() -> None:
    rows = [{"load": 1.0, "welfare": w, "revenue": 0.0, "offline_value": o, "offline_bound": o,
             "offline_status": "optimal", "ratio": ratio(o, w), "fcfs_welfare": 0.0, "reservation_welfare": 0.0}
            for w, o in ((10.0, 20.0), (30.0, 40.0))]
    (s,) = summarize(rows)
    assert s["competitive_ratio"] == pytest.approx(60.0 / 40.0)
    assert s["welfare"] == 20.0 and s["offline"] == 30.0 and s["optimal"] == 2 and s["seeds"] == 2
    assert s["welfare_std"] == pytest.approx(10.0)  # population spread of 10 and 30


def test_competitive_ratio_bound_uses_the_mean_offline_bound_and_only_proven_optima_count() -> None:
    rows = [{"load": 1.0, "welfare": 10.0, "revenue": 0.0, "offline_value": 20.0, "offline_bound": b,
             "offline_status": st, "ratio": 2.0, "fcfs_welfare": 0.0, "reservation_welfare": 0.0}
            for b, st in ((20.0, "optimal"), (30.0, "feasible"))]
    (s,) = summarize(rows)
    assert s["competitive_ratio"] == pytest.approx(2.0)
    assert s["offline_bound"] == pytest.approx(25.0) and s["competitive_ratio_bound"] == pytest.approx(2.5)
    assert s["optimal"] == 1


def test_ratio_is_undefined_when_the_mechanism_earns_nothing() -> None:
    assert ratio(5.0, 0.0) is None and ratio(6.0, 3.0) == 2.0


def test_ratio_is_1_when_neither_the_offline_optimum_nor_the_mechanism_earns_anything() -> None:
    # Nothing could be earned and the mechanism earned it all: not an unbounded ("inf") ratio.
    assert ratio(0.0, 0.0) == 1.0
    rows = [{"load": 1.0, "welfare": 0.0, "revenue": 0.0, "offline_value": 0.0, "offline_bound": 0.0,
             "offline_status": "optimal", "ratio": ratio(0.0, 0.0), "fcfs_welfare": 0.0, "reservation_welfare": 0.0}]
    (s,) = summarize(rows)
    assert s["competitive_ratio"] == 1.0 and s["competitive_ratio_bound"] == 1.0


def test_calibration_bins_count_estimates_and_realized_failures() -> None:
    pairs = [[0.05, 0.0, 0.0], [0.05, 0.0, 1.0], [0.95, 0.9, 1.0], [1.0, 1.0, 1.0]]
    bins = calibration_bins(pairs, column=0, bins=2)
    assert [b["count"] for b in bins] == [2, 2]
    assert bins[0]["failure_rate"] == 0.5 and bins[0]["mean_estimate"] == pytest.approx(0.05)
    assert bins[1]["failure_rate"] == 1.0 and bins[1]["mean_estimate"] == pytest.approx(0.975)
    assert calibration_bins([], bins=3)[0] == {"lo": 0.0, "hi": 1 / 3, "count": 0, "mean_estimate": None,
                                               "failure_rate": None}
    with pytest.raises(ValueError, match="bins=0 is below the bound 1"):
        calibration_bins(pairs, bins=0)



def test_calibration_pairs_keep_started_jobs_that_completed_or_failed_with_their_raw_estimate() -> None:
    def record(job_id: str, state: str, start: int | None, failure: float | None,
               raw: float | None) -> JobRecord:
        return JobRecord(job_id, 0, 1, state, start, 1, 0.0, 0.0, failure, raw)

    sim = SimulationResult(workload="none", platform=Platform(C=1, C_m=1, D_m=3, S_m=10, H=100.0), jobs=[
        record("done", "completed", 0, 0.1, 0.05),
        record("evicted", "evicted", 1, 0.2, None),  # no raw estimate: the announced one stands in
        record("cancelled", "cancelled", 2, 0.3, 0.4),
        record("never", "rejected", None, 0.5, 0.5),
        record("no-estimate", "completed", 3, None, None),
    ])
    assert calibration_pairs(sim) == [[0.1, 0.05, 0.0], [0.2, 0.2, 1.0], [0.3, 0.4, 1.0]]

@pytest.mark.parametrize(("kw", "match"), [
    ({"solver": "gurobi"}, "solver='gurobi' is not one of cpsat, milp, both"),
    ({"time_limit": 0.0}, "time_limit=0.0 must be above 0 seconds"),
    ({"workers": 0}, "workers=0 is below the bound 1"),
    ({"strategy": "x"}, "strategy='x' is not one of plain, channel, two_phase"),
    ({"bound_model": "x"}, "bound_model='x' is not one of channel, indexed"),
])
def test_offline_config_validation_names_field_and_bound(kw: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        OfflineConfig(**kw)  # type: ignore[arg-type]


def test_both_skips_cpsat_when_highs_proves_optimality(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report, "solve_cpsat", lambda *a, **k: pytest.fail("CP-SAT ran after a proof"))
    result = solve_offline(HAND, {}, OfflineConfig(solver="both"))
    assert (result.value, result.status, result.solver) == (HAND_OPTIMUM, "optimal", BOTH_NAME)


def test_both_warm_starts_cpsat_with_the_better_of_hint_and_highs_and_keeps_the_lower_bound(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # HiGHS stops at 10 (A at 0) with bound 18; the hint (the optimum, 16) is better, so CP-SAT is hinted with it;
    # CP-SAT reports no schedule of its own and a bound of 20: the result is the hint under HiGHS's bound 18,
    # then tightened by the LP relaxation (16, the hand case's LP optimum), which proves it.
    seen: list[CpSatParams] = []
    stopped = OfflineResult(10.0, 18.0, 0.8 / 1.8, "feasible", 0.5, {"A": 0, "B": None, "C": None}, "highs-milp")
    monkeypatch.setattr(report, "solve_milp", lambda *a, **k: stopped)

    def fake(instance: HindsightInstance, params: CpSatParams) -> OfflineResult:
        seen.append(params)
        return OfflineResult(0.0, 20.0, 1.0, "unknown", 0.25, {j.id: None for j in HAND.jobs}, "cpsat")

    monkeypatch.setattr(report, "solve_cpsat", fake)
    monkeypatch.setattr(report, "lp_bound", lambda *a, **k: LpBound(18.5, "optimal", 0.1))
    result = solve_offline(HAND, HAND_SCHEDULE, OfflineConfig(solver="both", time_limit=3.0))
    (params,) = seen
    assert (params.hint, params.time_limit, params.deterministic) == (HAND_SCHEDULE, 3.0, True)
    assert (result.value, result.bound, result.starts, result.solver) == (HAND_OPTIMUM, 18.0, HAND_SCHEDULE,
                                                                          BOTH_NAME)
    assert result.status == "feasible" and result.solve_seconds == 0.75


@pytest.mark.parametrize("highs_stops", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_both_solvers_in_turn_reach_the_brute_force_optimum(seed: int, highs_stops: bool,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    inst = random_instance(4, 7000 + seed, TINY)
    if highs_stops:  # HiGHS returns nothing (as at a time limit before its first schedule): CP-SAT must close it
        top = sum(j.value_steps[0][1] for j in inst.jobs)
        monkeypatch.setattr(report, "solve_milp", lambda *a, **k: OfflineResult(
            0.0, top, 1.0, "unknown", 0.0, {j.id: None for j in inst.jobs}, "highs-milp"))
    result = solve_offline(inst, {}, OfflineConfig(solver="both", time_limit=5.0))
    assert result.status == "optimal" and result.value == pytest.approx(solve_brute(inst).value, abs=1e-6)
    inst.check_schedule(result.starts)
