"""The agent against a real server and a real executor (local process groups, the Slurm test bed): each started job
runs once and its completion is reported; evicted, overrunning and failing work has its documented outcome."""

from __future__ import annotations

import os
import signal
import subprocess
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from clients.agent import Agent, AgentOptions, Payload
from clients.agent_state import AgentState
from clients.executors import Launch, SlurmExecutor, handle
from mechanism.executor import ExecutorInfo
from tests.clients.agent_support import Bed, bed
from tests.clients.executor_support import array_of, live_work, slurm_jobs, wait_until

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
def test_a_start_is_launched_from_the_payload_its_event_carries_without_a_get_job(kind: str, tmp_path: Path) -> None:
    """The server streams each start with its job's command and env: the agent runs them and never asks its payload
    source (GetJob here) for them."""
    with bed(kind, tmp_path, from_server=True) as b:
        for j in ("a", "b"):
            b.submit(j, f'echo "$RUN" > {tmp_path}/{j}.env', env={"RUN": f"run-{j}"})
        assert sorted(b.play(8)) == ["a", "b"]
        assert sorted(b.runs()) == ["a", "b"]
        assert [(tmp_path / f"{j}.env").read_text() for j in ("a", "b")] == ["run-a\n", "run-b\n"]
        assert b.fetched == []


def test_a_start_streamed_without_a_payload_is_fetched_with_get_job(tmp_path: Path) -> None:
    """An older server streams starts without payloads: the agent fetches each such start's payload from its source
    (GetJob) and launches it; a start that carries one in the same batch is not fetched."""
    with bed("local", tmp_path, from_server=True, platform=BIG) as b:
        b.stop_agent()
        for j in ("old", "new"):
            b.submit(j, "true", **now(2))
        b.op.advance()
        events = [replace(te, payload=None) if te.event.job == "old" else te
                  for te in b.op.watch_tenants(0, follow=False)]
        assert [te.event.job for te in events if te.event.type == "start" and te.payload is not None] == ["new"]
        b.start_agent(first=events)
        for j in ("old", "new"):
            b.wait_reported(j)
        assert sorted(b.runs()) == ["new", "old"] and b.fetched == ["old"]


def test_with_event_payloads_off_the_agent_fetches_every_starts_payload_with_get_job(tmp_path: Path) -> None:
    """AgentOptions(event_payloads=False): the agent as it was before the events carried payloads, one GetJob each."""
    with bed("local", tmp_path, from_server=True, event_payloads=False) as b:
        for j in ("a", "b"):
            b.submit(j, "true")
        assert sorted(b.play(8)) == ["a", "b"]
        assert sorted(b.runs()) == ["a", "b"] and sorted(b.fetched) == ["a", "b"]


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
        assert row.external_id is not None and live_work(kind, row.handle, array_of(row))
        state = AgentState(b.state_path, kind)
        state.stopping(row.handle, row.external_id)  # as the agent writes it just before the stop it never made
        state.close()
        b.start_agent()
        wait_until(lambda: not live_work(kind, row.handle, array_of(row)), what="the orphaned work stopped")
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
            assert b.recorded("dup").external_id not in (None, theirs)
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
        row = b.recorded("victim")
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
        external = b.recorded("timed").external_id
        assert external is not None
        limit = subprocess.run(["squeue", "-h", "-j", external, "-O", "TimeLimit"], check=True,
                               capture_output=True, text=True).stdout.strip()
        subprocess.run(["scancel", external], check=True)  # not left holding the test cluster's node for 3 minutes
        assert limit == "3:00"


def test_work_stopped_at_its_slurm_time_limit_ends_evicted_for_overrun(tmp_path: Path) -> None:
    """Slurm's TIMEOUT is not reported as a completion: the job holds its nodes until the server evicts it for
    overrun at its longest declared duration (3 rounds). The limit is cut to now with `scontrol update EndTime`
    (Slurm keeps limits in whole minutes; its time-limit check runs about every 30 s)."""
    with bed("slurm", tmp_path) as b:
        b.submit("capped", "sleep 300")
        b.op.advance()  # round 0: started
        wait_until(lambda: b.runs() == ["capped"], what="the payload runs")
        external = b.recorded("capped").external_id
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


# with NOW, jobs are worth their value only if they finish by their one duration: every one starts in round 0
BIG = {"C": 1000, "C_m": 1, "D_m": 4, "S_m": 8, "H": 100.0, "samples": 500, "seed": 1}


