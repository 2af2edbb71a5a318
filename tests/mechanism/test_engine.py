"""Engine: LIFO order, capacity, the job state machine, report validation, determinism and replay."""

from __future__ import annotations

import contextlib
import dataclasses
import pickle
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism.engine import (
    DuplicateJob,
    Engine,
    EngineError,
    InvalidReport,
    OutsideSupport,
    Quote,
    UnknownJob,
)
from mechanism.failure import MonteCarloOracle
from mechanism.history import HistoryMarks, MemoryArchive
from mechanism.jobs import IllegalTransition, JobState, Released
from mechanism.platform import Platform
from mechanism.sow import SoW
from models.simulation import run_simulation
from tests.conftest import random_sow, small_platform


def one_round_sow(p: Platform, c: int = 1, d: int = 1, arrivals: tuple[int, ...] = (0,)) -> SoW:
    n = len(arrivals)
    return SoW.parse({"concurrency": c, "value_steps": [[5, 40.0]],
                      "outcomes": [[a, d, 1.0 / n] for a in arrivals]}, p)


@dataclass
class RoundRecord:
    active_at_overload: dict[str, int]  # job -> seq, active when step 3 ran
    demanding: set[str]  # active jobs demanding the round when step 3 ran (running, or starting there)
    removed: dict[str, int]  # evicted or cancelled by overload this round
    ran: dict[str, int]  # job -> concurrency, for every job that occupied this round


def random_run(seed: int, n_jobs: int = 12, rounds: int = 14,
               overload: str = "newest") -> tuple[Engine, list[RoundRecord]]:
    """Drive an engine with random SoWs and random (possibly off-plan) reports; record every round."""
    p = small_platform(C=4, samples=300, seed=seed % 1000, overload=overload)
    rng = np.random.default_rng(seed)
    e = Engine(p)
    records = []
    born = 0
    for _ in range(rounds):
        for _ in range(int(rng.integers(0, 4))):
            if born < n_jobs:
                e.submit(f"j{born}", random_sow(rng, p, max_outcomes=3))
                born += 1
        for job in list(e.jobs.values()):
            groups = [g for g in job.sow.table.groups if g[0] == e.now - job.birth] if job.state.active else []
            if job.state is JobState.SUBMITTED and groups and rng.random() < 0.8:
                e.report_arrival(job.id, groups[int(rng.integers(0, len(groups)))][1])
            if rng.random() < 0.4:
                with contextlib.suppress(InvalidReport):
                    e.report_completion(job.id)
        active = {j.id: j.seq for j in e.jobs.values() if j.state.active}
        t = e.now
        waiting_starts = {j.id for j in e.jobs.values() if j.state is JobState.WAITING and j.start == t}
        running_before = {j.id for j in e.jobs.values() if j.state is JobState.RUNNING}
        report = e.advance()
        arrived_now = {ev.job for ev in report.events if ev.type == "arrive" and ev.data.get("start") == t}
        kinds = {ev.job: ev for ev in report.events}
        step2 = {j for j, ev in kinds.items() if ev.type in ("expire", "not_scheduled")}
        removed = {j: e.jobs[j].seq for j, ev in kinds.items() if ev.data.get("reason") == "overload"}
        ended_running = {j for j, ev in kinds.items()
                         if ev.type == "complete" or ev.data.get("reason") == "overrun"}
        ran = {j.id: j.concurrency for j in e.jobs.values()
               if j.state is JobState.RUNNING or j.id in ended_running}
        demanding = (running_before | waiting_starts | arrived_now) - step2
        records.append(RoundRecord({j: s for j, s in active.items() if j not in step2}, demanding, removed, ran))
        assert report.running == sum(ran.values())
    return e, records


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_lifo_never_removes_an_older_active_job_while_a_newer_one_survives(seed: int) -> None:
    _, records = random_run(seed)
    for r in records:
        survivors = [s for j, s in r.active_at_overload.items() if j not in r.removed]
        for seq in r.removed.values():
            assert all(s < seq for s in survivors)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_running_jobs_never_exceed_capacity(seed: int) -> None:
    e, records = random_run(seed)
    for r in records:
        assert sum(r.ran.values()) <= e.platform.C


