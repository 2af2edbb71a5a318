"""Executors against the real thing: local process groups and the Slurm test bed (exit codes, look-up, stop)."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import pytest

from clients.executors import (
    Ended,
    Executor,
    ExecutorError,
    Launch,
    LocalExecutor,
    SlurmExecutor,
    handle,
    live_groups,
    slurm_minutes,
    wait_status,
)
from tests.clients.executor_support import need_slurm, wait_until


@pytest.fixture(params=["local", "slurm"])
def executor(request: pytest.FixtureRequest, tmp_path: Path) -> Executor:
    if request.param == "slurm":
        need_slurm()
        return SlurmExecutor(tmp_path / "slurm")
    return LocalExecutor(tmp_path / "local")


def spec(command: list[str], nodes: int = 1, env: dict[str, str] | None = None) -> Launch:
    job = f"job-{uuid.uuid4().hex[:8]}"
    return Launch(handle("acme", job), job, tuple(command), nodes, 120.0, env or {})


def run_to_end(ex: Executor, s: Launch) -> Ended:
    external = ex.launch(s)
    ended: dict[str, Ended] = {}
    wait_until(lambda: ended.update(ex.ended({s.handle: external})) or s.handle in ended, what="the payload ends")
    return ended[s.handle]


def test_exit_code_zero_and_nonzero_are_told_apart(executor: Executor) -> None:
    assert run_to_end(executor, spec(["true"])) == Ended(0, "exited")
    assert run_to_end(executor, spec(["sh", "-c", "exit 3"])) == Ended(3, "exited")


def test_payload_sees_its_job_id_and_nodes_and_not_the_agents_token(executor: Executor, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOWSCHED_TOKEN", "secret-token")
    out = tmp_path / "env.txt"
    s = spec(["sh", "-c", f'echo "$SOWSCHED_JOB_ID $SOWSCHED_NODES $GREETING ${{SOWSCHED_TOKEN:-none}}" > {out}'],
             nodes=3, env={"GREETING": "hello"})
    assert run_to_end(executor, s).exit_code == 0
    assert out.read_text().split() == [s.job_id, "3", "hello", "none"]


def test_a_launch_is_found_again_by_its_handle(executor: Executor) -> None:
    s = spec(["sleep", "30"])
    external = executor.launch(s)
    try:
        assert executor.find(s.handle) == external
        assert executor.find(handle("acme", "never-launched")) is None
        assert executor.ended({s.handle: external}) == {}
    finally:
        executor.stop(external, 1.0)


def test_stop_ends_a_hanging_payload_with_sigterm(executor: Executor, tmp_path: Path) -> None:
    started = tmp_path / "started"
    s = spec(["sh", "-c", f"touch {started}; exec sleep 300"])
    external = executor.launch(s)
    wait_until(started.exists, what="the payload starts")
    executor.stop(external, 1.0)
    ended: dict[str, Ended] = {}
    wait_until(lambda: ended.update(executor.ended({s.handle: external})) or s.handle in ended, what="stopped")
    assert ended[s.handle] == Ended(143, "signalled")


def test_local_stop_kills_a_payload_that_ignores_sigterm_after_the_grace(tmp_path: Path) -> None:
    ex = LocalExecutor(tmp_path)
    s = spec(["sh", "-c", "trap '' TERM; sleep 300"])
    external = ex.launch(s)
    wait_until(lambda: Path(f"{tmp_path / s.handle}.pid").exists(), what="the wrapper starts")
    ex.stop(external, 0.5)
    wait_until(lambda: s.handle in ex.ended({s.handle: external}), what="killed after the grace")
    assert int(external) not in live_groups()


def test_local_payload_runs_in_its_own_process_group(tmp_path: Path) -> None:
    ex = LocalExecutor(tmp_path)
    s = spec(["sleep", "30"])
    external = ex.launch(s)
    try:
        assert os.getpgid(int(external)) == int(external) != os.getpgrp()
    finally:
        ex.stop(external, 1.0)


def test_slurm_job_asks_for_one_task_per_node_and_the_time_limit_in_minutes(tmp_path: Path) -> None:
    need_slurm()
    ex = SlurmExecutor(tmp_path)
    s = Launch(handle("acme", uuid.uuid4().hex), "j", ("sleep", "30"), 5, 90.0)
    external = ex.launch(s)
    try:
        show = subprocess.run(["scontrol", "-o", "show", "job", external], capture_output=True, text=True,
                              check=True).stdout
        assert "NumTasks=5 " in show and "TimeLimit=00:02:00" in show
        assert f"Comment=sowsched:{s.handle}" in show
    finally:
        ex.stop(external, 1.0)


def test_slurm_refusal_is_an_executor_error(tmp_path: Path) -> None:
    need_slurm()
    ex = SlurmExecutor(tmp_path, ["--partition=no-such-partition"])
    with pytest.raises(ExecutorError, match="sbatch exited"):
        ex.launch(spec(["true"]))


def test_slurm_minutes_cover_the_seconds() -> None:
    assert [slurm_minutes(s) for s in (1, 60, 61, 120.4)] == [1, 1, 2, 2]


def test_wait_status_reads_signals_as_128_plus() -> None:
    assert wait_status(3 << 8) == (3, "exited")
    assert wait_status(15) == (143, "signalled")


def test_slurm_runs_a_payload_whose_output_directory_is_given_relative(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """`sowsched agent --state agent.db` puts payload output in agent.db.d: sbatch resolves a relative --output
    against the job's --chdir, so the executor passes both absolute (relative, the job failed before it ran)."""
    need_slurm()
    monkeypatch.chdir(tmp_path)
    assert run_to_end(SlurmExecutor(Path("agent.db.d")), spec(["true"])) == Ended(0, "exited")
