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