def test_random_runs_do_exercise_lifo_removals() -> None:
    removed = sum(len(r.removed) for seed in range(8) for r in random_run(seed)[1])
    assert removed > 0


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_newest_demanding_removes_only_demanding_jobs_newest_first_and_fits_capacity(seed: int) -> None:
    e, records = random_run(seed, overload="newest_demanding")
    for r in records:
        assert set(r.removed) <= r.demanding
        survivors = [r.active_at_overload[j] for j in r.demanding if j not in r.removed]
        for seq in r.removed.values():
            assert all(s < seq for s in survivors)
        assert sum(r.ran.values()) <= e.platform.C


def test_random_runs_under_newest_demanding_do_spare_waiting_jobs_that_remark_2_cancels() -> None:
    # Remark 2 removes jobs that do not demand the round in these runs; the other rule still removes some.
    spared = removed = 0
    for seed in range(8):
        spared += sum(1 for r in random_run(seed)[1] for j in r.removed if j not in r.demanding)
        removed += sum(len(r.removed) for r in random_run(seed, overload="newest_demanding")[1])
    assert spared > 0 and removed > 0


def two_way_sow(p: Platform, c: int) -> SoW:
    """Arrives at 0 or 1; worth 40 only if done by the end of round 0, so waiting to avoid a collision costs."""
    return SoW.parse({"concurrency": c, "value_steps": [[1, 40.0], [6, 2.0]],
                      "outcomes": [[0, 1, 0.5], [1, 1, 0.5]]}, p)


def test_overload_cancels_the_newest_job_and_keeps_the_older_one() -> None:
    p = small_platform(C=3, samples=200)
    e = Engine(p)
    e.submit("old", two_way_sow(p, 2))
    e.submit("new", two_way_sow(p, 2))
    assert e.jobs["old"].plan.start_for(0, None) == 0 and e.jobs["new"].plan.start_for(0, None) == 0
    e.report_arrival("old", None)
    e.report_arrival("new", None)
    e.report_completion("old")
    e.report_completion("new")
    events = [(ev.job, ev.type, ev.data.get("reason")) for ev in e.advance().events if ev.type != "arrive"]
    assert events == [("new", "cancel", "overload"), ("old", "start", None), ("old", "complete", None)]


def test_newest_active_job_is_cancelled_even_when_it_does_not_contribute() -> None:
    # Remark 2: "old" and "mid" collide in round 0; "late" cannot run before round 1 but is newest, so it goes
    # first; the load is still too high, so "mid" goes as well; "old" survives.
    p = small_platform(C=3, samples=200)
    e = Engine(p)
    e.submit("old", two_way_sow(p, 2))
    e.submit("mid", two_way_sow(p, 2))
    e.submit("late", SoW.parse({"concurrency": 1, "value_steps": [[6, 40.0]], "outcomes": [[2, 1, 1.0]]}, p))
    assert e.jobs["late"].plan.start_for(2, None) is not None
    e.report_arrival("old", None)
    e.report_arrival("mid", None)
    e.report_completion("old")
    removed = [ev.job for ev in e.advance().events if ev.data.get("reason") == "overload"]
    assert removed == ["late", "mid"]
    assert e.jobs["old"].state is JobState.COMPLETED


