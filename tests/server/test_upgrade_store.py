"""A store written by the build before the scheduler's split replays, in this build, to the same digest and replies.

tests/server/data/upgrade.db.gz and upgrade.json were written by that build running data/write_upgrade_store.py:
three tenants' submissions, arrivals, completions and rounds (refusals among them), a snapshot half-way, and the
replies of probe commands sent after a restart. Its snapshot names that build's replay identity, so this build
distrusts it (as after any upgrade) and replays the whole log, checking every logged reply on the way.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from server.scheduler import DurableScheduler
from server.service import encode_reply
from server.store import CommandStore
from tests.server.data import write_upgrade_store as written_by

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="module")
def expected() -> dict[str, Any]:
    return json.loads((DATA / "upgrade.json").read_text())


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A copy of the old build's store (a test may change it)."""
    path = tmp_path / "upgrade.db"
    with gzip.open(DATA / "upgrade.db.gz", "rb") as packed, path.open("wb") as raw:
        shutil.copyfileobj(packed, raw)
    return path


def open_store(path: Path, read_only: bool = False) -> DurableScheduler:
    cfg = written_by.config()
    return DurableScheduler(cfg, CommandStore(path, cfg.identity(), read_only=read_only), encode_reply)


def test_the_old_store_replays_to_its_digest_and_answers_the_probes_with_the_old_replies(
        store: Path, expected: dict[str, Any]) -> None:
    sched = open_store(store)
    try:
        assert (sched.restored_from, sched.replayed, sched.log_seq) == (0, expected["log_seq"], expected["log_seq"])
        assert sched.engine.digest() == expected["digest"]
        assert written_by.run(sched, written_by.PROBES) == expected["probes"]
        assert sched.engine.digest() == expected["probed_digest"]
    finally:
        sched.close()


def test_after_the_upgrade_replay_this_build_snapshots_and_restores_to_the_same_digest(
        store: Path, expected: dict[str, Any]) -> None:
    sched = open_store(store)
    try:
        assert sched.snapshot() == expected["log_seq"]
    finally:
        sched.close()
    sched = open_store(store)
    try:
        assert (sched.restored_from, sched.replayed) == (expected["log_seq"], 0)
        assert sched.engine.digest() == expected["digest"]
        assert written_by.run(sched, written_by.PROBES) == expected["probes"]
        assert sched.engine.digest() == expected["probed_digest"]
    finally:
        sched.close()


def test_a_read_only_open_of_the_old_store_reaches_its_digest(store: Path, expected: dict[str, Any]) -> None:
    sched = open_store(store, read_only=True)
    try:
        assert sched.engine.digest() == expected["digest"]
    finally:
        sched.close()


def test_the_same_commands_sent_to_this_build_get_the_same_replies_and_digests(
        tmp_path: Path, expected: dict[str, Any]) -> None:
    assert written_by.write(tmp_path) == expected
