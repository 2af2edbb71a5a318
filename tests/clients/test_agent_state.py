"""The agent's state file: a batch of launch rows and the cursor commit together or not at all."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from clients.agent_state import SCHEMA_VERSION, AgentState, StateError


def test_a_transaction_commits_rows_and_cursor_together_or_not_at_all(tmp_path: Path) -> None:
    state = AgentState(tmp_path / "a.db", "local")
    with pytest.raises(RuntimeError, match="crash"), state.transaction():
        state.intend("h1", "acme", "j1", 5, 1)
        state.advance(6)
        raise RuntimeError("crash")
    assert state.get("h1") is None and state.next_seq == 0
    with state.transaction():
        state.intend("h1", "acme", "j1", 5, 1)
        state.intend("h2", "acme", "j2", 6, 2)
        state.advance(7)
    state.close()
    reopened = AgentState(tmp_path / "a.db", "local")
    assert [r.job_id for r in reopened.rows("launching")] == ["j1", "j2"] and reopened.next_seq == 7


def test_each_state_file_has_its_own_instance_kept_across_reopening_and_an_old_file_keeps_its_handles(
        tmp_path: Path) -> None:
    a, b = AgentState(tmp_path / "a.db", "local"), AgentState(tmp_path / "b.db", "local")
    assert a.instance and b.instance and a.instance != b.instance
    instance = a.instance
    a.intend("h1", "acme", "j1", 0, 1)
    a.db.execute("DELETE FROM meta WHERE key = 'instance'")  # a file written before instances existed
    a.close()
    assert AgentState(tmp_path / "a.db", "local").instance == ""  # its rows' handles were made without one
    reopened = AgentState(tmp_path / "b.db", "local")
    assert reopened.instance == b.instance and instance != b.instance


V1_SCHEMA = """
CREATE TABLE cursor (id INTEGER PRIMARY KEY CHECK (id = 0), next_seq INTEGER NOT NULL);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE launches (handle TEXT PRIMARY KEY, tenant TEXT NOT NULL, job_id TEXT NOT NULL, status TEXT NOT NULL,
    external_id TEXT, exit_code INTEGER, how TEXT, reported INTEGER NOT NULL DEFAULT 0, seq INTEGER NOT NULL,
    nodes INTEGER NOT NULL);
INSERT INTO cursor VALUES (0, 9);
INSERT INTO meta VALUES ('kind', 'slurm'), ('instance', 'abc');
INSERT INTO launches (handle, tenant, job_id, status, external_id, seq, nodes)
    VALUES ('h1', 'acme', 'j1', 'running', '41', 3, 2), ('h2', 'acme', 'j2', 'launching', NULL, 4, 1);
"""


def test_a_schema_1_file_is_migrated_in_place_and_its_launches_stay_launches_alone(tmp_path: Path) -> None:
    """A file written before arrays (no schema key, no batch and idx columns) loads: its rows keep everything they
    held, with no array (a launch left 'launching' is looked up by its handle, as it was made), and the file says
    schema 2 from then on."""
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.executescript(V1_SCHEMA)
    state = AgentState(path, "slurm")
    assert state.next_seq == 9 and state.instance == "abc"
    running, launching = state.get("h1"), state.get("h2")
    assert running is not None and (running.status, running.external_id, running.nodes, running.batch) == (
        "running", "41", 2, None)
    assert launching is not None and (launching.status, launching.batch, launching.idx) == ("launching", None, None)
    state.intend("h3", "acme", "j3", 10, 1, "key", 4)
    state.close()
    again = AgentState(path, "slurm")
    row = again.get("h3")
    assert row is not None and (row.batch, row.idx) == ("key", 4)
    assert again.db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0] == str(SCHEMA_VERSION)


def test_a_file_of_a_newer_schema_is_refused_naming_its_version(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    AgentState(path, "slurm").close()
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO launches (handle, tenant, job_id, status, seq, nodes) "
                   "VALUES ('h', 'acme', 'j', 'running', 0, 1)")
        db.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (str(SCHEMA_VERSION + 1),))
    with pytest.raises(StateError, match=f"schema version {SCHEMA_VERSION + 1}; this agent reads versions 1 to "
                                         f"{SCHEMA_VERSION}"):
        AgentState(path, "slurm")
    with sqlite3.connect(path) as db:  # refused, not changed
        assert db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0] == str(SCHEMA_VERSION + 1)
