"""Engine digest and hash chains: states that differ hash apart, damaged history fails to verify, links re-hash."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import pickle
from collections.abc import Callable

import numpy as np
import pytest

from mechanism.engine import CHAIN_BYTES, Engine, _chain
from mechanism.events import Event
from mechanism.history import History, HistoryMarks, MemoryArchive
from mechanism.jobs import Job, JobState
from mechanism.platform import Platform
from mechanism.sow import SoW
from tests.conftest import small_platform


def _platform(seed: int = 7) -> Platform:
    return small_platform(C=4, samples=50, seed=seed)


def _sow(p: Platform, outcomes: list[list[object]], c: int = 1, mode: str = "none") -> SoW:
    return SoW.parse({"concurrency": c, "value_steps": [[5, 40.0]], "signal_mode": mode, "outcomes": outcomes}, p)


def _busy_engine() -> Engine:
    """Three rounds of a small history: retired jobs (completed, overrun, expired) and events, then active jobs
    that are RUNNING, WAITING and SUBMITTED (one with a pending arrival, one with a pending completion)."""
    p = _platform()
    e = Engine(p)
    e.submit("done", _sow(p, [[0, 1, 1.0]]))
    e.submit("overrun", _sow(p, [[0, 1, 1.0]]))
    e.submit("never", _sow(p, [[0, 1, 1.0]]))
    e.report_arrival("done", None)
    e.report_arrival("overrun", None)
    e.report_completion("done")
    e.advance()  # round 0: done completes, overrun is evicted, never expires
    e.submit("run", _sow(p, [[0, 3, 1.0]], c=2))
    e.report_arrival("run", None)
    e.advance()  # round 1: run starts
    e.submit("wait", _sow(p, [[0, 2, 0.5], [0, 3, 0.5]], mode="duration"))
    e.report_arrival("wait", "2")
    e.advance()  # round 2: wait arrives, planned to start later
    e.advance()  # round 3: run starts
    e.submit("later", _sow(p, [[0, 1, 1.0]]))
    e.report_arrival("later", None)
    e.report_completion("run")
    states = {j.id: j.state for j in e.jobs_after(-1, active_only=True)}
    assert states == {"run": JobState.RUNNING, "wait": JobState.WAITING, "later": JobState.SUBMITTED}
    assert [e.jobs[j].state for j in e.retired] == [JobState.COMPLETED, JobState.EXPIRED, JobState.EVICTED]
    return e


# ---- the digest tells apart states that differ in one thing ----

STATE_CHANGES: dict[str, Callable[[Engine], None]] = {
    "the clock": lambda e: setattr(e, "now", e.now + 1),
    "the busy node-rounds": lambda e: setattr(e, "busy_node_rounds", e.busy_node_rounds + 1),
    "the count of jobs submitted": lambda e: setattr(e, "submitted", e.submitted + 1),
    "the count of forgotten events": lambda e: setattr(e, "forgotten", HistoryMarks(0, 1, 0)),
    "the count of forgotten retired jobs": lambda e: setattr(e, "forgotten", HistoryMarks(1, 0, 0)),
    "the oracle kind": lambda e: setattr(e, "oracle_kind", "exact"),
    "the platform": lambda e: setattr(e, "platform", e.platform.model_copy(update={"seed": e.platform.seed + 1})),
    "the retired jobs' chain": lambda e: setattr(e, "_retired_chain", _chain(e._retired_chain, {})),
    "the events' chain": lambda e: setattr(e, "_event_chain", _chain(e._event_chain, {})),
}


@pytest.mark.parametrize("change", STATE_CHANGES, ids=list(STATE_CHANGES))
def test_the_digest_changes_with_every_engine_counter_and_setting(change: str) -> None:
    e = _busy_engine()
    before = e.digest()
    STATE_CHANGES[change](e)
    assert e.digest() != before, f"{change} is not in the digest"


def test_idle_engines_at_different_rounds_hash_apart() -> None:
    p = _platform()
    later = Engine(p)
    later.advance()  # nothing submitted: only the clock moved (no events, no usage ahead)
    assert not later.events and Engine(p).digest() != later.digest()


def test_engines_that_differ_only_in_oracle_kind_or_platform_hash_apart() -> None:
    p = _platform()
    digests = {Engine(p).digest(), Engine(p, oracle="exact").digest(), Engine(_platform(seed=8)).digest(),
               Engine(small_platform(C=4, samples=51)).digest()}
    assert len(digests) == 4


JOB_CHANGES: dict[str, Callable[[Job], None]] = {
    "id": lambda j: setattr(j, "id", j.id + "x"),
    "seq": lambda j: setattr(j, "seq", j.seq + 100),
    "state": lambda j: setattr(j, "state", JobState.WAITING if j.state is not JobState.WAITING else JobState.RUNNING),
    "birth": lambda j: setattr(j, "birth", j.birth - 1),
    "concurrency": lambda j: setattr(j, "concurrency", j.concurrency + 1),
    "arrival": lambda j: setattr(j, "arrival", (j.arrival or 0) + 1),
    "signal": lambda j: setattr(j, "signal", "other"),
    "start": lambda j: setattr(j, "start", (j.start or 0) + 1),
    "finish": lambda j: setattr(j, "finish", (j.finish or 0) + 1),
    "ended": lambda j: setattr(j, "ended", (j.ended or 0) + 1),
    "charge": lambda j: setattr(j, "charge", j.charge + 1.0),
    "value": lambda j: setattr(j, "value", j.value + 1.0),
    "pending_completion": lambda j: setattr(j, "pending_completion", 7 if j.pending_completion is None else None),
}


@pytest.mark.parametrize("field", JOB_CHANGES, ids=list(JOB_CHANGES))
@pytest.mark.parametrize("job_id", ["run", "wait", "later"])
def test_the_digest_changes_with_every_field_of_every_active_job(field: str, job_id: str) -> None:
    e = _busy_engine()
    before = e.digest()
    JOB_CHANGES[field](e.jobs[job_id])
    assert e.digest() != before, f"{field} of the active job {job_id} is not in the digest"


@pytest.mark.parametrize("increment", [[0.5], [0.0, 0.5]], ids=["this round", "next round"])
def test_the_digest_changes_with_the_expected_usage_of_this_round_and_ahead(increment: list[float]) -> None:
    e = _busy_engine()
    before = e.digest()
    e.prices.commit(e.now, np.array(increment))
    assert e.digest() != before


def test_the_digest_changes_with_a_pending_arrival_or_its_signal() -> None:
    """A reported arrival is applied in the next advance, so it is state: two engines that differ in the signal
    reported (both mapping to the same start) must not hash alike, since their next rounds differ."""
    p = _platform()
    sow = _sow(p, [[0, 1, 0.5, "a"], [0, 2, 0.5, "b"]], mode="explicit")
    a, b, none = Engine(p), Engine(p), Engine(p)
    for e in (a, b, none):
        plan = e.submit("j", sow).plan
    assert plan.start_for(0, "a") == plan.start_for(0, "b") == 0
    a.report_arrival("j", "a")
    b.report_arrival("j", "b")
    assert len({a.digest(), b.digest(), none.digest()}) == 3
    assert [ev.type for ev in a.advance().events] != [ev.type for ev in b.advance().events]  # they do diverge


def test_the_digest_covers_every_active_job_oldest_and_newest() -> None:
    e = _busy_engine()
    active = list(e.jobs_after(-1, active_only=True))
    assert len(active) >= 3
    for job in (active[0], active[-1]):
        before = e.digest()
        job.charge += 1.0
        assert e.digest() != before, f"the active job {job.id} is not in the digest"
        job.charge -= 1.0


# ---- the hash chains: a link from first principles, and every damaged record fails to verify ----


def test_a_chain_link_is_sha256_of_the_previous_link_and_the_records_sorted_json() -> None:
    previous = bytes(range(CHAIN_BYTES))
    record = {"type": "start", "seq": 3, "job": "j", "data": [1, 2.5, None]}  # keys out of order
    canonical = b'{"data": [1, 2.5, null], "job": "j", "seq": 3, "type": "start"}'
    assert _chain(previous, record) == hashlib.sha256(previous + canonical).digest()
    assert _chain(bytes(CHAIN_BYTES), record) != _chain(previous, record)


def test_the_event_chain_is_the_fold_of_links_over_every_events_fields() -> None:
    e = _busy_engine()
    archive = _forget_all(e)
    link = bytes(CHAIN_BYTES)
    for ev in archive.events:
        record = {"seq": ev.seq, "round": ev.round, "type": ev.type, "job": ev.job, **ev.data}
        link = hashlib.sha256(link + json.dumps(record, sort_keys=True).encode()).digest()
    assert e.verify_chains(archive.events, archive.jobs).events == link  # all forgotten: the point is the end


EVENT_DAMAGE: dict[str, Callable[[Event], Event]] = {
    "round": lambda ev: dataclasses.replace(ev, round=ev.round + 1),
    "type": lambda ev: dataclasses.replace(ev, type="cancel" if ev.type != "cancel" else "expire"),
    "job": lambda ev: dataclasses.replace(ev, job=ev.job + "x"),
    "data": lambda ev: dataclasses.replace(ev, data={**ev.data, "extra": 1}),
}


@pytest.mark.parametrize("field", EVENT_DAMAGE, ids=list(EVENT_DAMAGE))
@pytest.mark.parametrize("forgotten", [False, True], ids=["held", "archived"])
def test_an_event_damaged_in_any_field_fails_to_verify(field: str, forgotten: bool) -> None:
    e = _busy_engine()
    archive = _forget_all(e) if forgotten else None
    events = archive.events if archive is not None else e.events
    events[2] = EVENT_DAMAGE[field](events[2])
    with pytest.raises(ValueError, match="do not reproduce its hash chains"):
        e.verify_chains(*((archive.events, archive.jobs) if archive is not None else ()))


def test_an_event_out_of_its_place_fails_to_verify() -> None:
    e = _busy_engine()
    e.events[1], e.events[2] = e.events[2], e.events[1]
    with pytest.raises(ValueError, match="event 2 is where event 1 belongs"):
        e.verify_chains()


@pytest.mark.parametrize("field", [f for f in JOB_CHANGES if f != "pending_completion"] + ["pending_completion"])
@pytest.mark.parametrize("forgotten", [False, True], ids=["held", "archived"])
def test_a_retired_job_damaged_in_any_field_fails_to_verify(field: str, forgotten: bool) -> None:
    e = _busy_engine()
    archive = _forget_all(e) if forgotten else None
    jobs = archive.jobs if archive is not None else [e.jobs[i] for i in e.retired]
    assert len(jobs) == 3
    JOB_CHANGES[field](jobs[1])
    with pytest.raises(ValueError, match="do not reproduce its hash chains"):
        e.verify_chains(*((archive.events, archive.jobs) if archive is not None else ()))


def test_retired_jobs_in_another_order_fail_to_verify() -> None:
    e = _busy_engine()
    e.retired[0], e.retired[1] = e.retired[1], e.retired[0]
    with pytest.raises(ValueError, match="do not reproduce its hash chains"):
        e.verify_chains()


def test_a_missing_forgotten_part_fails_to_verify() -> None:
    e = _busy_engine()
    archive = _forget_all(e)
    e.verify_chains(archive.events, archive.jobs)
    with pytest.raises(ValueError, match="event 1 is where event 0 belongs"):
        e.verify_chains(archive.events[1:], archive.jobs)
    with pytest.raises(ValueError, match="do not reproduce its hash chains"):
        e.verify_chains(archive.events, archive.jobs[1:])
    with pytest.raises(ValueError, match="do not reproduce its hash chains"):
        e.verify_chains(archive.events[:-1], archive.jobs)


def test_a_wrong_count_of_unretired_jobs_fails_to_verify() -> None:
    e = _busy_engine()
    e.submitted += 1
    with pytest.raises(ValueError, match="do not reproduce its hash chains"):
        e.verify_chains()


def test_the_checked_point_holds_the_chains_at_the_forgotten_marks_not_at_the_end() -> None:
    e = _busy_engine()
    archive = _forget_all(e)
    e.submit("after", _sow(e.platform, [[0, 1, 1.0]]))
    e.advance()  # events and a retired job after the forgotten marks
    assert e.events and e.retired
    point = e.verify_chains(archive.events, archive.jobs)
    events, retired = bytes(CHAIN_BYTES), bytes(CHAIN_BYTES)
    for ev in archive.events:
        events = _chain(events, ev.to_dict())
    for job in archive.jobs:
        retired = _chain(retired, _retired_record(job))
    assert (point.marks, point.events, point.retired) == (archive.marks, events, retired)
    assert e.verify_chains(start=point) == point  # a check from that point needs no archived rows


def _retired_record(job: Job) -> dict[str, object]:
    """A retired job's record, field by field: its view (no report is pending once it ended) and no completion."""
    return {"id": job.id, "seq": job.seq, "state": job.state.value, "birth": job.birth, "concurrency": job.concurrency,
            "arrival": job.arrival, "signal": job.signal, "start": job.start, "finish": job.finish, "ended": job.ended,
            "charge": job.charge, "value": job.value, "reported_arrival": None, "scheduled_start": job.start,
            "pending_completion": None}


