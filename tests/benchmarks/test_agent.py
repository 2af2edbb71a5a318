"""`sowsched bench agent` runs the agent against a server and reports its numbers for every job it launched."""

from __future__ import annotations

import argparse

import pytest

from benchmarks import agent
from cli.args import BenchInputError
from tests.clients.executor_support import need_slurm


def test_bench_agent_starts_every_job_in_one_round_and_reports_each_launch() -> None:
    r = agent.run(argparse.Namespace(starts=5, executor="local", workers=2))
    assert r["launched"] == r["started_in_round"] == 5 and r["workers"] == 2
    assert r["start_to_launch_p50_s"] is not None and r["agent_cpu_ms_per_job"] >= 0
    assert "starts in one round" in agent.table(r)


def test_bench_agent_times_each_way_of_submitting_a_rounds_starts_on_slurm() -> None:
    need_slurm()
    r = agent.submissions(3, 2)
    assert set(r) == {"sbatch_each", "sbatch_array"}
    assert all(v["last_s"] >= v["p50_s"] >= 0 for v in r.values())


def test_bench_agent_on_slurm_launches_a_rounds_starts_in_one_array_unless_told_not_to() -> None:
    need_slurm()
    r = agent.run(argparse.Namespace(starts=5, executor="slurm", workers=2, no_arrays=False))
    assert r["launched"] == r["started_in_round"] == 5 and (r["arrays"], r["launch_calls"]) == (True, 1)
    r = agent.run(argparse.Namespace(starts=3, executor="slurm", workers=2, no_arrays=True))
    assert r["launched"] == 3 and (r["arrays"], r["launch_calls"]) == (False, 3)


def test_bench_agent_with_server_payloads_launches_the_start_events_payloads_without_a_get_job() -> None:
    r = agent.run(argparse.Namespace(starts=3, executor="local", workers=2, server_payloads=True))
    assert r["launched"] == r["started_in_round"] == 3 and r["server_payloads"] is True
    assert r["payload_fetches"] == 0 and "carried by the start events" in agent.table(r)


def test_bench_agent_with_get_job_fetches_each_started_jobs_payload_and_launches_it() -> None:
    r = agent.run(argparse.Namespace(starts=3, executor="local", workers=2, server_payloads=True, get_job=True))
    assert r["launched"] == r["started_in_round"] == 3 and (r["get_job"], r["payload_fetches"]) == (True, 3)


def test_bench_agent_get_job_without_server_payloads_is_refused() -> None:
    with pytest.raises(BenchInputError, match=r"--get-job needs --server-payloads"):
        agent.run(argparse.Namespace(starts=3, executor="local", workers=2, get_job=True))


def test_bench_agent_per_event_follows_one_message_per_event_and_times_the_starts_reaching_the_agent() -> None:
    for per_event in (False, True):
        r = agent.run(argparse.Namespace(starts=3, executor="local", workers=2, per_event=per_event))
        assert r["launched"] == 3 and r["per_event"] is per_event
        assert r["start_to_last_launch_s"] >= r["starts_queued_s"] > 0
        assert ("one message per event" if per_event else "a round in one message") in agent.table(r)
