"""Hindsight jobs and instances: the value step convention, valuable starts, schedule checks, validation."""

from __future__ import annotations

import pytest

from models.offline.hindsight import HindsightInstance, HindsightJob, OfflineResult, combine, relative_gap


def job(**kw: object) -> HindsightJob:
    params: dict[str, object] = {"id": "a", "birth": 2, "arrival": 3, "duration": 2, "concurrency": 1,
                                 "value_steps": ((4, 10.0), (6, 5.0))}
    params.update(kw)
    return HindsightJob(**params)  # type: ignore[arg-type]


def test_value_is_first_step_whose_deadline_the_completion_meets() -> None:
    j = job()
    # start s completes at s + 2; offset from birth 2 is s.
    assert j.value(3) == 10.0  # f - b = 3 <= 4
    assert j.value(4) == 10.0  # f - b = 4 <= 4
    assert j.value(5) == 5.0   # f - b = 5 <= 6
    assert j.value(6) == 5.0
    assert j.value(7) == 0.0   # past the last deadline
    assert j.value(None) == 0.0


def test_start_before_arrival_earns_nothing() -> None:
    assert job().value(2) == 0.0


def test_valuable_starts_run_from_arrival_to_last_start() -> None:
    j = job()
    assert j.last_start == 2 + 6 - 2
    assert list(j.starts()) == [3, 4, 5, 6]
    assert j.can_earn


def test_job_that_cannot_meet_its_last_deadline_has_no_starts() -> None:
    j = job(arrival=7)
    assert not j.can_earn
    assert list(j.starts()) == []
    assert j.reachable_steps() == ()


def test_reachable_steps_drop_deadlines_before_earliest_completion() -> None:
    assert job(arrival=5).reachable_steps() == ((6, 5.0),)


