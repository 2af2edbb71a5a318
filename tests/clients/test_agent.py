"""The agent against a real server and a real executor (local process groups, the Slurm test bed): each started job
runs once and its completion is reported; evicted, overrunning and failing work has its documented outcome."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from clients.agent_state import AgentState
from clients.executors import Launch, handle
from mechanism.executor import ExecutorInfo
from tests.clients.agent_support import bed
from tests.clients.executor_support import live_work, wait_until

KINDS = ["local", "slurm"]


@pytest.mark.parametrize("kind", KINDS)
def test_started_jobs_run_once_and_complete_charged(kind: str, tmp_path: Path) -> None:
    with bed(kind, tmp_path) as b:
        for j in ("a", "b", "c"):
            b.submit(j, "sleep 0.2")
        assert sorted(b.play(8)) == ["a", "b", "c"]  # each start's completion is reported in the next round
        for j in ("a", "b", "c"):
            job = b.op.get_job(j, tenant="acme").view
            assert job.state == "COMPLETED" and job.finish == job.start + 2 and job.charge > 0  # type: ignore[operator]
            assert job.executor is not None and (job.executor.kind, job.executor.exit_code) == (kind, 0)
            assert job.executor.external_id == b.launch(j).external_id
        assert sorted(b.runs()) == ["a", "b", "c"]


@pytest.mark.parametrize("kind", KINDS)
def test_nonzero_exit_is_reported_as_a_charged_completion(kind: str, tmp_path: Path) -> None:
    with bed(kind, tmp_path) as b:
        b.submit("bad", "exit 3")
        b.op.advance()
        b.wait_reported("bad")
        b.op.advance()
        job = b.op.get_job("bad", tenant="acme").view
        assert job.state == "COMPLETED" and job.charge > 0
        assert job.executor is not None and job.executor.exit_code == 3


@pytest.mark.parametrize("kind", KINDS)
def test_capacity_drop_evicts_and_the_payload_is_stopped(kind: str, tmp_path: Path) -> None:
    with bed(kind, tmp_path) as b:
        b.submit("hang", "sleep 300")
        b.op.advance()
        wait_until(lambda: b.runs() == ["hang"], what="the payload runs")
        b.op.report_capacity(1, 0)
        b.op.advance()  # round 1: capacity 0, the running job is evicted
        assert b.state("hang") == "EVICTED"
        b.wait_ended("hang")  # the agent stopped it and saw it go
        assert b.rows()["hang"] == ("ended", 1)


@pytest.mark.parametrize("kind", KINDS)
def test_a_stop_written_but_not_made_before_a_crash_is_made_by_the_restarted_agent(kind: str, tmp_path: Path) -> None:
    """The agent writes 'stopping' before it stops the work (SIGTERM or scancel): an agent that dies in between, or
    whose stop failed, leaves a row whose work still runs; the next poll (of a restarted agent) stops it."""
    with bed(kind, tmp_path) as b:
        b.submit("orphan", "sleep 300")
        b.op.advance()
        wait_until(lambda: b.runs() == ["orphan"], what="the payload runs")
        b.stop_agent()
        row = b.launch("orphan")
        assert row.external_id is not None and live_work(kind, row.handle)
        state = AgentState(b.state_path, kind)
        state.stopping(row.handle, row.external_id)  # as the agent writes it just before the stop it never made
        state.close()
        b.start_agent()
        wait_until(lambda: not live_work(kind, row.handle), what="the orphaned work stopped")
        b.wait_ended("orphan")


@pytest.mark.parametrize("kind", KINDS)
def test_a_restarted_agent_does_not_adopt_another_state_files_launch_of_the_same_job(kind: str,
                                                                                    tmp_path: Path) -> None:
    """An earlier deployment (another state file) launched acme's job "dup", and its work is still listed (Slurm keeps
    finished jobs for MinJobAge). An agent that died between writing its own launch of "dup" and making it looks the
    launch up on restart: it finds nothing of its own, so it launches, instead of adopting the other's work."""
    with bed(kind, tmp_path) as b:
        other = AgentState(tmp_path / "other.db", kind)
        theirs = b.executor.launch(Launch(handle("acme", "dup", other.instance), "dup", ("sleep", "300"), 1, 120.0))
        other.close()
        b.stop_agent()
        b.submit("dup", "true")
        start = next(e for e in b.op.advance().events if e.type == "start")
        state = AgentState(b.state_path, kind)
        with state.transaction():  # as the agent writes it before the launch it died before making
            state.intend(handle("acme", "dup", state.instance), "acme", "dup", start.seq, 1)
            state.advance(start.seq + 1)
        state.close()
        try:
            b.start_agent()
            wait_until(lambda: b.runs() == ["dup"], what="its own payload runs")
            assert b.launch("dup").external_id not in (None, theirs)
        finally:
            b.executor.stop(theirs, 0.1)


