"""Executors against the real thing: local process groups and the Slurm test bed (exit codes, look-up, stop)."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import pytest

from clients.executors import (
    ArrayExecutor,
    Ended,
    Executor,
    ExecutorError,
    Launch,
    LocalExecutor,
    SlurmExecutor,
    array_script,
    handle,
    index_ranges,
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


def test_array_indices_are_written_as_slurm_ranges() -> None:
    assert index_ranges([0, 1, 2, 3]) == "0-3"
    assert index_ranges([9, 0, 1, 3, 7, 8]) == "0-1,3,7-9"
    assert index_ranges([5]) == "5"


def test_array_script_runs_each_elements_command_with_its_own_variables_under_sh(tmp_path: Path) -> None:
    """The batch script, run by sh as Slurm runs it for element i (SLURM_ARRAY_TASK_ID=i), execs element i's argv
    (quoted: spaces, quotes and $ pass through) with element i's variables; an unknown index exits 127."""
    out = tmp_path / "out"
    a = spec(["sh", "-c", f'echo "$SOWSCHED_JOB_ID $GREETING" > {out}'], env={"GREETING": "it's $HOME"})
    b = spec(["sh", "-c", f'printf "%s|" "$SOWSCHED_JOB_ID" "$0" "$1" > {out}', "two words", "'q'"])
    script = tmp_path / "array.sh"
    script.write_text(array_script({0: a, 3: b}))
    run = lambda i: subprocess.run(["sh", str(script)], env={"PATH": os.environ["PATH"],  # noqa: E731
                                                             "SLURM_ARRAY_TASK_ID": str(i)}, capture_output=True)
    assert run(0).returncode == 0 and out.read_text().strip() == f"{a.job_id} it's $HOME"
    assert run(3).returncode == 0 and out.read_text() == f"{b.job_id}|two words|'q'|"
    missing = run(1)
    assert missing.returncode == 127 and b"no element 1" in missing.stderr


def test_slurm_is_an_array_executor_and_local_is_not(tmp_path: Path) -> None:
    assert isinstance(SlurmExecutor(tmp_path / "s"), ArrayExecutor)
    assert not isinstance(LocalExecutor(tmp_path / "l"), ArrayExecutor)


def test_slurm_array_elements_run_their_own_payloads_are_found_by_key_and_stopped_one_by_one(tmp_path: Path) -> None:
    """One sbatch --array: each element runs its own command and environment and ends with its own exit code;
    find_array gives the same element ids by the array's key (and nothing for a key never launched); scancel of one
    element (ARRAYID_INDEX) stops that element alone."""
    need_slurm()
    ex = SlurmExecutor(tmp_path / "slurm")
    ran = tmp_path / "ran"
    ran.mkdir()
    specs = {i: spec(["sh", "-c", f'echo "$GREETING" > {ran}/"$SOWSCHED_JOB_ID"; {script}'], env={"GREETING": f"g{i}"})
             for i, script in enumerate(["exit 0", "exit 3", "exec sleep 300", "exec sleep 300"])}
    key = uuid.uuid4().hex[:24]
    ids = ex.launch_array(key, specs)
    try:
        array_id = ids[0].split("_")[0]
        assert ids == {i: f"{array_id}_{i}" for i in specs}
        assert ex.find_array(key, [0, 2]) == {0: ids[0], 2: ids[2]}
        assert ex.find_array(uuid.uuid4().hex[:24], [0]) == {}
        launched = {specs[i].handle: ids[i] for i in specs}
        ended: dict[str, Ended] = {}
        wait_until(lambda: ended.update(ex.ended(launched)) or len(ended) == 2, what="the two short elements end")
        wait_until(lambda: all((ran / specs[i].job_id).exists() for i in specs), what="every element runs")
        assert {h: e.exit_code for h, e in ended.items()} == {specs[0].handle: 0, specs[1].handle: 3}
        assert [(ran / specs[i].job_id).read_text().strip() for i in specs] == ["g0", "g1", "g2", "g3"]
        ex.stop(ids[2], 1.0)
        wait_until(lambda: ended.update(ex.ended(launched)) or len(ended) == 3, what="element 2 stopped")
        assert ended[specs[2].handle].how == "signalled" and specs[3].handle not in ended
    finally:
        subprocess.run(["scancel", array_id], check=False)