def test_newest_demanding_spares_the_waiting_newest_job_and_evicts_the_newest_demanding_one() -> None:
    # The case above under the newest_demanding rule: "late" does not demand round 0 and stays; "mid" goes.
    p = small_platform(C=3, samples=200, overload="newest_demanding")
    e = Engine(p)
    e.submit("old", two_way_sow(p, 2))
    e.submit("mid", two_way_sow(p, 2))
    e.submit("late", SoW.parse({"concurrency": 1, "value_steps": [[6, 40.0]], "outcomes": [[2, 1, 1.0]]}, p))
    e.report_arrival("old", None)
    e.report_arrival("mid", None)
    e.report_completion("old")
    removed = [ev.job for ev in e.advance().events if ev.data.get("reason") == "overload"]
    assert removed == ["mid"]
    assert e.jobs["old"].state is JobState.COMPLETED and e.jobs["late"].state.active


def test_illegal_transitions_raise() -> None:
    p = small_platform()
    e = Engine(p)
    e.submit("a", one_round_sow(p))
    job = e.jobs["a"]
    with pytest.raises(IllegalTransition, match="SUBMITTED -> RUNNING is not allowed"):
        job.move(JobState.RUNNING, 0)
    with pytest.raises(IllegalTransition, match="SUBMITTED -> COMPLETED is not allowed"):
        job.move(JobState.COMPLETED, 0)
    job.move(JobState.EXPIRED, 0)
    with pytest.raises(IllegalTransition, match="EXPIRED -> WAITING is not allowed"):
        job.move(JobState.WAITING, 0)


def test_job_life_cycle_submitted_waiting_running_completed_with_charge() -> None:
    p = small_platform(C=4, samples=100)
    e = Engine(p)
    q = e.submit("a", one_round_sow(p, c=2, d=2))
    menu = e.jobs["a"].menu
    assert q.plan.groups[0].start == 0
    e.report_arrival("a", None)
    assert e.view("a").scheduled_start == 0
    r0 = e.advance()
    assert [ev.type for ev in r0.events] == ["arrive", "start"]
    e.report_completion("a")
    r1 = e.advance()
    (done,) = r1.events
    assert done.type == "complete" and done.data["duration"] == 2
    assert done.data["charge"] == pytest.approx(float(menu.price(0, 2, 2)))
    assert e.jobs["a"].value == 40.0 and e.ledger.revenue == done.data["charge"]


def test_a_job_running_past_its_longest_declared_duration_is_evicted_without_charge() -> None:
    p = small_platform(C=4, samples=100)
    e = Engine(p)
    e.submit("a", one_round_sow(p, c=1, d=2))
    e.report_arrival("a", None)
    e.advance()
    r = e.advance()
    (ev,) = r.events
    assert (ev.type, ev.data["reason"]) == ("evict", "overrun")
    assert e.ledger.revenue == 0.0 and e.jobs["a"].charge == 0.0


def test_unreported_job_expires_after_its_last_possible_arrival() -> None:
    p = small_platform(C=4, samples=100)
    e = Engine(p)
    e.submit("a", one_round_sow(p, arrivals=(0, 1)))
    assert [ev.type for ev in e.advance().events] == []
    assert [ev.type for ev in e.advance().events] == ["expire"]


