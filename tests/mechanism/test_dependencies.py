"""Dependencies (`after`): a child arrives in the round after its last parent completes (released by the server,
here by `settle`), a parent that ends other than COMPLETED cancels its waiting children, and the refusals."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism.engine import Engine, EngineError, InvalidReport, ParentEnded
from mechanism.platform import Platform
from mechanism.sow import SoW
from tests.conftest import small_platform

P = small_platform(C=6, S_m=10, D_m=3, samples=200)


def sow(p: Platform = P, arrivals: tuple[int, ...] = tuple(range(8)), d: int = 1, after: tuple[str, ...] = (),
        c: int = 1, **extra: Any) -> SoW:
    n = len(arrivals)
    return SoW.parse({"concurrency": c, "value_steps": [[10, 40.0]], "signal_mode": "none", "after": list(after),
                      "outcomes": [[a, d, 1.0 / n] for a in arrivals], **extra}, p)


def advance(e: Engine) -> list[str]:
    """Play a round, then release what the round made ready, as the server's writer does; the released ids."""
    e.advance()
    ready = e.ready_to_release()
    for key in ready:
        e.release(key)
    return ready


def runs_now(e: Engine, job: str) -> bool:
    """Whether a completion of `job` reported now is accepted (it runs in the current round)."""
    return e._start_if_running_now(e.jobs[job]) is not None


def complete(e: Engine, job: str) -> int:
    """Report `job`'s arrival now (if it takes one), play rounds until it runs, report its completion and play that
    round; the round it completed in."""
    if e.jobs[job].state.value == "SUBMITTED" and not e.jobs[job].after:
        e.report_arrival(job, None)
    for _ in range(P.S_m):
        if runs_now(e, job):
            e.report_completion(job)
            advance(e)
            assert e.jobs[job].state.value == "COMPLETED"
            return e.now - 1
        advance(e)
    raise AssertionError(f"{job} never ran")


def events_of(e: Engine, job: str) -> list[tuple[int, str, dict[str, Any]]]:
    return [(ev.round, ev.type, ev.data) for ev in e.events if ev.job == job]


def test_a_child_arrives_in_the_round_after_its_last_parent_completes() -> None:
    e = Engine(P)
    e.submit("a", sow())
    e.submit("b", sow(arrivals=(0,), d=2))
    e.submit("c", sow(arrivals=tuple(range(10)), after=("a", "b")))
    e.report_arrival("b", None)
    complete(e, "a")
    assert e.jobs["c"].pending_arrival is None and e.jobs["c"].parents_left == 1
    last = complete(e, "b")
    assert e.view("c").reported_arrival == last + 1 == e.now  # released by the round b completed in
    advance(e)
    c = e.jobs["c"]
    assert c.arrival == last + 1 and c.start is not None  # scheduled by its plan for that arrival


def test_a_child_of_parents_completed_before_it_was_submitted_is_ready_at_once() -> None:
    e = Engine(P)
    e.submit("a", sow())
    complete(e, "a")
    e.submit("c", sow(after=("a",)))
    assert e.jobs["c"].parents_left == 0 and e.ready_to_release(["c"]) == ["c"]


def test_a_parent_that_ends_other_than_completed_cancels_its_children_and_theirs() -> None:
    e = Engine(P)
    e.submit("a", sow(arrivals=(0,)))  # never reported: expires in round 0
    e.submit("b", sow(after=("a",)))
    e.submit("c", sow(after=("b",)))
    advance(e)
    assert [e.jobs[j].state.value for j in "abc"] == ["EXPIRED", "CANCELLED", "CANCELLED"]
    assert events_of(e, "b")[-1] == (0, "cancel", {"reason": "parent", "parent": "a"})
    assert events_of(e, "c")[-1] == (0, "cancel", {"reason": "parent", "parent": "b"})
    assert e.jobs["b"].charge == 0.0 and e.jobs["c"].charge == 0.0


def test_an_evicted_parent_cancels_its_waiting_child() -> None:
    e = Engine(P)
    e.submit("a", sow(d=2))
    e.submit("c", sow(after=("a",)))
    e.report_arrival("a", None)
    while e.jobs["a"].state.active:  # a runs its longest declared duration without completing: evicted (overrun)
        advance(e)
    assert e.jobs["a"].state.value == "EVICTED" and e.jobs["c"].state.value == "CANCELLED"
    assert events_of(e, "c")[-1] == (e.jobs["a"].ended, "cancel", {"reason": "parent", "parent": "a"})