def test_forgetting_history_in_parts_keeps_exactly_what_comes_after_each_mark() -> None:
    """Two partial forgets (the second after something was already forgotten) hold exactly the history after the
    last mark, and the engine still hashes, verifies and finds its jobs like one that kept everything."""
    keep, e = _busy_engine(), _busy_engine()
    keep.advance()
    e.advance()  # "run" completes: a second charge
    archive = MemoryArchive()
    e.archive = archive
    end = e.history_marks()
    assert end.retired == 4 and end.events > 8 and end.charges == 2
    for marks in (HistoryMarks(1, 3, 1), HistoryMarks(2, 7, 1)):
        part = e.history_since(archive.marks)
        r, v, c = (marks.retired - archive.marks.retired, marks.events - archive.marks.events,
                   marks.charges - archive.marks.charges)
        archive.add(History(archive.marks, part.jobs[:r], part.events[:v], part.charges[:c]))
        assert e.forget_history(marks) == [j.id for j in part.jobs[:r]]
        rest, kept = e.history_since(marks), keep.history_since(marks)
        assert [j.id for j in rest.jobs] == [j.id for j in kept.jobs] and rest.charges == kept.charges
        assert [ev.to_dict() for ev in rest.events] == [ev.to_dict() for ev in kept.events]
        assert e.history_marks() == end and e.digest() == keep.digest()
        e.verify_chains(archive.events, archive.jobs)
    assert all(e.view(j) == keep.view(j) for j in keep.jobs)