def test_arrival_in_a_never_group_ends_not_scheduled() -> None:
    p = small_platform(C=4, samples=100)
    e = Engine(p)
    # Worth 1 at c=3 for 3 rounds, while even the cheapest round costs 3 * 1/(2 D_m) = 0.5 per round: never.
    e.submit("a", SoW.parse({"concurrency": 3, "value_steps": [[6, 1.0]], "outcomes": [[0, 3, 1.0]]}, p))
    assert e.jobs["a"].plan.start_for(0, None) is None
    e.report_arrival("a", None)
    assert [ev.type for ev in e.advance().events] == ["not_scheduled"]


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda e: e.report_arrival("nope", None), UnknownJob, "job 'nope' not found"),
    (lambda e: e.report_completion("nope"), UnknownJob, "job 'nope' not found"),
    (lambda e: e.report_arrival("a", "x"), OutsideSupport, r"signal='x'\) is outside its declared support"),
    (lambda e: e.report_completion("a"), InvalidReport, "is SUBMITTED and does not run in round 0"),
    (lambda e: e.submit("a", one_round_sow(small_platform())), DuplicateJob, "job id 'a' already exists"),
    (lambda e: e.submit("", one_round_sow(small_platform())), EngineError, "must have 1 to 256 characters"),
    (lambda e: e.submit("x\ny", one_round_sow(small_platform())), EngineError,
     r"job id 'x\\ny' has a character that is not printable at position 1"),
    (lambda e: e.submit("a\u200bb", one_round_sow(small_platform())), EngineError, "not printable at position 1"),
    (lambda e: e.submit("z", SoW.model_validate({"concurrency": 9, "value_steps": [[3, 5.0]],
                                                 "outcomes": [[0, 1, 1.0]]})), EngineError,
     "concurrency=9 exceeds the bound C_m=3"),
])
def test_bad_commands_are_refused_and_change_nothing(call: object, error: type[Exception], match: str) -> None:
    p = small_platform(samples=100)
    e = Engine(p)
    e.submit("a", one_round_sow(p, arrivals=(1,)))
    digest = e.digest()
    with pytest.raises(error, match=match):
        call(e)  # type: ignore[operator]
    assert e.digest() == digest


def test_duplicate_and_late_reports_are_refused() -> None:
    p = small_platform(samples=100)
    e = Engine(p)
    e.submit("a", one_round_sow(p, d=2))
    e.report_arrival("a", None)
    with pytest.raises(InvalidReport, match="already reported its arrival in round 0"):
        e.report_arrival("a", None)
    e.report_completion("a")
    with pytest.raises(InvalidReport, match="already reported its completion in round 0"):
        e.report_completion("a")
    e.advance()
    with pytest.raises(InvalidReport, match="is COMPLETED: an arrival is accepted only while SUBMITTED"):
        e.report_arrival("a", None)
    with pytest.raises(InvalidReport, match="is COMPLETED and does not run in round 1"):
        e.report_completion("a")


def test_same_seed_gives_identical_events_and_different_seeds_differ() -> None:
    from models.workloads import make_workload

    def events(seed: int) -> list[dict[str, object]]:
        return [ev.to_dict() for ev in run_simulation(make_workload("overload", seed=seed, rounds=12)).events]

    assert events(3) == events(3)
    assert events(3) != events(4)


def test_replaying_the_inputs_rebuilds_the_identical_state() -> None:
    p = small_platform(C=4, samples=300, seed=11)
    rng = np.random.default_rng(2)
    log: list[tuple[str, tuple[object, ...]]] = []
    e = Engine(p)
    for i in range(10):
        sow = random_sow(rng, p)
        e.submit(f"j{i}", sow)
        log.append(("submit", (f"j{i}", sow)))
        for job in e.jobs.values():
            groups = [g for g in job.sow.table.groups if g[0] == e.now - job.birth] if job.state.active else []
            if job.state is JobState.SUBMITTED and groups:
                e.report_arrival(job.id, groups[0][1])
                log.append(("report_arrival", (job.id, groups[0][1])))
        e.advance()
        log.append(("advance", ()))
    replay = Engine(p)
    for name, args in log:
        getattr(replay, name)(*args)
    assert replay.digest() == e.digest()
    assert [ev.to_dict() for ev in replay.events] == [ev.to_dict() for ev in e.events]


