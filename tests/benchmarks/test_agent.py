"""`sowsched bench agent` runs the agent against a server and reports its numbers for every job it launched."""

from __future__ import annotations

import argparse

from benchmarks import agent


def test_bench_agent_reports_a_latency_and_cpu_for_each_launch() -> None:
    r = agent.run(argparse.Namespace(starts=3, executor="local"))
    assert r["launched"] == r["started_in_round"] >= 1
    assert r["start_to_launch_p50_s"] is not None and r["agent_cpu_ms_per_job"] >= 0
    assert "starts in one round" in agent.table(r)