def now(duration: int) -> dict[str, Any]:
    return {"value_steps": [[duration, 50.0]], "outcomes": [[0, duration, 1.0]]}


def intend_array(b: Bed, jobs: list[str]) -> tuple[str, dict[int, Launch]]:
    """Start `jobs` in one round with the agent stopped, and write their rows as the agent writes them before its
    sbatch --array (one batch key, indices in start order): the state an agent SIGKILLed just after that write
    leaves. The batch key and the elements the agent would submit."""
    b.stop_agent()
    for j in jobs:
        b.submit(j, "true", **now(2))
    starts = [e for e in b.op.advance().events if e.type == "start"]
    assert sorted(e.job for e in starts) == sorted(jobs)
    key = uuid.uuid4().hex[:24]
    state = AgentState(b.state_path, "slurm")
    elements = {i: Launch(handle("acme", e.job, state.instance), e.job, b.commands[e.job], 1, 0.0)
                for i, e in enumerate(starts)}
    with state.transaction():
        for i, e in enumerate(starts):
            state.intend(elements[i].handle, "acme", e.job, e.seq, 1, key, i)
        state.advance(starts[-1].seq + 1)
    state.close()
    return key, elements


@pytest.mark.parametrize("reached", [False, True], ids=["sbatch-not-reached", "sbatch-returned"])
def test_an_array_written_before_a_crash_is_submitted_exactly_once_by_the_restarted_agent(reached: bool,
                                                                                          tmp_path: Path) -> None:
    """The agent died after writing the array's rows: before its sbatch --array reached the controller (sbatch dies
    with it), or after it returned and before the launches were written. Restarted, it looks the array up by its
    name and comment (the batch key): not found, it submits it under the same key and indices; found, it adopts
    every element. Either way each payload runs once, from one array."""
    jobs = ["x", "y", "z"]
    with bed("slurm", tmp_path, platform=BIG) as b:
        key, elements = intend_array(b, jobs)
        assert isinstance(b.executor, SlurmExecutor)
        ids = b.executor.launch_array(key, elements) if reached else {}  # the sbatch the agent made before it died
        b.start_agent()
        for j in jobs:
            b.wait_reported(j)
        assert sorted(b.runs()) == jobs
        for i, spec in elements.items():
            row = b.launch(spec.job_id)
            assert (row.batch, row.idx) == (key, i) and row.external_id == ids.get(i, row.external_id)
            assert list(slurm_jobs(row.handle, array_of(row))) == [row.external_id]  # one sbatch made it
            assert b.op.get_job(spec.job_id, tenant="acme").view.executor == ExecutorInfo("slurm", str(row.external_id),
                                                                                          0)


def test_a_round_of_100_starts_goes_out_as_one_array_and_each_element_is_reported_and_stopped_alone(
        tmp_path: Path) -> None:
    """100 jobs started in one round, their events handled together: one sbatch --array of 100 elements (one batch
    key, indices 0-99, one array id). 90 payloads exit with their own codes (i % 4), each reported as its job's
    completion with its element's id and code; 10 hang: 5 whose longest declared duration is 2 rounds are evicted in
    round 1 and only their elements are cancelled (the other 5 still run), then those 5 at their own overrun in
    round 2."""
    quick = [f"q{i:02d}" for i in range(90)]
    short, long_ = [f"s{i}" for i in range(5)], [f"l{i}" for i in range(5)]
    with bed("slurm", tmp_path, platform=BIG) as b:
        b.stop_agent()
        for i, j in enumerate(quick):
            b.submit(j, f"exit {i % 4}", **now(2))
        for j in short:
            b.submit(j, "exec sleep 300", **now(2))
        for j in long_:
            b.submit(j, "exec sleep 300", **now(3))
        started = [e.job for e in b.op.advance().events if e.type == "start"]  # round 0
        assert sorted(started) == sorted(quick + short + long_)
        b.start_agent(first=list(b.op.watch_tenants(0, follow=False)))
        wait_until(lambda: len(b.rows()) == 100 and all(s != "launching" for s, _r in b.rows().values()),
                   what="every job launched")
        rows = {j: b.launch(j) for j in started}
        keys = {r.batch for r in rows.values()}
        assert len(keys) == 1 and None not in keys and sorted(r.idx or 0 for r in rows.values()) == list(range(100))
        array_ids = {str(r.external_id).split("_")[0] for r in rows.values()}
        assert len(array_ids) == 1
        array_id = next(iter(array_ids))
        assert all(r.external_id == f"{array_id}_{r.idx}" for r in rows.values())
        for j in quick:
            b.wait_reported(j)
        b.op.advance()  # round 1: the quick ones' completions; the short hangs overrun their 2 rounds
        for i, j in enumerate(quick):
            job = b.op.get_job(j, tenant="acme").view
            code = ExecutorInfo("slurm", str(rows[j].external_id), i % 4)
            assert job.state == "COMPLETED" and job.executor == code, j
        assert all(b.state(j) == "EVICTED" for j in short)
        for j in short:
            b.wait_ended(j)
        wait_until(lambda: not any(live_work("slurm", rows[j].handle, array_of(rows[j])) for j in short),
                   what="the short hangs' elements gone")
        assert all(b.state(j) == "RUNNING" and live_work("slurm", rows[j].handle, array_of(rows[j])) for j in long_)
        b.op.advance()  # round 2: the long hangs overrun their 3 rounds
        assert all(b.state(j) == "EVICTED" for j in long_)
        wait_until(lambda: not any(live_work("slurm", rows[j].handle, array_of(rows[j])) for j in long_),
                   what="the long hangs' elements gone")
        assert sorted(b.runs()) == sorted(started)  # each ran once
        assert all(len(slurm_jobs(r.handle, array_of(r))) == 1 for r in rows.values())