@pytest.mark.parametrize("seed", [0, 1])
def test_each_jobs_fate_is_the_lifo_definition_applied_to_the_realized_earlier_jobs(seed: int) -> None:
    """docs/model.md section 5 on the realized outcomes: a job fails iff the jobs active at its birth overflow while it
    waits or leave it no room while it runs. The engine's verdict must be exactly that."""
    from mechanism.lifo import fails_given_loads, lifo_loads
    from models.simulation import drive
    from models.workloads import make_workload

    w = make_workload("overload", seed=seed, rounds=12)
    e = Engine(w.platform)
    earlier: dict[str, list[str]] = {}
    plans = {}  # ended jobs release their plans: keep them from the quotes
    submit = e.submit

    def recording_submit(job_id: str, sow: SoW, after: tuple[str, ...] | None = None) -> Quote:
        earlier[job_id] = [j.id for j in e.jobs.values() if j.state.active]
        quote = submit(job_id, sow, after)
        plans[job_id] = quote.plan
        return quote

    e.submit = recording_submit  # type: ignore[method-assign]
    drive(w, e)
    real = {j.id: j for j in w.jobs}

    def realized_start(job_id: str) -> int | None:
        job, wj = e.jobs[job_id], real[job_id]
        return plans[job_id].start_for(job.birth + wj.arrival_offset, wj.signal)

    checked = 0
    for job_id, before in earlier.items():
        job, s = e.jobs[job_id], realized_start(job_id)
        if s is None:
            continue
        t = job.birth
        paths = []
        for k in before:
            sk, dk, ck = realized_start(k), real[k].duration, e.jobs[k].concurrency
            paths.append((-1, dk, ck) if sk is None else (max(sk - t, 0), sk + dk - max(sk, t), ck))
        loads, _ = lifo_loads(paths, w.platform.horizon, w.platform.C)
        predicted = fails_given_loads(loads, s - t, real[job_id].duration, job.concurrency, w.platform.C)
        assert predicted == (job.state in (JobState.EVICTED, JobState.CANCELLED)), job_id
        checked += 1
    assert checked > 10


def test_a_pickled_engine_continues_bit_for_bit_like_the_original() -> None:
    p = small_platform(C=4, samples=500, seed=11)
    rng = np.random.default_rng(11)
    a = Engine(p)
    for i in range(6):
        a.submit(f"j{i}", random_sow(rng, p, signal_mode="duration"))
        if i % 2:
            a.advance()
    b = pickle.loads(pickle.dumps(a))  # mid-round, with jobs appended to the oracle since the round began
    assert b.digest() == a.digest()
    later = [random_sow(rng, p, signal_mode="duration") for _ in range(4)]
    for i, sow in enumerate(later):
        assert a.submit(f"k{i}", sow) == b.submit(f"k{i}", sow)
        assert a.advance() == b.advance()
    assert b.digest() == a.digest()


def test_settle_is_a_no_op_without_a_crowded_monte_carlo_round() -> None:
    p = small_platform(C=4, samples=200, seed=3)
    assert Engine(p).settle() is False  # no oracle state for this round yet
    assert Engine(p, oracle="exact").settle() is False


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_ended_jobs_never_change_after_they_leave_the_active_set(seed: int) -> None:
    """The digest hashes an ended job once, when it is retired; reports after that must change nothing."""
    e, _ = random_run(seed, n_jobs=16, rounds=18)
    assert e.retired and len(e.retired) + e.active_jobs == len(e.jobs)
    for job_id in e.retired:  # late reports on ended jobs are refused ...
        with contextlib.suppress(EngineError):
            e.report_completion(job_id)
        with contextlib.suppress(EngineError):
            e.report_arrival(job_id, None)
    e.verify_chains()  # ... and every ended job still hashes as it did when it was retired


def test_the_hash_chains_notice_a_changed_ended_job_or_event() -> None:
    e, _ = random_run(6, n_jobs=16, rounds=18)
    e.verify_chains()
    e.jobs[e.retired[0]].charge += 1.0
    with pytest.raises(ValueError, match="do not reproduce its hash chains"):
        e.verify_chains()
    e.jobs[e.retired[0]].charge -= 1.0
    e.events.pop()
    with pytest.raises(ValueError, match="do not reproduce its hash chains"):
        e.verify_chains()


