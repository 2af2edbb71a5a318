"""Snapshots: a restart from the newest trusted snapshot reaches a full replay's state; anything doubtful is ignored."""

from __future__ import annotations

import hashlib
import itertools
import json
import pickle
import sqlite3
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism.engine import CHAIN_BYTES, Engine
from server import namespace, reads, snapshot
from server import store as store_module
from server.archive import ArchiveError
from server.backup import backup_store
from server.errors import Refused, Unavailable
from server.scheduler import DurableScheduler
from server.service import encode_reply
from server.store import CommandStore, Snapshot
from tests.server.test_reads import lifecycle_commands, outcome, served
from tests.server.test_scheduler import CONFIG, random_commands


def open_with(path: Path, every: int, read_only: bool = False) -> DurableScheduler:
    return DurableScheduler(CONFIG, CommandStore(path, CONFIG.identity(), read_only=read_only), encode_reply,
                            snapshot_every=every)


def everything(sched: DurableScheduler) -> dict[str, object]:
    """Every job, event and charge as the reads serve them (held and archived), and each job's owner."""
    e, archive, owner = sched.engine, sched.store.archive, namespace.tenant_of
    jobs = reads.job_page(e, archive, owner, None, -1, 10**6, frozenset()).jobs
    events = reads.event_batch(e, archive, owner, 0, 10**6, None)[0]
    if e.forgotten.events:  # the archived part came first: the held part follows
        events += reads.event_batch(e, archive, owner, e.forgotten.events, 10**6, None)[0]
    invoices = {t: reads.invoice_page(e, archive, owner, t, -1, 10**6, (0, None))
                for t in ("acme", "globex", "operator")}
    return {"jobs": jobs, "events": [ev.to_dict() for ev in events], "invoices": invoices,
            "owners": {view.id: sched.owner(view.id) for view, _ in jobs}}


def attempt(sched: DurableScheduler, request_id: str, caller: str, kind: str, body: dict) -> None:
    """One command, refusals included."""
    try:
        sched.execute(caller, request_id, kind, body)
    except (Refused, ValueError):
        pass
    except Exception as exc:  # engine refusals carry a status code; anything else is a bug
        assert hasattr(exc, "code"), exc


def run(sched: DurableScheduler, seed: int, n: int) -> None:
    for i, (caller, kind, body) in enumerate(random_commands(seed, n)):
        attempt(sched, f"r{i}", caller, kind, body)


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(10, 50), every=st.integers(1, 7))
def test_restart_from_a_snapshot_equals_a_full_replay(tmp_path_factory: pytest.TempPathFactory, seed: int, n: int,
                                                       every: int) -> None:
    path = tmp_path_factory.mktemp("snap") / "s.db"
    live = open_with(path, every)
    run(live, seed, n)
    digest, logged, served = live.engine.digest(), live.store.count(), everything(live)
    live.close()
    fast, full = open_with(path, every), open_with(path, 0, read_only=True)
    assert fast.engine.digest() == full.engine.digest() == digest
    assert everything(fast) == everything(full) == served  # whether from the archive or from memory
    assert full.restored_from == 0 and full.replayed == logged
    if logged >= every:
        assert fast.restored_from > 0 and fast.replayed == logged - fast.restored_from
    fast.close()
    full.close()


def test_only_the_newest_two_snapshots_are_kept(tmp_path: Path) -> None:
    sched = open_with(tmp_path / "s.db", 3)
    run(sched, 4, 40)
    kept = [s.seq for s in sched.store.snapshots()]
    assert len(kept) == 2 and kept[0] > kept[1] and kept[0] >= sched.store.count() - 3


def test_a_snapshot_from_other_code_is_ignored(tmp_path: Path) -> None:
    sched = open_with(tmp_path / "s.db", 2)
    run(sched, 5, 30)
    digest = sched.engine.digest()
    for snap in sched.store.snapshots():
        sched.store.save_snapshot(Snapshot(snap.seq, "another build", snap.digest, snap.state))
    sched.close()
    again = open_with(tmp_path / "s.db", 2)
    assert again.restored_from == 0 and again.engine.digest() == digest and again.replayed == again.log_seq
    # the whole log was replayed, archiving every 2 commands as it went: the engine holds only the last ones
    assert again.engine.forgotten == again.store.archive.marks() and again.engine.forgotten.events > 0
    assert again.snapshot_seq >= again.log_seq - 1


