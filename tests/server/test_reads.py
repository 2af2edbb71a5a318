"""Reads over held and archived history: a scheduler that archives its history and forgets it answers every command
and every read exactly as one that keeps everything in memory."""

from __future__ import annotations

import contextlib
import itertools
import math
import pickle
import sqlite3
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism.engine import Engine
from mechanism.history import History, HistoryMarks
from mechanism.jobs import Job, JobState
from mechanism.ledger import Charge
from mechanism.views import Payload
from server import namespace, reads
from server.archive import SCHEMA as ARCHIVE_SCHEMA
from server.archive import Archive, ArchiveError
from server.namespace import named
from server.scheduler import DurableScheduler
from server.service import encode_reply
from server.store import CommandStore
from tests.conftest import random_sow
from tests.server.test_scheduler import CONFIG, PLATFORM, random_commands

TENANTS = (None, "acme", "globex", "operator", "nobody")


def open_with(path: Path, every: int) -> DurableScheduler:
    return DurableScheduler(CONFIG, CommandStore(path, CONFIG.identity()), encode_reply, snapshot_every=every)


def outcome(sched: DurableScheduler, i: int, caller: str, kind: str, body: dict[str, Any]) -> Any:
    try:
        return sched.execute(caller, f"r{i}", kind, body).reply
    except Exception as exc:  # refusals: the same type and message from both
        return type(exc).__name__, str(exc)


def all_pages(read: Any, size: int) -> tuple[list[Any], list[Any]]:
    """Follow a paged read to its end: (items, page tokens)."""
    items, tokens, after = [], [], -1
    while True:
        page = read(after, size)
        assert len(page[0]) <= size
        items += page[0]
        tokens.append(page[1])
        if page[1] is None:
            return items, tokens
        after = page[1]


def served(sched: DurableScheduler, size: int, start: int) -> dict[str, Any]:
    e, archive, owner = sched.engine, sched.store.archive, namespace.tenant_of
    out: dict[str, Any] = {}
    for tenant in TENANTS:
        for states in (frozenset(), frozenset({"COMPLETED"}), frozenset({"SUBMITTED", "RUNNING", "WAITING"}),
                       frozenset({"EXPIRED", "RUNNING"})):
            def jobs(after: int, n: int, tenant: str | None = tenant, states: frozenset[str] = states) -> Any:
                page = reads.job_page(e, archive, owner, tenant, after, n, states)
                return [(v, t) for v, t in page.jobs], page.next_after
            out[f"jobs {tenant} {sorted(states)}"] = all_pages(jobs, size)
        if tenant is not None:
            for rounds in ((0, None), (2, 5), (start, start + 3)):
                def charges(after: int, n: int, tenant: str = tenant, rounds: tuple[int, int | None] = rounds) -> Any:
                    page = reads.invoice_page(e, archive, owner, tenant, after, n, rounds)
                    out[f"period {tenant} {rounds}"] = (page.count, page.total)
                    return page.charges, page.next_after
                out[f"charges {tenant} {rounds}"] = all_pages(charges, size)
        events, seq = [], start
        while seq < e.history_marks().events:
            batch, seq = reads.event_batch(e, archive, owner, seq, size, tenant)
            events += [(ev.to_dict(), reads.start_payloads(e, batch).get(ev.seq)) for ev in batch]
        out[f"events {tenant}"] = events
    return out


def pages(items: list[Any], size: int, token: Any) -> tuple[list[Any], list[Any]]:
    """`items` as `all_pages` reads them in pages of `size`: the items and the tokens (`token` of each page's last item
    while more follow, None on the last page; one empty page for no items)."""
    chunks = [items[i:i + size] for i in range(0, len(items), size)] or [[]]
    return items, [token(chunk[-1]) for chunk in chunks[:-1]] + [None]


def brute_force(sched: DurableScheduler, size: int, start: int) -> dict[str, Any]:
    """What `served` must give for a scheduler that keeps its whole history: each read as a plain filter of it."""
    e, owner = sched.engine, namespace.tenant_of
    assert e.forgotten == HistoryMarks(0, 0, 0)
    out: dict[str, Any] = {}
    for tenant in TENANTS:
        for states in (frozenset(), frozenset({"COMPLETED"}), frozenset({"SUBMITTED", "RUNNING", "WAITING"}),
                       frozenset({"EXPIRED", "RUNNING"})):
            jobs = [(e.view_of(j), owner(j.id)) for j in sorted(e.jobs.values(), key=lambda j: j.seq)
                    if (tenant is None or owner(j.id) == tenant) and (not states or j.state.value in states)]
            out[f"jobs {tenant} {sorted(states)}"] = pages(jobs, size, lambda pair: pair[0].seq)
        if tenant is not None:
            for rounds in ((0, None), (2, 5), (start, start + 3)):
                billed = [(i, c) for i, c in enumerate(e.ledger.charges) if owner(c.job) == tenant
                          and rounds[0] <= c.round and (rounds[1] is None or c.round < rounds[1])]
                out[f"charges {tenant} {rounds}"] = pages(billed, size, lambda pair: pair[0])
                out[f"period {tenant} {rounds}"] = (len(billed), math.fsum(c.amount for _, c in billed))
        out[f"events {tenant}"] = [(ev.to_dict(), start_payload(e.jobs[ev.job]) if ev.type == "start" else None)
                                   for ev in e.events[start:] if tenant is None or owner(ev.job) == tenant]
    return out