def _drive(e: Engine, rng: np.random.Generator, start: int, n: int) -> None:
    """One submission per round, every arrival reported on its first group, completions whenever accepted."""
    for i in range(start, start + n):
        e.submit(f"j{i}", random_sow(rng, e.platform, signal_mode="duration"))
        for job in list(e.jobs_after(-1, active_only=True)):
            groups = [g for g in job.sow.table.groups if g[0] == e.now - job.birth]
            if job.state is JobState.SUBMITTED and groups:
                e.report_arrival(job.id, groups[0][1])
            with contextlib.suppress(InvalidReport):
                e.report_completion(job.id)
        e.advance()


def _refusal(call: Any, job_id: str) -> tuple[str, str] | None:
    try:
        call(job_id)
    except EngineError as exc:
        return type(exc).__name__, str(exc)
    return None


def test_an_engine_that_forgets_its_history_into_an_archive_acts_bit_for_bit_like_one_that_keeps_it() -> None:
    p = small_platform(C=4, samples=300, seed=12)
    keep, forget = Engine(p), Engine(p)
    archive = MemoryArchive()
    forget.archive = archive
    for block in range(4):
        for e in (keep, forget):
            _drive(e, np.random.default_rng(100 + block), 8 * block, 8)
        archive.add(forget.history_since(archive.marks))
        gone = forget.forget_history(archive.marks)
        assert set(gone) == {j.id for j in archive.jobs[-len(gone):]} and not set(gone) & set(forget.jobs)
        assert forget.digest() == keep.digest() and forget.history_marks() == keep.history_marks()
    assert forget.forgotten == archive.marks and len(forget.jobs) < len(keep.jobs) and archive.jobs
    assert [ev.to_dict() for ev in archive.events + forget.events] == [ev.to_dict() for ev in keep.events]
    assert archive.charges + forget.ledger.charges == keep.ledger.charges
    forget.verify_chains(archive.events, archive.jobs)
    with pytest.raises(ValueError, match="do not reproduce its hash chains"):
        forget.verify_chains()  # without the forgotten part
    for job_id in keep.jobs:  # forgotten jobs still look, quote and refuse reports exactly as kept ones do
        assert forget.view(job_id) == keep.view(job_id)
        assert _refusal(forget.quote, job_id) == _refusal(keep.quote, job_id)
        if _refusal(keep.quote, job_id) is None:
            assert forget.quote(job_id) == keep.quote(job_id)
        assert _refusal(forget.report_completion, job_id) == _refusal(keep.report_completion, job_id)
    sow = random_sow(np.random.default_rng(1), p, signal_mode="duration")
    with pytest.raises(DuplicateJob, match="'j0' already exists"):
        forget.submit("j0", sow)
    with pytest.raises(UnknownJob, match="'nope' not found"):
        forget.view("nope")
    back = pickle.loads(pickle.dumps(forget.without_history()))  # a snapshot: active jobs and counters only
    back.archive = MemoryArchive()
    back.archive.add(keep.history_since(HistoryMarks(0, 0, 0)))
    back.verify_chains(back.archive.events, back.archive.jobs)
    assert back.digest() == keep.digest() and back.forgotten == keep.history_marks()
    assert back.submit("next", sow) == keep.submit("next", sow) and back.advance() == keep.advance()
    assert back.digest() == keep.digest()


def test_checking_the_chains_from_an_earlier_checked_point_agrees_with_checking_from_the_start() -> None:
    p = small_platform(C=4, samples=300, seed=12)
    e, archive = Engine(p), MemoryArchive()
    e.archive = archive
    points = []
    for block in range(3):
        _drive(e, np.random.default_rng(100 + block), 8 * block, 8)
        archive.add(e.history_since(archive.marks))
        e.forget_history(archive.marks)
        points.append(e.verify_chains(archive.events, archive.jobs))  # from the start
        assert points[-1].marks == e.forgotten
    first = points[0]
    rest = (archive.events[first.marks.events:], archive.jobs[first.marks.retired:])
    assert e.verify_chains(*rest, start=first) == points[-1]  # only what was archived after the first check
    with pytest.raises(ValueError, match="do not reproduce its hash chains"):
        e.verify_chains(*rest, start=dataclasses.replace(first, events=bytes(32)))  # a point that is not the chain's
    with pytest.raises(ValueError, match=r"event \d+ is where event \d+ belongs"):
        e.verify_chains(archive.events, archive.jobs, start=first)  # rows from the start after a later point
    later = dataclasses.replace(first, marks=HistoryMarks(10**6, 0, 0))
    with pytest.raises(ValueError, match="lies beyond the forgotten history"):
        e.verify_chains(start=later)