@pytest.mark.parametrize("damage", ["bytes", "digest", "seq", "marks"])
def test_a_damaged_snapshot_falls_back_to_the_older_one_or_the_log(tmp_path: Path, damage: str) -> None:
    sched = open_with(tmp_path / "s.db", 2)
    run(sched, 6, 30)
    digest = sched.engine.digest()
    newest, older = sched.store.snapshots()
    bad = Snapshot(newest.seq, newest.code, newest.digest, b"not a pickle") if damage == "bytes" else \
        Snapshot(newest.seq, newest.code, "0" * 64, newest.state)
    if damage == "seq":  # the older state under the newest seq: its own digest, but not the state after that seq
        bad = Snapshot(newest.seq, newest.code, older.digest, older.state)
    if damage == "marks":  # the newest state claiming the older one's history marks
        state, older_marks = snapshot.load(newest.state), snapshot.load(older.state).marks
        assert state.marks != older_marks
        state.marks = older_marks
        bad = Snapshot(newest.seq, newest.code, newest.digest, snapshot.dump(state))
    sched.store.save_snapshot(bad)
    sched.close()
    again = open_with(tmp_path / "s.db", 2)
    assert again.restored_from == older.seq and again.engine.digest() == digest
    again.close()  # it dropped the unusable snapshot and what it archived, and snapshotted anew while replaying:
    third = open_with(tmp_path / "s.db", 2)
    assert third.restored_from >= newest.seq and third.engine.digest() == digest  # ... so the next restart uses that
    third.close()


def test_a_snapshot_holds_the_active_jobs_and_its_history_goes_to_the_archive_and_out_of_memory(tmp_path: Path) -> None:
    sched = open_with(tmp_path / "s.db", 10)
    run(sched, 8, 120)
    newest = sched.store.snapshots()[0]
    state = snapshot.load(newest.state)
    assert len(state.engine.jobs) == state.engine.active_jobs  # no ended job in the state ...
    assert not state.engine.events and not state.engine.ledger.charges  # ... and no event or charge
    archive = sched.store.archive
    assert archive.marks() == state.marks == sched.engine.forgotten and state.marks.retired > 0
    retired = [j.id for j in archive.all_jobs()]
    assert len(retired) == len(set(retired)) == state.marks.retired  # each ended job archived once
    assert [ev.seq for ev in archive.all_events()] == list(range(state.marks.events))
    # the engine holds only what came after the newest snapshot
    assert len(sched.engine.events) == sched.engine.history_marks().events - state.marks.events
    assert not set(retired) & set(sched.engine.jobs)
    sched.close()


def test_a_damaged_archive_falls_back_and_later_snapshots_carry_on(tmp_path: Path) -> None:
    sched = open_with(tmp_path / "s.db", 10)
    run(sched, 9, 80)
    digest = sched.engine.digest()
    newest, older = sched.store.snapshots()
    marks = snapshot.load(older.state).marks
    assert marks.events < snapshot.load(newest.state).marks.events
    sched.store._db.execute("UPDATE archived_events SET record = replace(record, '\"round\": ', '\"round\": 1') "
                            "WHERE seq = ?", (marks.events,))  # archived with the newest snapshot
    sched.close()
    again = open_with(tmp_path / "s.db", 10)
    assert again.restored_from == older.seq and again.engine.digest() == digest
    # the unusable newer snapshot was dropped with what it archived, and the replay after the older one archived
    # that history again (a snapshot every 10 commands as it went)
    assert again.store.snapshots()[-1].seq == older.seq and again.snapshot_seq > older.seq
    assert again.store.archive.marks() == again.engine.forgotten != marks and again.engine.forgotten.covers(marks)
    run(again, 10, 60)  # new snapshots continue the history from the older one
    digest, served = again.engine.digest(), everything(again)
    again.close()
    fast, full = open_with(tmp_path / "s.db", 10), open_with(tmp_path / "s.db", 0, read_only=True)
    assert fast.restored_from > older.seq and fast.engine.digest() == full.engine.digest() == digest
    assert everything(fast) == everything(full) == served
    fast.close()
    full.close()