@pytest.mark.parametrize(("kw", "match"), [
    ({"birth": -1, "arrival": 0}, "birth=-1 is below the bound 0"),
    ({"arrival": 1}, "arrival=1 is below its birth=2"),
    ({"duration": 0}, "duration=0 is below the bound 1"),
    ({"concurrency": 0}, "concurrency=0 is below the bound 1"),
    ({"value_steps": ()}, "value_steps is empty"),
    ({"value_steps": ((0, 1.0),)}, r"value_steps\[0\] deadline k=0 is below the bound 1"),
    ({"value_steps": ((2, -1.0),)}, r"value_steps\[0\] value v=-1.0 must be positive"),
    ({"value_steps": ((2, 3.0), (2, 1.0))}, r"value_steps\[1\] deadline k=2 must exceed the previous k=2"),
    ({"value_steps": ((2, 3.0), (4, 3.0))}, r"value_steps\[1\] value v=3.0 must be below the previous v=3.0"),
])
def test_job_validation_names_field_value_and_bound(kw: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        job(**kw)


def test_instance_rejects_repeated_ids_and_oversized_jobs_and_zero_capacity() -> None:
    with pytest.raises(ValueError, match=r"jobs\[1\].id='a' repeats"):
        HindsightInstance(2, (job(), job()))
    with pytest.raises(ValueError, match=r"concurrency=3 exceeds the bound capacity=2"):
        HindsightInstance(2, (job(concurrency=3),))
    with pytest.raises(ValueError, match="capacity=0 is below the bound 1"):
        HindsightInstance(0, ())


def test_check_schedule_rejects_early_starts_overload_and_unknown_jobs() -> None:
    inst = HindsightInstance(2, (job(id="a", concurrency=2), job(id="b", concurrency=1)))
    inst.check_schedule({"a": 3, "b": 5})
    with pytest.raises(ValueError, match=r"starts at 2, before its arrival=3"):
        inst.check_schedule({"a": 2})
    with pytest.raises(ValueError, match=r"round 4 load=3 exceeds the bound capacity=2"):
        inst.check_schedule({"a": 3, "b": 4})
    with pytest.raises(ValueError, match="names job 'z'"):
        inst.check_schedule({"z": 3})


def test_schedule_value_sums_job_values_and_horizon_covers_last_start() -> None:
    inst = HindsightInstance(2, (job(id="a"), job(id="b", arrival=7)))
    assert inst.schedule_value({"a": 5, "b": 7}) == 5.0
    assert inst.horizon == 6 + 2


def test_result_rejects_unknown_status_and_gap_is_relative_to_bound() -> None:
    with pytest.raises(ValueError, match="status='done' is not one of"):
        OfflineResult(1.0, 1.0, 0.0, "done", None)  # type: ignore[arg-type]
    assert relative_gap(90.0, 100.0) == pytest.approx(0.1)
    assert relative_gap(100.0, 100.0) == 0.0
    assert relative_gap(0.0, 0.0) == 0.0


def test_relative_gap_is_clipped_at_0_when_the_value_exceeds_the_bound() -> None:
    # A bound below the value (a solver's stale bound) is no gap at all, not a negative or absolute one.
    assert relative_gap(110.0, 100.0) == 0.0


def test_horizon_ignores_jobs_that_cannot_earn() -> None:
    # "late" (born 0, last deadline 5) arrives at 9: no valuable start, so its rounds up to 5 are not in the horizon.
    late = job(id="late", birth=0, arrival=9, duration=1, value_steps=((5, 1.0),))
    assert not late.can_earn
    assert HindsightInstance(2, (late,)).horizon == 0
    short = job(id="short", birth=0, arrival=0, duration=1, value_steps=((2, 1.0),))  # last start 1, occupies 1
    assert HindsightInstance(2, (short, late)).horizon == 2


def _result(value: float, bound: float, status: str, starts: dict[str, int | None],
            seconds: float | None = 1.0) -> OfflineResult:
    return OfflineResult(value, bound, relative_gap(value, bound), status, seconds, starts, "x")  # type: ignore[arg-type]


def test_combine_keeps_the_better_schedule_under_the_lower_bound_and_names_the_pair() -> None:
    both = combine(_result(10.0, 12.0, "feasible", {"a": 0}, 2.0), _result(11.0, 13.0, "feasible", {"a": 1}, 3.0),
                   "pair")
    assert (both.value, both.bound, both.status, both.starts, both.solver) == (11.0, 12.0, "feasible", {"a": 1},
                                                                               "pair")
    assert both.gap == pytest.approx(1 / 12) and both.solve_seconds == 5.0


def test_combine_proves_the_better_schedule_with_the_other_bound_within_the_tolerance_only() -> None:
    # Neither proved its own: one found 11, the other's bound is 11 + 1e-7 (relative 1e-6 allowed).
    both = combine(_result(10.0, 11.0 + 1e-7, "feasible", {"a": 0}), _result(11.0, 13.0, "feasible", {"a": 1}),
                   "pair", 1e-6)
    assert (both.value, both.bound, both.status) == (11.0, 11.0 + 1e-7, "optimal")  # the bound stays valid
    assert both.gap == pytest.approx(1e-7 / 11)
    outside = combine(_result(10.0, 11.0 + 1e-4, "feasible", {}), _result(11.0, 13.0, "feasible", {}), "pair", 1e-6)
    assert outside.status == "feasible" and outside.bound == 11.0 + 1e-4
    exact = combine(_result(10.0, 11.0 + 1e-7, "feasible", {}), _result(11.0, 13.0, "feasible", {}), "pair")
    assert exact.status == "feasible"  # no tolerance: a bound above the value proves nothing
    met = combine(_result(10.0, 11.0, "feasible", {}), _result(11.0, 13.0, "feasible", {}), "pair")
    assert met.status == "optimal" and met.gap == 0.0  # a bound met exactly is a proof


def test_combine_keeps_the_rounding_slack_of_a_phase_that_proved_its_rounded_optimum() -> None:
    # CP-SAT's "optimal" holds for its rounded values; its bound 4.9 carries the rounding slack over the value 3.5
    both = combine(_result(3.5, 4.9, "optimal", {"a": 0}), _result(3.5, 6.0, "feasible", {"a": 0}), "pair")
    assert (both.status, both.value, both.bound) == ("optimal", 3.5, 4.9)


def test_combine_takes_the_second_on_a_tie_and_sums_only_the_times_it_has() -> None:
    both = combine(_result(10.0, 12.0, "feasible", {"a": 0}, None), _result(10.0, 12.0, "feasible", {"a": 1}), "p")
    assert both.starts == {"a": 1} and both.solve_seconds == 1.0 and both.status == "feasible"
    assert combine(_result(1.0, 2.0, "feasible", {}, None), _result(1.0, 2.0, "feasible", {}, None),
                   "p").solve_seconds is None


def test_combine_of_two_results_without_a_schedule_is_unknown_and_keeps_the_lower_bound() -> None:
    both = combine(_result(0.0, 30.0, "unknown", {"a": None}), _result(0.0, 20.0, "unknown", {"a": None}), "p")
    assert (both.status, both.bound) == ("unknown", 20.0)