def test_forgetting_and_archiving_history_refuse_what_is_not_held_or_not_next() -> None:
    e, _ = random_run(7, n_jobs=16, rounds=18)
    marks = e.history_marks()
    with pytest.raises(ValueError, match="needs an archive"):
        e.forget_history(marks)
    e.archive = MemoryArchive()
    with pytest.raises(ValueError, match=r"history part starts at HistoryMarks\(retired=1"):
        e.archive.add(e.history_since(HistoryMarks(1, 0, 0)))
    with pytest.raises(ValueError, match="cannot forget up to"):
        e.forget_history(HistoryMarks(marks.retired + 1, marks.events, marks.charges))
    e.archive.add(e.history_since(HistoryMarks(0, 0, 0)))
    e.forget_history(marks)
    with pytest.raises(ValueError, match="is not held"):
        e.history_since(HistoryMarks(0, 0, 0))
    with pytest.raises(ValueError, match="cannot forget up to"):
        e.forget_history(HistoryMarks(0, 0, 0))


@pytest.mark.parametrize("seed", [8, 9])
def test_jobs_after_a_seq_are_the_later_submissions_in_order_and_active_only_keeps_the_active_ones(seed: int) -> None:
    e, _ = random_run(seed, n_jobs=16, rounds=10)
    everything = list(e.jobs.values())
    for after in (-1, 0, 3, 9, 15, 40):
        assert list(e.jobs_after(after)) == [j for j in everything if j.seq > after]
        assert list(e.jobs_after(after, active_only=True)) == [
            j for j in everything if j.seq > after and j.state.active
        ]
    e.archive = MemoryArchive()
    e.archive.add(e.history_since(HistoryMarks(0, 0, 0)))
    e.forget_history(e.history_marks())
    assert list(e.jobs_after(4)) == [j for j in everything if j.seq > 4 and j.state.active]  # only held jobs


def test_an_ended_job_releases_its_sow_and_menu_and_keeps_its_plan_only_if_it_completed() -> None:
    e, _ = random_run(10, n_jobs=16, rounds=18)
    ended = [e.jobs[i] for i in e.retired]
    assert {j.state for j in ended} >= {JobState.COMPLETED} and any(j.state is not JobState.COMPLETED for j in ended)
    for job in ended:
        assert job.held_sow is None and job.held_menu is None
        assert (job.held_plan is not None) == (job.state is JobState.COMPLETED)
        with pytest.raises(Released, match=f"job {job.id} ended \\({job.state.value}\\) and no longer holds its SoW"):
            job.sow  # noqa: B018
        if job.state is JobState.COMPLETED:
            assert e.quote(job.id).plan is job.plan
        else:
            with pytest.raises(InvalidReport, match="only completed jobs keep their quote"):
                e.quote(job.id)
        assert e.view(job.id).concurrency == job.concurrency
    e.submit("fresh", random_sow(np.random.default_rng(0), e.platform))
    active = [j for j in e.jobs.values() if j.state.active]
    assert active
    for job in active:
        assert job.sow.concurrency == job.concurrency and job.menu is not None and job.plan is not None
        with pytest.raises(IllegalTransition, match="only an ended job releases its SoW"):
            job.release()


def test_a_job_id_of_exactly_256_characters_is_accepted_and_257_refused() -> None:
    p = small_platform(samples=100)
    e = Engine(p)
    e.submit("x" * 256, one_round_sow(p))
    with pytest.raises(EngineError, match="must have 1 to 256 characters"):
        e.submit("y" * 257, one_round_sow(p))