def test_a_release_outside_the_declared_support_expires_the_child_with_the_reason() -> None:
    e = Engine(P)
    e.submit("a", sow())
    e.submit("c", sow(arrivals=(0, 7), after=("a",)))
    done = complete(e, "a")
    assert 1 <= done + 1 < 7 and e.jobs["c"].pending_arrival == (done + 1, None)  # an offset it did not declare
    advance(e)
    assert e.jobs["c"].state.value == "EXPIRED"
    assert events_of(e, "c")[-1] == (done + 1, "expire", {"reason": "outside_support", "arrival": done + 1,
                                                          "arrival_offset": done + 1})


def test_a_child_whose_parents_are_late_expires_at_its_last_declared_arrival() -> None:
    e = Engine(P)
    e.submit("a", sow(d=3))
    e.submit("c", sow(arrivals=(0, 1), after=("a",)))
    e.report_arrival("a", None)
    advance(e)
    advance(e)  # a completes in round 0 at the earliest: c, last declared at offset 1, cannot arrive after it
    assert events_of(e, "c")[-1] == (1, "expire", {"reason": "parents_late", "parents_left": 1})
    assert e.jobs["a"].state.active


@pytest.mark.parametrize("after, match", [
    (("c",), r"after\[0\]='c' names the job itself \(a cycle\)"),
    (("zz",), r"after\[0\]='zz' is not a job of the same tenant submitted before"),
])
def test_unknown_parents_and_cycles_are_refused(after: tuple[str, ...], match: str) -> None:
    e = Engine(P)
    with pytest.raises(EngineError, match=match):
        e.submit("c", sow(after=after))
    assert "c" not in e.jobs and e.submitted == 0


def test_a_parent_that_already_ended_badly_is_refused() -> None:
    e = Engine(P)
    e.submit("a", sow(arrivals=(0,)))
    advance(e)
    with pytest.raises(ParentEnded, match=r"after\[0\]='a' ended EXPIRED: a job waiting for it could never arrive"):
        e.submit("c", sow(after=("a",)))


def test_a_child_takes_no_arrival_report_and_no_early_release() -> None:
    e = Engine(P)
    e.submit("a", sow())
    e.submit("c", sow(after=("a",)))
    with pytest.raises(InvalidReport, match=r"waits for its parents \(after\)"):
        e.report_arrival("c", None)
    with pytest.raises(InvalidReport, match=r"1 parents not completed\) is not waiting for its arrival"):
        e.release("c")


def test_payload_and_parents_stay_on_the_job_after_it_ends_and_in_its_view() -> None:
    e = Engine(P)
    e.submit("a", sow(command=["sleep", "1"], env={"X": "1"}))
    e.submit("c", sow(after=("a",)))
    complete(e, "a")
    view = e.view("a")
    assert view.state == "COMPLETED" and view.command == ("sleep", "1") and view.env == (("X", "1"),)
    assert e.view("c").after == ("a",)
    assert "command" not in e.view("c").to_dict() and e.view("a").to_dict()["env"] == {"X": "1"}


# ---- invariants over random pipelines ----

@st.composite
def pipelines(draw: st.DrawFn) -> tuple[list[tuple[int, ...]], list[list[bool]]]:
    """Up to 6 jobs, each naming some earlier ones as parents; per round and job whether it reports completion."""
    n = draw(st.integers(1, 6))
    parents = [tuple(sorted(draw(st.sets(st.integers(0, i - 1), max_size=3)))) if i else () for i in range(n)]
    finishes = draw(st.lists(st.lists(st.booleans(), min_size=n, max_size=n), min_size=10, max_size=10))
    return parents, finishes


@settings(max_examples=40, deadline=None)
@given(pipelines())
def test_children_arrive_exactly_the_round_after_their_last_parent_completes(
        case: tuple[list[tuple[int, ...]], list[list[bool]]]) -> None:
    parents, finishes = case
    e = Engine(P)
    names = [f"j{i}" for i in range(len(parents))]
    for name, ps in zip(names, parents, strict=True):
        e.submit(name, sow(d=2, after=tuple(names[i] for i in ps)))
        if not ps:
            e.report_arrival(name, None)
    for wanted in finishes:
        for name, finish in zip(names, wanted, strict=True):
            if finish and e.jobs[name].pending_completion is None and runs_now(e, name):
                e.report_completion(name)
        advance(e)
    for name, ps in zip(names, parents, strict=True):
        job = e.jobs[name]
        if not ps:
            continue
        ends = [e.jobs[names[i]] for i in ps]
        if all(p.state.value == "COMPLETED" for p in ends) and job.arrival is not None:
            assert job.arrival == max(p.ended for p in ends if p.ended is not None) + 1
        if any(p.state.value not in ("COMPLETED",) and not p.state.active for p in ends):
            assert job.state.value in ("CANCELLED", "EXPIRED"), (name, job.state)
            assert job.charge == 0.0
        if job.arrival is not None:
            assert all(p.state.value == "COMPLETED" for p in ends)
    copy = pickle.loads(pickle.dumps(e))
    assert copy.digest() == e.digest()
