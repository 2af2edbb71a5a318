"""The agent's state file: a batch of launch rows and the cursor commit together or not at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from clients.agent_state import AgentState


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