def test_the_state_without_history_of_an_engine_that_holds_history() -> None:
    """A snapshot's state: only the active jobs, no retired jobs, events or charges, everything counted as
    forgotten, no archive; the engine itself keeps its history; with the history archived it is the same state."""
    e = _busy_engine()
    held = (list(e.jobs), list(e.retired), list(e.events), list(e.ledger.charges))
    assert held[1] and held[2] and held[3]
    live = pickle.loads(pickle.dumps(e.without_history()))
    assert list(live.jobs) == ["run", "wait", "later"]
    assert (live.retired, live.events, live.ledger.charges) == ([], [], [])
    assert live.forgotten == live.history_marks() == e.history_marks() and live.archive is None
    assert (list(e.jobs), list(e.retired), list(e.events), list(e.ledger.charges)) == held
    live.archive = MemoryArchive()
    live.archive.add(e.history_since(HistoryMarks(0, 0, 0)))
    live.verify_chains(live.archive.events, live.archive.jobs)
    assert live.digest() == e.digest() and live.view("done") == e.view("done")


def _forget_all(e: Engine) -> MemoryArchive:
    archive = MemoryArchive()
    e.archive = archive
    archive.add(e.history_since(HistoryMarks(0, 0, 0)))
    e.forget_history(archive.marks)
    return archive