def test_array_max_splits_a_rounds_starts_into_arrays_of_at_most_that_many_and_one_means_one_sbatch_each(
        tmp_path: Path) -> None:
    """`--array-max 2`: five starts handled together go out as arrays of 2, 2 and 1 (indices from 0 in each);
    `--array-max 1`: as jobs alone (no array key), each found by its handle."""
    for array_max, sizes in ((2, [1, 2, 2]), (1, [])):
        run = tmp_path / f"max{array_max}"
        run.mkdir()
        jobs = [f"m{i}" for i in range(5)]
        with bed("slurm", run, platform=BIG, array_max=array_max) as b:
            b.stop_agent()
            for j in jobs:
                b.submit(j, "true", **now(2))
            b.op.advance()
            b.start_agent(first=list(b.op.watch_tenants(0, follow=False)))
            for j in jobs:
                b.wait_reported(j)
            rows = [b.launch(j) for j in jobs]
            by_key: dict[str, list[int]] = {}
            for r in rows:
                if r.batch is not None and r.idx is not None:
                    by_key.setdefault(r.batch, []).append(r.idx)
            assert sorted(len(v) for v in by_key.values()) == sizes
            assert all(sorted(v) == list(range(len(v))) for v in by_key.values())
            assert sorted(b.runs()) == jobs
            assert all(len(slurm_jobs(r.handle, array_of(r))) == 1 for r in rows)


def test_a_runs_starts_are_grouped_into_arrays_by_shape_count_and_script_size(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """One array per shape (--ntasks, --time in minutes), in start order, split at --array-max elements and where
    the batch script would pass ARRAY_SCRIPT_CHARS; each array's indices from 0 and its key its own. No Slurm call
    is made to group them."""
    monkeypatch.setattr("clients.agent.ARRAY_SCRIPT_CHARS", 1000)
    state = AgentState(tmp_path / "a.db", "slurm")
    agent = Agent(None, SlurmExecutor(tmp_path / "out"), state, lambda t, j: Payload((), 1, 1),  # type: ignore[arg-type]
                  AgentOptions(array_max=3))
    try:
        def launch(job: str, nodes: int, seconds: float, arg: str = "x") -> Launch:
            return Launch(handle("acme", job), job, ("echo", arg), nodes, seconds)
        specs = [launch("a", 1, 60), launch("b", 2, 60), launch("c", 1, 30), launch("d", 1, 61), launch("e", 1, 60),
                 launch("f", 1, 60), launch("g", 2, 60), launch("h", 1, 1, "y" * 600), launch("i", 1, 1, "z" * 600)]
        units = agent._units(specs)
        assert [[s.job_id for s in u.elements.values()] for u in units] == [
            ["a", "c", "e"], ["f", "h"], ["i"], ["b", "g"], ["d"]]  # 1x1min (3, then 1,000 chars), 2x1min, 1x2min
        assert all(u.array and list(u.elements) == list(range(len(u.elements))) for u in units)
        assert len({u.key for u in units}) == len(units)
    finally:
        agent._launcher.shutdown()
        agent._rpcs.shutdown()
        state.close()