@pytest.mark.parametrize("kind", KINDS)
def test_work_past_its_longest_declared_duration_is_evicted_and_stopped(kind: str, tmp_path: Path) -> None:
    with bed(kind, tmp_path) as b:
        b.submit("long", "sleep 300")
        b.op.advance()  # round 0: started
        wait_until(lambda: b.runs() == ["long"], what="the payload runs")
        b.op.advance()
        b.op.advance()  # round 2: duration 3, the longest declared, without a completion: evicted (overrun)
        assert b.state("long") == "EVICTED"
        b.wait_ended("long")


@pytest.mark.parametrize("kind", KINDS)
def test_work_cancelled_outside_sowsched_is_reported_as_a_completion(kind: str, tmp_path: Path) -> None:
    with bed(kind, tmp_path) as b:
        b.submit("victim", "sleep 300")
        b.op.advance()
        wait_until(lambda: b.runs() == ["victim"], what="the payload runs")
        row = b.launch("victim")
        assert row.external_id is not None
        assert b.op.get_job("victim", tenant="acme").view.executor == ExecutorInfo(kind, row.external_id)
        if kind == "slurm":
            subprocess.run(["scancel", row.external_id], check=True)
        else:
            os.killpg(int(row.external_id), signal.SIGTERM)
        b.wait_reported("victim")
        b.op.advance()
        job = b.op.get_job("victim", tenant="acme").view
        assert job.state == "COMPLETED" and job.executor is not None and job.executor.exit_code == 143


def test_slurm_time_limit_is_the_jobs_longest_declared_duration_times_the_round(tmp_path: Path) -> None:
    """OUTCOMES' longest duration is 3 rounds: at 50 s rounds, --time is 150 s, rounded up to 3 minutes (the
    platform's D_m of 4 rounds would give 4)."""
    with bed("slurm", tmp_path, from_server=True, round_seconds=50.0) as b:
        b.submit("timed", "sleep 300")
        b.op.advance()
        wait_until(lambda: b.runs() == ["timed"], what="the payload runs")
        external = b.launch("timed").external_id
        assert external is not None
        limit = subprocess.run(["squeue", "-h", "-j", external, "-O", "TimeLimit"], check=True,
                               capture_output=True, text=True).stdout.strip()
        assert limit == "3:00"


def test_work_stopped_at_its_slurm_time_limit_ends_evicted_for_overrun(tmp_path: Path) -> None:
    """Slurm's TIMEOUT is not reported as a completion: the job holds its nodes until the server evicts it for
    overrun at its longest declared duration (3 rounds). The limit is cut to now with `scontrol update EndTime`
    (Slurm keeps limits in whole minutes; its time-limit check runs about every 30 s)."""
    with bed("slurm", tmp_path) as b:
        b.submit("capped", "sleep 300")
        b.op.advance()  # round 0: started
        wait_until(lambda: b.runs() == ["capped"], what="the payload runs")
        external = b.launch("capped").external_id
        assert external is not None
        subprocess.run(["scontrol", "update", f"JobId={external}", "EndTime=now"], check=True)
        wait_until(lambda: b.launch("capped").status == "ended", seconds=80, what="Slurm's TIMEOUT seen")
        row = b.launch("capped")
        assert (row.how, row.reported) == ("timeout", True)  # nothing to report
        b.op.advance()
        assert b.state("capped") == "RUNNING"
        b.op.advance()  # round 2: duration 3, the longest declared, without a completion
        job = b.op.get_job("capped", tenant="acme").view
        evicts = [te.event for te in b.op.watch_tenants(0, follow=False)
                  if te.event.job == "capped" and te.event.type == "evict"]
        assert job.state == "EVICTED" and [e.data.get("reason") for e in evicts] == ["overrun"] and job.charge == 0
