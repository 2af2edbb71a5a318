"""Online backup: a copy taken while the server writes holds a consistent prefix of its log, and serves."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

import server.backup
from cli.main import main
from server.backup import backup_store
from server.scheduler import DurableScheduler
from server.service import encode_reply
from server.store import CommandStore, StoreError
from tests.grpc_support import ACME, client, config, running, sow


def replay(path: Path) -> DurableScheduler:
    cfg = config()
    return DurableScheduler(cfg, CommandStore(path, cfg.identity(), read_only=True), encode_reply)


def test_a_backup_of_a_running_server_replays_to_its_state(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with running(tmp_path / "s.db", snapshot_every=3) as srv:
        acme = client(srv, ACME)
        for i in range(7):
            acme.submit(f"j{i}", sow())
        assert main(["backup", "--store", f"sqlite:///{tmp_path / 's.db'}", "--out", str(tmp_path / "b.db"),
                     "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        digest = srv.scheduler.engine.digest()
    assert (out["last_seq"], out["snapshots"]) == (7, 2) and out["out"] == str(tmp_path / "b.db")
    copy = replay(tmp_path / "b.db")
    assert (copy.restored_from, copy.engine.digest()) == (6, digest)  # from its newest snapshot, then the log
    copy.close()
    with running(tmp_path / "b.db") as restored:  # restore: serve the copy
        assert [j.view.id for j in client(restored, ACME).list_jobs()] == [f"j{i}" for i in range(7)]


def test_backups_taken_during_submissions_hold_a_consistent_prefix_of_the_log(tmp_path: Path) -> None:
    with running(tmp_path / "s.db", snapshot_every=4) as srv:
        acme = client(srv, ACME)
        writer = threading.Thread(target=lambda: [acme.submit(f"j{i}", sow()) for i in range(40)])
        writer.start()
        copies: list[Any] = []
        while writer.is_alive() or not copies:
            copies.append(backup_store(tmp_path / "s.db", tmp_path / f"b{len(copies)}.db"))
        writer.join()
    for result in copies:
        copy = replay(result.path)  # every logged reply reproduced: no torn group commit, no missing archive
        jobs = sorted(copy.engine.jobs)
        assert jobs == sorted(f"acme/j{i}" for i in range(result.last_seq)) and copy.replayed <= result.last_seq
        copy.close()


def test_a_backup_never_overwrites_and_refuses_what_is_not_a_store(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    with running(tmp_path / "s.db") as srv:
        client(srv, ACME).submit("j1", sow())
    (tmp_path / "taken.db").write_bytes(b"keep me")
    with pytest.raises(StoreError, match=r"backup target .*taken.db exists; give a new file name"):
        backup_store(tmp_path / "s.db", tmp_path / "taken.db")
    assert (tmp_path / "taken.db").read_bytes() == b"keep me"
    with pytest.raises(StoreError, match=r"store .*missing.db: no such file"):
        backup_store(tmp_path / "missing.db", tmp_path / "b.db")
    with sqlite3.connect(tmp_path / "other.db") as db:
        db.execute("CREATE TABLE t (x)")
    with pytest.raises(StoreError, match=r"store .*other.db is not a sowsched command log"):
        backup_store(tmp_path / "other.db", tmp_path / "b.db")
    assert not (tmp_path / "b.db").exists() and not (tmp_path / "b.db.partial").exists()
    assert main(["backup", "--store", str(tmp_path / "s.db"), "--out", str(tmp_path / "taken.db")]) == 2
    assert "sowsched backup: backup target" in capsys.readouterr().err


def _stopped_store(path: Path) -> Path:
    """A store holding one logged submit, its server stopped."""
    with running(path) as srv:
        client(srv, ACME).submit("j1", sow())
    return path


def test_a_backup_leaves_a_file_beside_its_target_alone(tmp_path: Path) -> None:
    # its temporary copy was '<target>.partial', deleted first: an operator's file of that name was lost, and two
    # backups to the same target removed each other's copy
    store = _stopped_store(tmp_path / "s.db")
    (tmp_path / "b.db.partial").write_text("an operator's own file")
    backup_store(store, tmp_path / "b.db")
    assert (tmp_path / "b.db.partial").read_text() == "an operator's own file"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("b.db")) == ["b.db", "b.db.partial"]


def test_a_target_that_appears_during_the_backup_is_not_overwritten(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # 'never overwriting' was checked before the copy and the copy then renamed over whatever had appeared since
    store, target = _stopped_store(tmp_path / "s.db"), tmp_path / "b.db"
    check = server.backup._check_is_store

    def racing(*args: Any) -> None:  # after the target was found free, before the copy is in place
        check(*args)
        target.write_text("written meanwhile")  # another backup, or anyone, takes the name

    monkeypatch.setattr(server.backup, "_check_is_store", racing)
    with pytest.raises(StoreError, match=r"backup target .*b.db exists; give a new file name"):
        backup_store(store, target)
    assert target.read_text() == "written meanwhile"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("b.")) == ["b.db"]  # no copy left behind


def test_a_backup_into_a_missing_directory_names_it(tmp_path: Path) -> None:
    # it said "unable to open database file"
    store = _stopped_store(tmp_path / "s.db")
    with pytest.raises(StoreError, match=r"backup target .*nowhere/b.db: the directory .*nowhere does not exist"):
        backup_store(store, tmp_path / "nowhere" / "b.db")
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("mode", [0o600, 0o640])
def test_a_backup_has_the_permissions_of_its_store(tmp_path: Path, mode: int) -> None:
    store = _stopped_store(tmp_path / "s.db")
    # the store holds pickles the server loads: docs/operations.md says to give it the server's permissions
    store.chmod(mode)
    backup_store(store, tmp_path / "b.db")
    assert (tmp_path / "b.db").stat().st_mode & 0o777 == mode  # 0o640: not merely the temporary file's 0o600


def test_the_backup_target_may_be_named_as_a_store_is(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # --store took sqlite:///PATH but --out read the same form as a path in a directory 'sqlite:' (exit 2)
    store = _stopped_store(tmp_path / "s.db")
    assert main(["backup", "--store", f"sqlite:///{store}", "--out", f"sqlite:///{tmp_path / 'b.db'}", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["out"] == str(tmp_path / "b.db")
    assert (tmp_path / "b.db").is_file()


def test_a_copy_does_not_inherit_the_point_its_store_was_checked_to(tmp_path: Path) -> None:
    # the store's first restart records how far it hashed its archive; the copy's rows were never hashed
    with running(tmp_path / "s.db", snapshot_every=3) as srv:
        acme = client(srv, ACME)
        for i in range(7):
            acme.submit(f"j{i}", sow(outcomes=[[0, 1, 1.0]]))
            acme.report_arrival(f"j{i}")
            acme.report_completion(f"j{i}")
            client(srv).advance()
    with running(tmp_path / "s.db", snapshot_every=3) as again:  # a restart: it records its checked point
        assert again.scheduler.store.verified_point() is not None
        copy = backup_store(tmp_path / "s.db", tmp_path / "b.db")
    with sqlite3.connect(copy.path) as db:
        assert db.execute("SELECT COUNT(*) FROM verified").fetchone() == (0,)
    with running(copy.path, snapshot_every=3) as restored:  # its first restart hashes every row, then records
        assert restored.scheduler.restored_from > 0 and restored.scheduler.store.verified_point() is not None


def test_a_backup_target_that_is_a_dangling_symbolic_link_is_refused_and_left_alone(tmp_path: Path) -> None:
    # the link names no file yet, so it does not 'exist'; a copy published through it would land where it points
    store, target = _stopped_store(tmp_path / "s.db"), tmp_path / "b.db"
    target.symlink_to(tmp_path / "elsewhere.db")
    with pytest.raises(StoreError, match=r"backup target .*b.db exists; give a new file name"):
        backup_store(store, target)
    assert target.is_symlink() and not (tmp_path / "elsewhere.db").exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("b.")) == ["b.db"]  # no copy left behind


def test_a_store_without_its_identity_is_not_backed_up(tmp_path: Path) -> None:
    store = _stopped_store(tmp_path / "s.db")
    with sqlite3.connect(store) as db:
        db.execute("DELETE FROM meta WHERE key = 'identity'")
    with pytest.raises(StoreError, match=r"store .*s\.db holds no command log yet"):
        backup_store(store, tmp_path / "b.db")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("b.")) == []


class _FailingCheck(sqlite3.Connection):
    """The copy's connection, with an integrity_check that reports damage."""

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql == "PRAGMA integrity_check":
            sql = "SELECT '*** in database main *** Page 2: btreeInitPage() returns error code 11'"
        return super().execute(sql, *args)


def test_a_copy_failing_its_integrity_check_is_refused_and_not_published(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    store = _stopped_store(tmp_path / "s.db")
    connect = sqlite3.connect

    def connecting(target: Any, *args: Any, **kwargs: Any) -> Any:
        if str(target).startswith("file:"):  # the source, opened by URI; the copy is opened by its path
            return connect(target, *args, **kwargs)
        return connect(target, *args, factory=_FailingCheck, **kwargs)
    monkeypatch.setattr(server.backup.sqlite3, "connect", connecting)
    with pytest.raises(StoreError, match=r"backup of .*s\.db: the copy fails integrity_check: \*\*\* in database main"):
        backup_store(store, tmp_path / "b.db")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("b.")) == []
