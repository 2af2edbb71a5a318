"""History marks and the in-memory archive: covering is per sequence, parts must come in order."""

from __future__ import annotations

import dataclasses

import pytest

from mechanism.events import Event
from mechanism.history import History, HistoryMarks, MemoryArchive
from mechanism.jobs import Job
from mechanism.ledger import Charge

FIELDS = ("retired", "events", "charges")


def test_marks_cover_themselves_and_anything_shorter_in_every_sequence() -> None:
    m = HistoryMarks(3, 5, 2)
    assert m.covers(m)
    assert m.covers(HistoryMarks(0, 0, 0))
    assert not HistoryMarks(0, 0, 0).covers(m)


@pytest.mark.parametrize("field", FIELDS)
def test_marks_longer_in_one_sequence_are_not_covered_by_shorter_ones(field: str) -> None:
    m = HistoryMarks(3, 5, 2)
    longer = dataclasses.replace(m, **{field: getattr(m, field) + 1})
    assert longer.covers(m) and not m.covers(longer), field


def _job(i: int) -> Job:
    return Job(id=f"j{i}", seq=i, birth=0, concurrency=1, held_sow=None, held_menu=None, held_plan=None)


def test_the_archive_appends_parts_in_order_and_finds_their_jobs_by_id() -> None:
    archive = MemoryArchive()
    assert archive.marks == HistoryMarks(0, 0, 0) and archive.job("j0") is None
    first = History(HistoryMarks(0, 0, 0), [_job(0)], [Event(0, 0, "quote", "j0")], [])
    archive.add(first)
    second = History(HistoryMarks(1, 1, 0), [_job(1), _job(2)], [Event(1, 0, "expire", "j1")],
                     [Charge("j2", 3, 1, 2, 1, 4.5)])
    archive.add(second)
    assert archive.marks == HistoryMarks(3, 2, 1)
    assert [j.id for j in archive.jobs] == ["j0", "j1", "j2"]
    assert [e.seq for e in archive.events] == [0, 1] and archive.charges == second.charges
    assert archive.job("j2") is second.jobs[1] and archive.job("j0") is first.jobs[0] and archive.job("j9") is None


@pytest.mark.parametrize("start", [HistoryMarks(0, 1, 0), HistoryMarks(1, 0, 0), HistoryMarks(0, 0, 1)])
def test_the_archive_refuses_a_part_that_does_not_start_where_it_ends(start: HistoryMarks) -> None:
    archive = MemoryArchive()
    with pytest.raises(
        ValueError, match=r"history part starts at HistoryMarks\(.*\), expected HistoryMarks\(retired=0"
    ):
        archive.add(History(start, [], [], []))
    assert archive.marks == HistoryMarks(0, 0, 0)
