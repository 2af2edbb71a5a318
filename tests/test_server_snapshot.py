"""Snapshots: a restart from the newest trusted snapshot reaches the state of a full replay, and anything doubtful is ignored."""

from __future__ import annotations

import pickle
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server import snapshot
from server.scheduler import DurableScheduler, Refused, Unavailable
from server.service import encode_reply
from server.store import CommandStore, Snapshot
from tests.test_server_scheduler import CONFIG, random_commands


def open_with(path: Path, every: int, read_only: bool = False) -> DurableScheduler:
    return DurableScheduler(CONFIG, CommandStore(path, CONFIG.identity(), read_only=read_only), encode_reply,
                            snapshot_every=every)


def run(sched: DurableScheduler, seed: int, n: int) -> None:
    for i, (caller, kind, body) in enumerate(random_commands(seed, n)):
        try:
            sched.execute(caller, f"r{i}", kind, body)
        except (Refused, ValueError):
            pass
        except Exception as exc:  # engine refusals carry a status code; anything else is a bug
            assert hasattr(exc, "code"), exc


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(10, 50), every=st.integers(1, 7))
def test_restart_from_a_snapshot_equals_a_full_replay(tmp_path_factory: pytest.TempPathFactory, seed: int, n: int,
                                                       every: int) -> None:
    path = tmp_path_factory.mktemp("snap") / "s.db"
    live = open_with(path, every)
    run(live, seed, n)
    digest, logged = live.engine.digest(), live.store.count()
    invoices = {t: live.invoices.page(t, -1, 10**6).charges for t in ("acme", "globex", "operator")}
    live.close()
    fast, full = open_with(path, every), open_with(path, 0, read_only=True)
    assert fast.engine.digest() == full.engine.digest() == digest
    for restarted in (fast, full):  # the invoice index is rebuilt from the restored ledger
        assert {t: restarted.invoices.page(t, -1, 10**6).charges for t in invoices} == invoices
    assert full.restored_from == 0 and full.replayed == logged
    if logged >= every:
        assert fast.restored_from > 0 and fast.replayed == logged - fast.restored_from
    assert fast.owners == full.owners
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
    assert again.restored_from == 0 and again.engine.digest() == digest


@pytest.mark.parametrize("damage", ["bytes", "digest"])
def test_a_damaged_snapshot_falls_back_to_the_older_one_or_the_log(tmp_path: Path, damage: str) -> None:
    sched = open_with(tmp_path / "s.db", 2)
    run(sched, 6, 30)
    digest = sched.engine.digest()
    newest, older = sched.store.snapshots()
    bad = Snapshot(newest.seq, newest.code, newest.digest, b"not a pickle") if damage == "bytes" else \
        Snapshot(newest.seq, newest.code, "0" * 64, newest.state)
    sched.store.save_snapshot(bad)
    sched.close()
    again = open_with(tmp_path / "s.db", 2)
    assert again.restored_from == older.seq and again.engine.digest() == digest


def test_a_snapshot_holds_the_active_jobs_and_only_the_history_added_since_the_one_before(tmp_path: Path) -> None:
    sched = open_with(tmp_path / "s.db", 10)
    run(sched, 8, 120)
    code = snapshot.code_identity()
    newest = sched.store.snapshots()[0]
    state = snapshot.load(newest.state)
    parts = [snapshot.load_part(b).history for b in sched.store.history(code, newest.seq)]
    assert set(snapshot.load(newest.state).owners) == set(state.engine.jobs)  # owners of the active jobs only
    assert len(parts) >= 3 and len(state.engine.jobs) == state.engine.active_jobs  # no ended job in the state
    assert not state.engine.events and not state.engine.ledger.charges
    retired = [j.id for part in parts for j in part.jobs]
    assert len(retired) == len(set(retired)) == state.marks.retired > 0  # each ended job in exactly one part
    assert sum(len(part.events) for part in parts) == state.marks.events


def test_a_damaged_history_part_falls_back_and_later_snapshots_carry_on(tmp_path: Path) -> None:
    sched = open_with(tmp_path / "s.db", 10)
    run(sched, 9, 80)
    digest = sched.engine.digest()
    newest, older = sched.store.snapshots()
    sched.store._db.execute("UPDATE history SET part = ? WHERE seq = ?", (b"damaged", newest.seq))
    sched.close()
    again = open_with(tmp_path / "s.db", 10)
    assert again.restored_from == older.seq and again.engine.digest() == digest
    assert [s.seq for s in again.store.snapshots()] == [older.seq]  # the unusable newer one is dropped
    run(again, 10, 60)  # new snapshots continue the history from the older one
    digest = again.engine.digest()
    again.close()
    fast, full = open_with(tmp_path / "s.db", 10), open_with(tmp_path / "s.db", 0, read_only=True)
    assert fast.restored_from > older.seq and fast.engine.digest() == full.engine.digest() == digest
    fast.close()
    full.close()


def test_a_history_part_that_is_not_history_is_refused() -> None:
    with pytest.raises(TypeError, match="not a HistoryPart"):
        snapshot.load_part(zlib.compress(pickle.dumps([1, 2])))


def test_snapshot_every_below_zero_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="snapshot_every=-1 is below the bound 0"):
        open_with(tmp_path / "s.db", -1)


def test_a_snapshot_that_is_not_scheduler_state_is_refused() -> None:
    with pytest.raises(TypeError, match="not a SchedulerState"):
        snapshot.load(zlib.compress(pickle.dumps({"engine": None})))


def test_the_code_identity_is_stable_and_covers_the_sources() -> None:
    assert snapshot.code_identity() == snapshot.code_identity()
    assert len(snapshot.code_identity()) == 64


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
