"""The SQLite command log: store URLs, platform identity, append order, and replay that checks every reply."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from mechanism.history import HistoryMarks
from server.replay import body_hash, body_json
from server.scheduler import DurableScheduler, ReplayDiverged
from server.service import encode_reply
from server.store import CommandStore, Snapshot, StoreError, store_path
from tests.grpc_support import ACME, client, config, running, sow

IDENTITY = {"platform": {"C": 8}, "oracle": "mc"}


@pytest.mark.parametrize(("url", "path"), [
    ("sqlite:///var/s.db", Path("var/s.db")),
    ("sqlite:////var/s.db", Path("/var/s.db")),
    ("plain/file.db", Path("plain/file.db")),
])
def test_store_urls_follow_the_sqlalchemy_convention(url: str, path: Path) -> None:
    assert store_path(url) == path


@pytest.mark.parametrize(("url", "match"), [
    ("postgres://db/x", r"store='postgres://db/x': only sqlite:///PATH"),
    ("sqlite:///", r"store='sqlite:///' names no file"),
    ("sqlite://s.db", r"store='sqlite://s.db': only sqlite:///PATH"),  # two slashes: not the SQLAlchemy form
])
def test_other_store_urls_are_rejected(url: str, match: str) -> None:
    with pytest.raises(StoreError, match=match):
        store_path(url)


def test_a_log_appends_in_order_and_survives_reopening(tmp_path: Path) -> None:
    store = CommandStore(tmp_path / "s.db", IDENTITY)
    assert store.append("submit", "acme", "r1", {"job_id": "a"}, "h1", b"q", 0) == 1
    assert store.append("advance", "operator", None, {}, "h2", b"r", 0) == 2
    store.close()
    again = CommandStore(tmp_path / "s.db", IDENTITY)
    assert [(c.seq, c.kind, c.caller, c.request_id, c.body, c.reply) for c in again.commands()] == [
        (1, "submit", "acme", "r1", {"job_id": "a"}, b"q"), (2, "advance", "operator", None, {}, b"r")]
    assert again.count() == 2


def test_the_log_is_in_wal_mode(tmp_path: Path) -> None:
    CommandStore(tmp_path / "s.db", IDENTITY).close()
    with sqlite3.connect(tmp_path / "s.db") as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_the_log_is_fsynced_at_every_commit(tmp_path: Path) -> None:
    # synchronous=FULL is a setting of the connection, not of the file: a store opened without it would acknowledge
    # commands a power cut can still take back (2 is FULL)
    store = CommandStore(tmp_path / "s.db", IDENTITY)
    assert store._db.execute("PRAGMA synchronous").fetchone()[0] == 2
    store.close()


def test_a_log_replays_only_into_the_platform_that_wrote_it_and_the_refusal_releases_the_store(tmp_path: Path) -> None:
    CommandStore(tmp_path / "s.db", IDENTITY).close()
    with pytest.raises(StoreError, match=r"was written for .* not for the configured"):
        CommandStore(tmp_path / "s.db", {"platform": {"C": 9}, "oracle": "mc"})
    CommandStore(tmp_path / "s.db", IDENTITY).close()  # the refused open held no lock afterwards


def test_an_unknown_command_kind_is_refused(tmp_path: Path) -> None:
    store = CommandStore(tmp_path / "s.db", IDENTITY)
    with pytest.raises(StoreError, match="kind='reboot' is not one of"):
        store.append("reboot", "x", None, {}, "h", b"", 0)


def test_an_unwritable_store_is_reported_and_the_failed_open_releases_its_lock(tmp_path: Path) -> None:
    (tmp_path / "dir.db").mkdir()
    with pytest.raises(StoreError, match="cannot open"):
        CommandStore(tmp_path / "dir.db", IDENTITY)
    (tmp_path / "dir.db").rmdir()
    CommandStore(tmp_path / "dir.db", IDENTITY).close()  # a lock kept by the failed open would refuse this one


def test_a_request_id_is_unique_per_caller_in_the_log(tmp_path: Path) -> None:
    store = CommandStore(tmp_path / "s.db", IDENTITY)
    store.append("submit", "acme", "r1", {}, "h", b"", 0)
    store.append("submit", "globex", "r1", {}, "h", b"", 0)
    with pytest.raises(StoreError, match="cannot append the submit command"):
        store.append("submit", "acme", "r1", {}, "h", b"", 0)


def test_replay_detects_a_reply_the_code_no_longer_produces(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with running(path) as srv:
        client(srv, ACME).submit("j1", sow())
    with sqlite3.connect(path) as db:
        db.execute("UPDATE commands SET reply = x'00' WHERE seq = 1")
    cfg = config()
    with pytest.raises(ReplayDiverged, match="replaying command 1 \\(submit\\) did not reproduce its logged reply"):
        DurableScheduler(cfg, CommandStore(path, cfg.identity()), encode_reply)


def test_body_hashes_ignore_key_order_but_not_values() -> None:
    assert body_hash("submit", {"a": 1, "b": 2}) == body_hash("submit", {"b": 2, "a": 1})
    assert body_hash("submit", {"a": 1}) != body_hash("submit", {"a": 2})
    assert body_hash("submit", {"a": 1}) != body_hash("arrive", {"a": 1})


def test_body_hash_is_the_logged_formula_so_older_logs_still_match_their_retries() -> None:
    body = {"job_id": "a", "sow": {"outcomes": [[0, 1, 0.5, None]], "é": "ü"}}
    formula = hashlib.sha256(json.dumps(["submit", body], sort_keys=True).encode()).hexdigest()
    assert body_hash("submit", body) == formula
    assert body_hash("submit", body, body_json(body)) == formula


def test_a_second_writer_on_the_same_store_is_refused_until_the_first_closes(tmp_path: Path) -> None:
    first = CommandStore(tmp_path / "s.db", IDENTITY)
    with pytest.raises(StoreError, match=r"s\.db is in use by another server \(it holds .*s\.db\.lock\)"):
        CommandStore(tmp_path / "s.db", IDENTITY)
    first.close()
    CommandStore(tmp_path / "s.db", IDENTITY).close()  # the lock went with the first writer


def test_a_second_writer_through_a_symbolic_link_to_the_store_is_refused(tmp_path: Path) -> None:
    # the lock was taken next to the name given (link.db.lock), so two servers could share one log
    (tmp_path / "link.db").symlink_to(tmp_path / "s.db")
    first = CommandStore(tmp_path / "s.db", IDENTITY)
    with pytest.raises(StoreError, match=r"link\.db is in use by another server \(it holds .*s\.db\.lock\)"):
        CommandStore(tmp_path / "link.db", IDENTITY)
    first.close()
    second = CommandStore(tmp_path / "link.db", IDENTITY)
    with pytest.raises(StoreError, match=r"s\.db is in use by another server"):
        CommandStore(tmp_path / "s.db", IDENTITY)
    second.close()


def test_a_store_with_a_hard_link_is_refused_and_left_unlocked(tmp_path: Path) -> None:
    # a hard link is a second name the lock on <name>.lock does not cover: two servers could share one log
    CommandStore(tmp_path / "s.db", IDENTITY).close()
    (tmp_path / "hard.db").hardlink_to(tmp_path / "s.db")
    for name in ("s.db", "hard.db"):
        with pytest.raises(StoreError, match=rf"{name} has 2 hard links: the one-server lock covers only this name"):
            CommandStore(tmp_path / name, IDENTITY)
    (tmp_path / "hard.db").unlink()
    CommandStore(tmp_path / "s.db", IDENTITY).close()  # the refusal released the lock


def test_a_read_only_store_reads_beside_the_writer_and_never_writes(tmp_path: Path) -> None:
    writer = CommandStore(tmp_path / "s.db", IDENTITY)
    writer.append("submit", "acme", "r1", {"job_id": "a"}, "h1", b"q", 0)
    reader = CommandStore(tmp_path / "s.db", IDENTITY, read_only=True)
    assert [c.body for c in reader.commands()] == [{"job_id": "a"}]
    with pytest.raises(StoreError, match="cannot append the submit command: attempt to write a readonly database"):
        reader.append("submit", "acme", "r2", {"job_id": "b"}, "h2", b"q", 0)
    reader.close()
    writer.append("advance", "operator", None, {}, "h3", b"r", 0)  # the reader took no lock
    writer.close()


@pytest.mark.parametrize("name", ["s#1.db", "s?x.db", "a%41.db", "sp ace.db"])
def test_a_read_only_store_opens_any_file_name_and_creates_no_file(tmp_path: Path, name: str) -> None:
    # the name went into a SQLite URI unquoted: '#' and '?' cut it (a new empty file 's' was created and
    # refused as "not a sowsched command log"), '%41' was decoded to 'A'
    writer = CommandStore(tmp_path / name, IDENTITY)
    writer.append("advance", "operator", None, {}, "h", b"r", 0)
    before = sorted(tmp_path.iterdir())
    reader = CommandStore(tmp_path / name, IDENTITY, read_only=True)
    assert reader.count() == 1
    reader.close()
    assert sorted(tmp_path.iterdir()) == before
    writer.close()


def _tables_without_identity(path: Path) -> None:
    CommandStore(path, IDENTITY).close()
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM meta")


@pytest.mark.parametrize(("make", "match"), [
    (lambda p: None, r"s\.db: no such file"),
    (lambda p: sqlite3.connect(p).close(), r"s\.db is not a sowsched command log"),
    (_tables_without_identity, r"s\.db holds no command log yet"),  # a reader writes no identity into it
])
def test_a_read_only_store_must_be_an_existing_log(tmp_path: Path, make: object, match: str) -> None:
    make(tmp_path / "s.db")  # type: ignore[operator]
    with pytest.raises(StoreError, match=match):
        CommandStore(tmp_path / "s.db", IDENTITY, read_only=True)


def test_discarding_a_builds_later_snapshots_leaves_another_builds_alone(tmp_path: Path) -> None:
    # a restart of this build that uses none of its snapshots drops them; another build's are not its to drop (they
    # go when this build saves its first snapshot)
    store = CommandStore(tmp_path / "s.db", IDENTITY)
    for seq, code in ((1, "this build"), (2, "another build"), (3, "this build")):
        store.append("advance", "operator", None, {}, "h", b"r", 0)
        store._db.execute("INSERT INTO snapshots VALUES (?, ?, 'd', x'00', 0)", (seq, code))
    store.discard_after("this build", 1, HistoryMarks(0, 0, 0))
    assert [(s.seq, s.code) for s in store.snapshots()] == [(2, "another build"), (1, "this build")]
    assert store.snapshots()[0] == Snapshot(2, "another build", "d", b"\x00")
    store.close()