def test_snapshot_every_below_zero_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="snapshot_every=-1 is below the bound 0"):
        open_with(tmp_path / "s.db", -1)


def test_a_snapshot_that_is_not_scheduler_state_is_refused() -> None:
    with pytest.raises(TypeError, match="not a SchedulerState"):
        snapshot.load(zlib.compress(pickle.dumps({"engine": None})))


def test_the_code_identity_is_stable_and_covers_the_sources() -> None:
    assert snapshot.code_identity() == snapshot.code_identity()
    assert len(snapshot.code_identity()) == 64


REPLAYED = ("mechanism/engine.py", "mechanism/pricing.py", "mechanism/failure.py", "mechanism/rng.py",
            "server/replay.py", "server/store.py", "server/snapshot.py", "server/namespace.py")
NOT_REPLAYED = ("benchmarks/core.py", "models/hpc/study.py", "models/offline/cpsat.py", "models/simulation.py",
                "cli/main.py", "cli/commands/simulate.py", "clients/client.py", "server/app.py",
                "server/service.py", "server/scheduler.py", "server/writer.py", "server/recovery.py",
                "server/snapshots.py", "server/tenancy.py", "server/errors.py", "server/limits.py",
                "mechanism/failure_literal.py",
                "server/gen/sowsched/v1/scheduler_pb2.py", "docs/x.py")


def _copy_tree(tmp_path: Path) -> None:
    root = snapshot.ROOT
    for rel in (*REPLAYED, *NOT_REPLAYED):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
    for package in snapshot.PROJECT_PACKAGES:
        for path in (root / package).rglob("*.py"):
            target = tmp_path / path.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    for rel in NOT_REPLAYED:
        if not (tmp_path / rel).exists():
            (tmp_path / rel).write_text("x = 1\n")


def test_the_replayed_modules_are_the_engine_the_log_codecs_and_what_they_import() -> None:
    names = {str(p.relative_to(snapshot.ROOT)) for p in snapshot.replay_modules()}
    assert set(REPLAYED) <= names
    assert not names & set(NOT_REPLAYED)
    assert all(n.split("/")[0] in ("mechanism", "server") for n in names)


def test_the_code_identity_changes_with_replayed_code_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _copy_tree(tmp_path)
    monkeypatch.setattr(snapshot, "ROOT", tmp_path)
    identity = snapshot.code_identity.__wrapped__  # uncached: the tree changes below
    first = identity()
    for rel in NOT_REPLAYED:  # benchmarks, studies, offline solvers, the CLI, the gRPC shell, stubs, docs
        with (tmp_path / rel).open("a") as f:
            f.write("\n# edited\n")
        assert identity() == first, rel
    seen = {first}
    for rel in REPLAYED:
        with (tmp_path / rel).open("a") as f:
            f.write("\n# edited\n")
        assert identity() not in seen, rel
        seen.add(identity())


