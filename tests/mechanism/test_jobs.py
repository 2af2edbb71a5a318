"""Job life cycle (docs/model.md section 6): the transition table, active states, release, and the declared bounds."""

from __future__ import annotations

import itertools

import pytest

from mechanism.jobs import IllegalTransition, Job, JobState, Released
from mechanism.launch_plan import LaunchPlan
from mechanism.pricing import PriceBook
from mechanism.sow import SoW
from tests.conftest import small_platform

S = JobState
# docs/model.md section 6, written out: arrival schedules (WAITING) or ends NOT_SCHEDULED / CANCELLED (outside the
# support); an unreported last arrival EXPIRES; LIFO cancels what has not started and evicts what runs; a runner
# completes or is evicted (overrun). Nothing leaves an end state.
LIFE_CYCLE = {
    (S.SUBMITTED, S.WAITING), (S.SUBMITTED, S.NOT_SCHEDULED), (S.SUBMITTED, S.CANCELLED), (S.SUBMITTED, S.EXPIRED),
    (S.WAITING, S.RUNNING), (S.WAITING, S.CANCELLED),
    (S.RUNNING, S.COMPLETED), (S.RUNNING, S.EVICTED),
}
ENDS = {S.COMPLETED, S.EVICTED, S.CANCELLED, S.EXPIRED, S.NOT_SCHEDULED}

P = small_platform(C=4, samples=10)
SOW = SoW.parse({"concurrency": 2, "value_steps": [(5, 10.0)], "signal_mode": "explicit", "outcomes": [
    [0, 1, 0.2, "a"], [0, 3, 0.2, "a"], [0, 2, 0.2, "b"], [2, 1, 0.2, "a"], [4, 2, 0.2, None]]}, P)


def job(state: JobState = S.SUBMITTED, birth: int = 10) -> Job:
    plan = LaunchPlan(birth=birth, groups=(), outcomes=(), utility=0.0)
    return Job(id="j", seq=0, birth=birth, concurrency=2, held_sow=SOW, held_menu=PriceBook(P).menu(birth),
               held_plan=plan, state=state)


@pytest.mark.parametrize(("old", "new"), list(itertools.product(S, S)))
def test_a_move_is_allowed_exactly_along_the_life_cycle(old: JobState, new: JobState) -> None:
    j = job(old)
    if (old, new) in LIFE_CYCLE:
        j.move(new, 7)
        assert j.state is new
    else:
        with pytest.raises(IllegalTransition, match=f"job j: {old.value} -> {new.value} is not allowed"):
            j.move(new, 7)
        assert j.state is old


@pytest.mark.parametrize("state", list(S))
def test_a_job_is_active_exactly_until_it_reaches_an_end(state: JobState) -> None:
    assert state.active is (state not in ENDS)


def test_moving_into_an_end_records_the_round_and_a_live_move_does_not() -> None:
    j = job()
    j.move(S.WAITING, 3)
    assert j.ended is None
    j.move(S.RUNNING, 4)
    assert j.ended is None
    j.move(S.COMPLETED, 6)
    assert j.ended == 6


@pytest.mark.parametrize("end", [S.EVICTED, S.CANCELLED, S.EXPIRED, S.NOT_SCHEDULED])
def test_an_ended_job_that_did_not_complete_releases_sow_menu_and_plan(end: JobState) -> None:
    j = job(end)
    j.release()
    for read, name in ((lambda: j.sow, "SoW"), (lambda: j.menu, "price menu"), (lambda: j.plan, "plan")):
        with pytest.raises(Released, match=f"job j ended \\({end.value}\\) and no longer holds its {name}"):
            read()


def test_a_completed_job_keeps_its_plan_for_the_invoice_but_releases_sow_and_menu() -> None:
    j = job(S.COMPLETED)
    plan = j.plan
    j.release()
    assert j.plan is plan
    with pytest.raises(Released, match="no longer holds its SoW"):
        _ = j.sow
    with pytest.raises(Released, match="no longer holds its price menu"):
        _ = j.menu


@pytest.mark.parametrize("state", [S.SUBMITTED, S.WAITING, S.RUNNING])
def test_an_active_job_refuses_to_release(state: JobState) -> None:
    with pytest.raises(IllegalTransition, match=f"job j is {state.value}: only an ended job releases its SoW"):
        job(state).release()


@pytest.mark.parametrize(("arrival", "signal", "longest"), [
    (10, "a", 3),  # offset 0, label a: durations 1 and 3
    (10, "b", 2),  # offset 0, label b: duration 2 only (not a's 3)
    (12, "a", 1),  # offset 2, label a: duration 1 only (not offset 0's 3)
    (14, None, 2),
])
def test_max_duration_is_the_longest_duration_of_the_observed_arrival_and_signal(
        arrival: int, signal: str | None, longest: int) -> None:
    j = job()
    j.arrival, j.signal = arrival, signal
    assert j.max_duration == longest


def test_max_duration_reads_an_arrival_at_round_0_as_offset_0() -> None:
    j = job(birth=0)
    j.arrival, j.signal = 0, "a"
    assert j.max_duration == 3


def test_last_arrival_is_birth_plus_the_latest_declared_arrival_offset() -> None:
    assert job(birth=10).last_arrival() == 14
    assert job(birth=0).last_arrival() == 4


def test_a_new_job_has_not_been_charged_and_holds_no_value() -> None:
    j = job()
    assert (j.charge, j.value, j.ended, j.start, j.finish) == (0.0, 0.0, None, None, None)
