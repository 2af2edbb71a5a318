"""`sowsched bench agent` runs the agent against a server and reports its numbers for every job it launched."""

from __future__ import annotations

import argparse

from benchmarks import agent


def test_bench_agent_starts_every_job_in_one_round_and_reports_each_launch() -> None:
    r = agent.run(argparse.Namespace(starts=5, executor="local", workers=2))
    assert r["launched"] == r["started_in_round"] == 5 and r["workers"] == 2
    assert r["start_to_launch_p50_s"] is not None and r["agent_cpu_ms_per_job"] >= 0
    assert "starts in one round" in agent.table(r)