def test_settle_is_false_in_a_quoted_round_with_nothing_crowded() -> None:
    p = small_platform(C=4, samples=200, seed=3)
    e = Engine(p)
    e.submit("a", one_round_sow(p))
    assert e.settle() is False  # the oracle exists for this round, and no row has a bound above C - C_m


def test_a_running_jobs_residual_keeps_only_durations_longer_than_it_has_run() -> None:
    # docs/model.md section 5: running since s, at round t it has durations >= t - s + 1 left, renormalised; from t
    # it occupies d - (t - s) more rounds. Started at 0, at round 1: d in {2, 3} of {1, 2, 3}, 1/2 each.
    p = small_platform(samples=100)
    e = Engine(p)
    e.submit("a", SoW.parse({"concurrency": 2, "value_steps": [[6, 40.0]],
                             "outcomes": [[0, 1, 0.2], [0, 2, 0.3], [0, 3, 0.5]]}, p))
    e.report_arrival("a", None)
    e.advance()
    assert e.jobs["a"].state is JobState.RUNNING and e.now == 1
    (r,) = e.residuals()
    assert (r.concurrency, r.start.tolist(), r.length.tolist()) == (2, [0, 0], [1, 2])
    assert r.probability.tolist() == pytest.approx([0.375, 0.625], rel=1e-12)  # 0.3 / 0.8, 0.5 / 0.8


def test_the_view_reports_the_round_of_a_pending_arrival_and_its_scheduled_start() -> None:
    p = small_platform(samples=100)
    e = Engine(p)
    e.submit("a", one_round_sow(p, arrivals=(1,)))
    e.advance()
    view = e.report_arrival("a", None)
    assert (view.reported_arrival, view.scheduled_start, view.state) == (1, 1, "SUBMITTED")


def test_a_completion_reported_by_a_job_that_overload_then_removes_is_dropped_with_it() -> None:
    # A (c=3) arrives at 0 or 1; B (c=2, worth 40 only if it completes at 1) is planned at 0 with E = 1/2.
    # Both start at 0: 3 + 2 > 4, so B, the newest, is cancelled, and its reported completion goes with it.
    p = small_platform(samples=400)
    e = Engine(p)
    e.submit("a", SoW.parse({"concurrency": 3, "value_steps": [[6, 40.0]],
                             "outcomes": [[0, 2, 0.5], [1, 2, 0.5]]}, p))
    e.submit("b", SoW.parse({"concurrency": 2, "value_steps": [[1, 40.0]], "outcomes": [[0, 1, 1.0]]}, p))
    assert e.jobs["b"].plan.start_for(0, None) == 0
    e.report_arrival("a", None)
    e.report_arrival("b", None)
    e.report_completion("b")
    e.advance()
    assert e.jobs["b"].state is JobState.CANCELLED
    with pytest.raises(InvalidReport, match="job 'b' is CANCELLED and does not run in round 1"):
        e.report_completion("b")


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 3))
def test_the_residual_a_submission_appends_is_the_residual_of_the_job_born_now(seed: int, now: int) -> None:
    # submit builds it from the plan's starts directly; _residual's masks and shifts must give the same arrays.
    rng = np.random.default_rng(seed)
    p = small_platform(samples=50)
    e = Engine(p)
    for _ in range(now):
        e.advance()
    for i in range(4):
        e.submit(f"j{i}", random_sow(rng, p, max_outcomes=5, signal_mode=str(rng.choice(["none", "duration"]))))
        assert isinstance(e._oracle, MonteCarloOracle)
        appended, fresh = e._oracle._appended[-1], e._residual(e.jobs[f"j{i}"])
        assert (appended.job, appended.concurrency) == (fresh.job, fresh.concurrency)
        for name in ("start", "length", "probability"):
            a, b = getattr(appended, name), getattr(fresh, name)
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name