def start_payload(job: Job) -> Payload:
    """A started job's payload as the start event carries it: the longest declared duration of its arrived group,
    from its SoW while it holds it (the keeping scheduler releases the SoWs of ended jobs too)."""
    longest = job.max_duration if job.held_sow is not None else job.longest
    assert longest is not None
    return Payload(job.command, job.concurrency, longest, dict(job.env))


def lifecycle_commands(seed: int, n: int, engine: Engine) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """Commands that follow the jobs' lives (arrivals on declared groups, completions of running jobs), so that
    jobs complete and are billed; `engine` is read before each command is made."""
    rng = np.random.default_rng(seed)
    for i in range(n):
        held = list(engine.jobs_after(-1, active_only=True))
        pick = rng.random()
        if pick < 0.3 or not held:
            tenant = str(rng.choice(["acme", "globex"]))
            sow = random_sow(rng, PLATFORM, max_outcomes=3, signal_mode="duration")
            yield tenant, "submit", {"job_id": f"l{i}", "tenant": tenant, "sow": sow.model_dump(mode="json")}
        elif pick < 0.75:
            job = held[int(rng.integers(0, len(held)))]
            groups = [g for g in job.sow.table.groups if g[0] == engine.now - job.birth]
            if job.state is JobState.SUBMITTED and groups:
                yield "operator", "arrive", {**named(job.id), "signal": groups[0][1]}
            else:
                yield "operator", "complete", named(job.id)
        else:
            yield "operator", "advance", {}


def assert_same_answers(root: Path, seed: int, n: int, every: int, size: int, start: int) -> HistoryMarks:
    """Run the same commands on an archiving and a keeping scheduler, compare every answer and read; the marks of
    the history the archiving one forgot."""
    archiving, keeping = open_with(root / "a.db", every), open_with(root / "k.db", 0)
    commands = itertools.chain(random_commands(seed, n),  # reports on ended jobs, reused ids, other tenants ...
                               lifecycle_commands(seed, 2 * n, keeping.engine))  # ... and jobs that complete
    for i, command in enumerate(commands):
        assert outcome(archiving, i, *command) == outcome(keeping, i, *command)
    assert archiving.engine.digest() == keeping.engine.digest()
    assert served(archiving, size, start) == served(keeping, size, start) == brute_force(keeping, size, start)
    for job_id in keeping.engine.jobs:  # any job's view, owner and quote (completed ones), archived or not
        assert archiving.engine.view(job_id) == keeping.engine.view(job_id)
        assert archiving.owner(job_id) == keeping.owner(job_id)
        if keeping.engine.jobs[job_id].state is JobState.COMPLETED:
            assert archiving.engine.quote(job_id) == keeping.engine.quote(job_id)
    forgotten = archiving.engine.forgotten
    archiving.close()
    keeping.close()
    return forgotten


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(20, 90), every=st.integers(1, 9), size=st.integers(1, 7),
       start=st.integers(0, 30))
def test_an_archiving_scheduler_answers_every_command_and_read_like_one_that_keeps_its_history(
        tmp_path_factory: pytest.TempPathFactory, seed: int, n: int, every: int, size: int, start: int) -> None:
    assert assert_same_answers(tmp_path_factory.mktemp("reads"), seed, n, every, size, start).retired > 0


def test_archived_charges_are_invoiced_like_held_ones(tmp_path: Path) -> None:
    forgotten = assert_same_answers(tmp_path, seed=3, n=60, every=4, size=3, start=5)
    assert forgotten.charges > 5 and forgotten.events > 100  # this run bills jobs and archives their charges


def test_the_engine_holds_only_the_history_since_the_last_snapshot(tmp_path: Path) -> None:
    sched = open_with(tmp_path / "s.db", 5)
    most_events = most_ended = 0
    for i, command in enumerate(random_commands(3, 500)):
        with contextlib.suppress(Exception):
            sched.execute(command[0], f"r{i}", command[1], command[2])
        e = sched.engine
        assert sched.log_seq - sched.snapshot_seq < 5 and e.forgotten == sched.store.archive.marks()
        assert len(e.jobs) == e.active_jobs + len(e.retired)
        most_events, most_ended = max(most_events, len(e.events)), max(most_ended, len(e.retired))
    marks = e.history_marks()
    assert marks.retired > 40 and marks.events > 150
    assert most_ended < marks.retired / 4 and most_events < marks.events / 4  # the rest is in the archive only
    sched.close()