def test_a_module_imported_by_the_engine_joins_the_identity_when_the_import_is_added(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _copy_tree(tmp_path)
    monkeypatch.setattr(snapshot, "ROOT", tmp_path)
    (tmp_path / "mechanism" / "newpart.py").write_text("X = 1\n")
    before = {p.name for p in snapshot.replay_modules()}
    assert "newpart.py" not in before
    with (tmp_path / "mechanism" / "engine.py").open("a") as f:
        f.write("\nfrom . import newpart  # noqa\n")
    assert "newpart.py" in {p.name for p in snapshot.replay_modules()}


def test_a_read_only_scheduler_takes_no_commands_and_leaves_the_writers_snapshots_alone(tmp_path: Path) -> None:
    sched = open_with(tmp_path / "s.db", 2)
    run(sched, 6, 30)
    newest, older = sched.store.snapshots()
    sched.store.save_snapshot(Snapshot(newest.seq, newest.code, "0" * 64, newest.state))  # unusable now
    reader = open_with(tmp_path / "s.db", 2, read_only=True)  # beside the live writer
    assert reader.restored_from == older.seq and reader.engine.digest() == sched.engine.digest()
    assert [s.seq for s in sched.store.snapshots()] == [newest.seq, older.seq]  # nothing dropped
    with pytest.raises(Unavailable, match="is open read-only: it takes no commands"):
        reader.execute("operator", None, "advance", {})
    reader.close()
    sched.close()


@pytest.mark.parametrize("error", [MemoryError("no memory for the history part"),  # not an SQLite error
                                   ArchiveError("cannot archive history: disk I/O error"),
                                   sqlite3.OperationalError("database or disk is full")])
def test_a_snapshot_that_fails_with_any_error_rolls_back_and_the_next_commands_are_served(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    sched = open_with(tmp_path / "s.db", 3)
    run(sched, 11, 20)
    before = sched.engine.forgotten

    def fail(*args: object) -> None:
        raise error
    monkeypatch.setattr(sched.store.archive, "add", fail)  # inside the snapshot's transaction
    for i in range(3):  # a snapshot is due among these, and fails: nothing is forgotten
        sched.execute("operator", f"failing-{i}", "advance", {})
    assert sched.engine.forgotten == before
    monkeypatch.undo()
    seq = sched.log_seq
    sched.execute("operator", "after-failure", "advance", {})  # the failed transaction did not stay open
    assert sched.log_seq == seq + 1
    for i in range(3):  # a later snapshot archives what the failed one did not
        sched.execute("operator", f"later-{i}", "advance", {})
    digest, served = sched.engine.digest(), everything(sched)
    assert sched.store.snapshots()[0].seq > seq and sched.engine.forgotten == sched.store.archive.marks()
    sched.close()
    again = open_with(tmp_path / "s.db", 3)
    assert again.engine.digest() == digest and everything(again) == served
    again.close()


def test_after_an_upgrade_the_snapshots_of_the_replay_are_kept_though_the_old_codes_are_newer(tmp_path: Path) -> None:
    old = open_with(tmp_path / "s.db", 1)
    for i in range(16):
        old.execute("operator", f"round-{i}", "advance", {})
    for snap in old.store.snapshots():  # the newest two, after commands 16 and 15, now of another build
        old.store.save_snapshot(Snapshot(snap.seq, "another build", snap.digest, snap.state))
    digest = old.engine.digest()
    old.close()
    upgraded = open_with(tmp_path / "s.db", 7)  # replays the whole log, snapshotting after commands 7 and 14
    assert upgraded.restored_from == 0 and upgraded.snapshot_seq == 14
    upgraded.close()
    again = open_with(tmp_path / "s.db", 7)
    assert again.restored_from == 14 and again.replayed == 2 and again.engine.digest() == digest
    again.close()


def test_a_replay_that_snapshots_as_it_goes_lets_sqlite_checkpoint_after_each_snapshot(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No statement of the replay stays open across its snapshots: one that did kept SQLite from checkpointing the WAL
    until the replay ended, so the whole archive piled up in the WAL (15 MB for a 6,755-command log, the database file
    unchanged)."""
    sched = open_with(tmp_path / "s.db", 0)
    run(sched, 14, 60)
    digest = sched.engine.digest()
    sched.close()
    monkeypatch.setattr(store_module, "COMMANDS_READ", 4)  # read in several statements
    save, checkpoints = CommandStore.save_snapshot, []

    def save_and_checkpoint(store: CommandStore, *args: Any) -> None:
        save(store, *args)
        try:
            checkpoints.append(store._db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[0])  # 0: done
        except sqlite3.OperationalError as exc:
            checkpoints.append(str(exc))
    monkeypatch.setattr(CommandStore, "save_snapshot", save_and_checkpoint)
    again = open_with(tmp_path / "s.db", 3)  # replays the whole log (snapshots were off), snapshotting every 3
    assert again.replayed > 6 and len(checkpoints) >= 2 and set(checkpoints) == {0}
    assert again.replayed == again.log_seq and again.engine.digest() == digest
    again.close()


@settings(max_examples=4, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(15, 45),
    restarts=st.lists(st.tuples(st.integers(0, 44), st.sampled_from([0, 1, 3, 7])), min_size=1, max_size=4),
)
def test_restarts_between_any_commands_and_with_any_interval_answer_like_a_server_that_never_stopped(
        tmp_path_factory: pytest.TempPathFactory, seed: int, n: int, restarts: list[tuple[int, int]]) -> None:
    root = tmp_path_factory.mktemp("restarts")
    restarted, kept = open_with(root / "r.db", 2), open_with(root / "k.db", 0)
    at = dict(restarts)  # command index -> the snapshot interval of the restarted server (0: snapshots off)
    commands = itertools.chain(random_commands(seed, n), lifecycle_commands(seed, 2 * n, kept.engine))
    for i, command in enumerate(commands):
        if i in at:
            restarted.close()
            restarted = open_with(root / "r.db", at[i])
        assert outcome(restarted, i, *command) == outcome(kept, i, *command)
    assert restarted.engine.digest() == kept.engine.digest()
    assert served(restarted, 3, 5) == served(kept, 3, 5)
    for job_id in kept.engine.jobs:
        assert restarted.engine.view(job_id) == kept.engine.view(job_id) and restarted.owner(job_id) == kept.owner(
            job_id
        )
    restarted.close()
    kept.close()


def run_to_the_next_snapshot(sched: DurableScheduler, seed: int) -> None:
    """Random commands until the scheduler writes exactly one more snapshot."""
    start = sched.snapshot_seq
    for i, (caller, kind, body) in enumerate(random_commands(seed, 10_000)):
        if sched.snapshot_seq != start:
            return
        attempt(sched, f"r{i}", caller, kind, body)
    raise AssertionError("no snapshot written")


def restarted_once(path: Path) -> DurableScheduler:
    """A store that ran 120 random commands with a snapshot every 10, reopened once (that restart checked its
    archive and recorded the point it reached)."""
    sched = open_with(path, 10)
    run(sched, 8, 120)
    sched.close()
    return open_with(path, 10)


def test_a_restart_hashes_only_the_archive_after_the_point_the_last_restart_checked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.db"
    sched = open_with(path, 10)
    run(sched, 8, 120)
    sched.close()
    starts: list[int] = []
    real = store_module.Archive.all_events

    def spy(self: store_module.Archive, start: int = 0) -> Any:
        starts.append(start)
        return real(self, start)

    monkeypatch.setattr(store_module.Archive, "all_events", spy)
    first = open_with(path, 10)  # no point yet: the whole archive
    checked = first.store.verified_point()
    assert checked is not None and checked.marks == first.engine.forgotten and checked.marks.events > 0
    digest = first.engine.digest()
    run(first, 9, 60)  # more history, archived at later snapshots
    later = first.engine.digest()
    first.close()
    second = open_with(path, 10)
    assert starts == [0, checked.marks.events] and second.engine.digest() == later  # only the new part hashed
    assert second.store.verified_point().marks == second.engine.forgotten  # type: ignore[union-attr]
    second.close()
    assert digest != later


def test_a_restart_catches_a_damaged_row_after_the_checked_point_and_an_audit_one_before_it(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    first = restarted_once(path)
    checked, checked_seq = first.store.verified_point(), first.restored_from
    assert checked is not None
    run_to_the_next_snapshot(first, 9)  # the checked snapshot stays among the SNAPSHOTS_KEPT newest
    digest, newest = first.engine.digest(), first.snapshot_seq
    first.close()
    damage = "UPDATE archived_events SET record = replace(record, '\"round\": ', '\"round\": 1') WHERE seq = ?"
    with sqlite3.connect(path) as db:  # an event archived after the checked point
        db.execute(damage, (checked.marks.events,))
    again = open_with(path, 10)  # hashed at restart: the newest snapshot is refused, the one at the point is used
    assert (again.restored_from, again.engine.digest()) == (checked_seq, digest) and checked_seq < newest
    again.close()
    with sqlite3.connect(path) as db:  # an event before the checked point: a restart trusts it (it was checked)...
        db.execute(damage, (checked.marks.events - 1,))
    trusting = open_with(path, 10)  # (the replay above snapshotted again as it went)
    assert trusting.restored_from >= checked_seq > 0 and trusting.engine.digest() == digest
    trusting.close()
    reader = open_with(path, 10, read_only=True)  # ... an audit (state-digest --store) hashes every row: caught
    assert (reader.restored_from, reader.engine.digest()) == (0, digest)  # every snapshot refused, the log replayed
    reader.close()


def test_a_restart_whose_checked_point_cannot_be_recorded_still_starts_and_the_old_point_stays_valid(
        tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    first = restarted_once(path)
    checked = first.store.verified_point()
    run(first, 9, 60)
    digest, newest = first.engine.digest(), first.snapshot_seq
    first.close()
    with sqlite3.connect(path) as db:  # the point's row cannot be written (as on a full disk)
        db.execute("CREATE TRIGGER full BEFORE INSERT ON verified BEGIN SELECT RAISE(FAIL, 'disk is full'); END")
    again = open_with(path, 10)  # an optimisation that failed: only the next restart is slower
    assert (again.restored_from, again.engine.digest()) == (newest, digest)
    assert again.store.verified_point() == checked  # the earlier point, still true of the rows before it
    again.close()
    with sqlite3.connect(path) as db:
        db.execute("DROP TRIGGER full")
    later = open_with(path, 10)
    assert later.engine.digest() == digest and later.store.verified_point().marks == later.engine.forgotten  # type: ignore[union-attr]
    later.close()


def test_a_restart_from_the_very_point_the_last_one_checked_keeps_that_point_when_it_cannot_record_its_own(
        tmp_path: Path) -> None:
    # the restart drops the checked point only if it checked rows now dropped (beyond the marks it restores to): one
    # that sits exactly at those marks stays, also when recording the new point fails
    path = tmp_path / "s.db"
    first = restarted_once(path)
    checked = first.store.verified_point()
    assert checked is not None and checked.marks == first.engine.forgotten
    first.close()
    with sqlite3.connect(path) as db:
        db.execute("CREATE TRIGGER full BEFORE INSERT ON verified BEGIN SELECT RAISE(FAIL, 'disk is full'); END")
    again = open_with(path, 10)
    assert again.store.verified_point() == checked
    again.close()


def test_a_damaged_checked_point_costs_a_full_hash_of_the_archive_not_the_snapshots(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    first = restarted_once(path)
    checked = first.store.verified_point()
    assert checked is not None
    run(first, 9, 60)
    digest, newest, replayed = first.engine.digest(), first.snapshot_seq, first.log_seq - first.snapshot_seq
    first.close()
    with sqlite3.connect(path) as db:  # the recorded chain, not the archive, is wrong
        db.execute("UPDATE verified SET event_chain = ?", (bytes(len(checked.events)),))
    again = open_with(path, 10)  # the archive still reproduces the newest snapshot's chains from the beginning
    assert (again.restored_from, again.replayed, again.engine.digest()) == (newest, replayed, digest)
    assert again.store.verified_point().marks == again.engine.forgotten  # type: ignore[union-attr]
    again.close()


def chains_before(path: Path, events: int, retired: int) -> tuple[bytes, bytes]:
    """The engine's two hash chains recomputed from the archive rows before the marks, by reading the file."""
    def chain(previous: bytes, record: dict[str, Any]) -> bytes:  # one link: SHA-256(previous + canonical JSON)
        return hashlib.sha256(previous + json.dumps(record, sort_keys=True).encode()).digest()

    with sqlite3.connect(path) as db:
        event_chain = bytes(CHAIN_BYTES)
        for (record,) in db.execute("SELECT record FROM archived_events WHERE seq < ? ORDER BY seq", (events,)):
            event_chain = chain(event_chain, json.loads(record))
        retired_chain = bytes(CHAIN_BYTES)
        for (record,) in db.execute("SELECT record FROM archived_jobs WHERE retired < ? ORDER BY retired", (retired,)):
            job = pickle.loads(record)
            retired_chain = chain(retired_chain, {**Engine.view_of(job).to_dict(),
                                                  "pending_completion": job.pending_completion})
    return event_chain, retired_chain


def assert_point_true(path: Path) -> None:
    """The recorded point, if any, holds the chains the archive rows before its marks reproduce."""
    store = CommandStore(path, CONFIG.identity(), read_only=True)
    point = store.verified_point()
    store.close()
    if point is not None:
        assert (point.events, point.retired) == chains_before(path, point.marks.events, point.marks.retired)


STEPS = st.lists(st.one_of(st.tuples(st.just("run"), st.integers(1, 30)),
                           st.tuples(st.just("restart"), st.sampled_from([0, 2, 5])),
                           st.tuples(st.just("damage"), st.just(0)),  # the newest snapshot unreadable
                           st.tuples(st.just("fail"), st.just(0)),  # snapshots fail until the next step
                           st.tuples(st.just("backup"), st.just(0))),  # serve an online backup from now on
                 min_size=1, max_size=7)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), steps=STEPS)
def test_any_run_of_restarts_fallbacks_and_backups_keeps_the_checked_point_true_and_agrees_with_an_audit(
        tmp_path_factory: pytest.TempPathFactory, seed: int, steps: list[tuple[str, int]]) -> None:
    root = tmp_path_factory.mktemp("points")
    path, every = root / "s.db", 2
    sched = open_with(path, every)
    for i, (step, arg) in enumerate(steps):
        sched.store._db.execute("DROP TRIGGER IF EXISTS full")
        if step == "run":  # jobs that live, complete and are billed (charges in the archive)
            for j, (caller, kind, body) in enumerate(lifecycle_commands(seed + i, arg, sched.engine)):
                if kind == "submit":
                    body = {**body, "job_id": f"{i}-{body['job_id']}"}
                outcome(sched, 100 * i + j, caller, kind, body)
        elif step == "damage":
            sched.store._db.execute("UPDATE snapshots SET state = x'00' WHERE seq = (SELECT MAX(seq) FROM snapshots)")
        elif step == "fail":  # as on a full disk
            sched.store._db.execute(
                "CREATE TRIGGER full BEFORE INSERT ON snapshots BEGIN SELECT RAISE(FAIL, 'full'); END"
            )
        elif step == "backup":
            copy = root / f"backup{i}.db"
            backup_store(path, copy)
            sched.close()
            path = copy
            sched = open_with(path, every)
        else:  # a restart, after an audit of the store as it was left
            sched.close()
            every = arg
            audit, full = open_with(path, 2, read_only=True), open_with(path, 0, read_only=True)
            sched = open_with(path, every)
            assert sched.engine.digest() == full.engine.digest() == audit.engine.digest()
            if every:  # the same snapshot the audit's check of every row accepts
                assert sched.restored_from == audit.restored_from
            audit.close()
            full.close()
        assert_point_true(path)
    sched.close()


# ---- server_version: the version of the installation this code is, or "unknown" ----

def test_server_version_is_unknown_for_an_uninstalled_copy_of_the_tree_even_with_sowsched_installed(
        tmp_path: Path) -> None:
    import os
    import shutil
    import subprocess
    import sys
    from importlib import metadata
    for d in ("mechanism", "server"):
        shutil.copytree(snapshot.ROOT / d, tmp_path / d, ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [sys.executable, "-c", "from server import snapshot; print(snapshot.ROOT, snapshot.server_version())"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.split()
    assert metadata.version("sowsched") != "unknown"  # another sowsched is installed (this tree, editable)...
    assert out == [str(tmp_path.resolve()), "unknown"]  # ...whose version is not the copy's


class FakeDistribution:
    """An installed sowsched as importlib.metadata sees it: where its files are, and its direct_url.json."""

    def __init__(self, files_at: Path, direct_url: str | None = None) -> None:
        self.version = "9.9.9"
        self._files_at, self._direct_url = files_at, direct_url

    def locate_file(self, path: str) -> Path:
        return self._files_at / path

    def read_text(self, name: str) -> str | None:
        return self._direct_url if name == "direct_url.json" else None


@pytest.mark.parametrize(("dist", "version"), [
    (FakeDistribution(snapshot.ROOT), "9.9.9"),  # a wheel installed as this code's files (or this tree's egg-info)
    (FakeDistribution(Path("/nowhere"), json.dumps({"url": snapshot.ROOT.as_uri(), "dir_info": {"editable": True}})),
     "9.9.9"),  # this tree, installed editable
    (FakeDistribution(Path("/nowhere"), json.dumps({"url": "file:///elsewhere", "dir_info": {"editable": True}})),
     "unknown"),  # another tree, installed editable
    (FakeDistribution(Path("/nowhere"), json.dumps({"url": snapshot.ROOT.as_uri(), "dir_info": {}})),
     "unknown"),  # a wheel built from this tree but installed elsewhere: its files are not this code
    (FakeDistribution(Path("/nowhere"), "not json"), "unknown"),
    (FakeDistribution(Path("/nowhere")), "unknown"),
])
def test_server_version_names_an_installation_only_if_it_is_this_code(
        monkeypatch: pytest.MonkeyPatch, dist: FakeDistribution, version: str) -> None:
    from importlib import metadata
    monkeypatch.setattr(metadata, "distributions", lambda name: [dist] if name == "sowsched" else [])
    snapshot.server_version.cache_clear()
    try:
        assert snapshot.server_version() == version
    finally:
        snapshot.server_version.cache_clear()


def test_server_version_asks_every_installed_sowsched_not_only_the_first_found(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib import metadata
    other_tree = FakeDistribution(Path("/another/checkout"))  # its egg-info in the working directory, found first
    this_tree = FakeDistribution(
        Path("/nowhere"), json.dumps({"url": snapshot.ROOT.as_uri(), "dir_info": {"editable": True}})
    )
    this_tree.version = "1.2.3"
    monkeypatch.setattr(metadata, "distributions", lambda name: [other_tree, this_tree])
    snapshot.server_version.cache_clear()
    try:
        assert snapshot.server_version() == "1.2.3"
    finally:
        snapshot.server_version.cache_clear()


def test_with_snapshots_off_a_restart_replays_the_whole_log_and_leaves_the_stored_snapshots_alone(
    tmp_path: Path,
) -> None:
    sched = open_with(tmp_path / "s.db", 2)
    run(sched, 6, 30)
    digest, kept = sched.engine.digest(), [s.seq for s in sched.store.snapshots()]
    sched.close()
    again = open_with(tmp_path / "s.db", 0)
    assert (again.restored_from, again.replayed, again.engine.digest()) == (0, again.log_seq, digest)
    assert [s.seq for s in again.store.snapshots()] == kept
    again.close()


def test_a_restart_that_can_use_no_snapshot_drops_them_all_and_the_next_restart_uses_its_new_one(
    tmp_path: Path,
) -> None:
    sched = open_with(tmp_path / "s.db", 2)
    run(sched, 6, 30)
    digest = sched.engine.digest()
    for s in sched.store.snapshots():
        sched.store.save_snapshot(Snapshot(s.seq, s.code, "0" * 64, s.state))
    sched.close()
    again = open_with(tmp_path / "s.db", 2)
    assert again.restored_from == 0 and again.engine.digest() == digest
    again.close()
    third = open_with(tmp_path / "s.db", 2)
    assert third.restored_from > 0 and third.engine.digest() == digest
    third.close()