def played(path: Path, every: int, seed: int, n: int) -> DurableScheduler:
    """A scheduler that has run `n` random commands (refusals ignored)."""
    sched = open_with(path, every)
    for i, command in enumerate(random_commands(seed, n)):
        with contextlib.suppress(Exception):
            sched.execute(command[0], f"r{i}", command[1], command[2])
    return sched


def test_a_job_archived_as_something_else_is_refused(tmp_path: Path) -> None:
    sched = played(tmp_path / "s.db", 3, 4, 120)
    archive = sched.store.archive
    (job_id,), = sched.store._db.execute("SELECT id FROM archived_jobs LIMIT 1").fetchall()
    sched.store._db.execute("UPDATE archived_jobs SET record = ? WHERE id = ?", (pickle.dumps([1]), job_id))
    with pytest.raises(ArchiveError, match="an archived job record holds a list"):
        archive.job(job_id)
    sched.close()


def test_a_history_part_must_start_where_the_archive_ends(tmp_path: Path) -> None:
    sched = played(tmp_path / "s.db", 0, 5, 60)
    part = sched.engine.history_since(HistoryMarks(1, 0, 0))
    with pytest.raises(ArchiveError, match=r"history part starts at HistoryMarks\(retired=1.*archive ends at"):
        sched.store.archive.add(part, {})
    sched.close()


def test_an_invoice_over_all_history_streams_the_archived_amounts_instead_of_listing_them() -> None:
    n = 40_000
    charges = [Charge(f"x{i}", i // 100, i // 100, 1, 1, 0.1 * (i % 7) + i * 1e-9) for i in range(n)]
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.executescript(ARCHIVE_SCHEMA)
    archive = Archive(db, Path("memory.db"))
    archive.add(History(HistoryMarks(0, 0, 0), [], [], charges), {c.job: "acme" for c in charges})
    engine = Engine(PLATFORM)
    engine.forgotten = HistoryMarks(0, 0, n)  # as if it had billed these and forgotten them at a snapshot
    archive.show(engine.forgotten)
    held_owners: dict[str, str] = {}  # the engine holds no job
    tracemalloc.start()
    page = reads.invoice_page(engine, archive, held_owners.__getitem__, "acme", -1, 10, (0, None))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert page.count == n and page.total == math.fsum(c.amount for c in charges) and len(page.charges) == 10
    assert peak < 200_000  # the page, not the 40,000 amounts (a list of them takes over 1 MB)


def test_a_page_token_beyond_every_seq_gives_the_empty_page_with_or_without_the_archive(tmp_path: Path) -> None:
    archiving, keeping = played(tmp_path / "a.db", 3, 4, 120), played(tmp_path / "k.db", 0, 4, 120)
    assert archiving.engine.forgotten.retired > 0
    for after in (archiving.engine.submitted, 2**63 - 1, 2**63, 10**19 - 1):  # the service takes 19 digits
        for sched in (archiving, keeping):
            page = reads.job_page(sched.engine, sched.store.archive, namespace.tenant_of, None, after, 5,
                                  frozenset({"COMPLETED", "EXPIRED"}))
            assert page.jobs == [] and page.next_after is None
    archiving.close()
    keeping.close()


@pytest.mark.parametrize(("column", "damaged"), [("amount", "amount + 1"), ("start", "start + 1"),
                                                 ("round", "round + 1"), ("duration", "duration + 1"),
                                                 ("job", "job || 'x'")])
def test_a_damaged_archived_charge_is_noticed_on_restart_and_the_log_restores_the_invoices(tmp_path: Path,
                                                                                         column: str,
                                                                                         damaged: str) -> None:
    sched = open_with(tmp_path / "s.db", 4)
    for i, command in enumerate(lifecycle_commands(3, 200, sched.engine)):
        with contextlib.suppress(Exception):
            sched.execute(command[0], f"r{i}", command[1], command[2])
    invoices = served(sched, 1000, 0)
    assert sched.engine.forgotten.charges > 3
    sched.store._db.execute(f"UPDATE archived_charges SET {column} = {damaged} WHERE idx = 1")
    sched.close()
    again = open_with(tmp_path / "s.db", 4)  # the charge is in no hash chain: the completion events catch it
    assert again.restored_from < sched.snapshot_seq and served(again, 1000, 0) == invoices
    again.close()


def test_an_event_batch_that_reaches_the_end_resumes_where_the_next_event_will_be(tmp_path: Path) -> None:
    # a follower (WatchEvents) that read everything waits at this seq: one beyond it would skip the events to come
    sched = played(tmp_path / "s.db", 3, 4, 120)
    e, archive, owner = sched.engine, sched.store.archive, namespace.tenant_of
    assert e.forgotten.events > 0
    for tenant in (None, "acme", "nobody"):
        assert reads.event_batch(e, archive, owner, e.forgotten.events, 1000, tenant)[1] == e.history_marks().events
        assert reads.event_batch(e, archive, owner, 0, 10**6, tenant)[1] == e.forgotten.events
    sched.close()
