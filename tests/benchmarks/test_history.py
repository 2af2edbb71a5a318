"""`sowsched bench history` on a tiny setting: both schedulers run the same commands, and only the archiving one
leaves its ended jobs and events out of memory (numbers are not asserted)."""

from __future__ import annotations

import argparse
import json

from benchmarks import history as bench_history


def test_bench_history_runs_both_ways_and_only_the_archiving_scheduler_holds_no_history() -> None:
    parser = argparse.ArgumentParser()
    bench_history.add_arguments(parser)
    args = parser.parse_args(["--rounds", "12", "--warm-up", "4", "--snapshot-every", "7"])
    result = json.loads(json.dumps(bench_history.run(args)))
    archive, memory = result["archive"], result["memory"]
    assert archive["ended_jobs"] == memory["ended_jobs"] > 0 and archive["events"] == memory["events"]
    assert archive["commands"] == memory["commands"]  # the same commands, the same outcomes
    assert archive["held_ended_jobs"] == archive["held_events"] == 0  # a snapshot right before measuring
    assert memory["held_events"] == memory["events"] and memory["held_ended_jobs"] >= memory["ended_jobs"]
    # a restart: the archiving store from its last snapshot (nothing to replay), the other from the whole log
    assert archive["restart_replayed"] == 0 and archive["restart_from_snapshot"] == archive["commands"]
    assert memory["restart_replayed"] == memory["commands"] and memory["restart_from_snapshot"] == 0
    for key in ("bytes_per_ended_job", "grown_bytes_first_half", "grown_bytes_second_half", "store_bytes",
                "restart_s"):
        assert key in archive and key in memory
    assert "kept in memory" in bench_history.table(result) and "snapshot every 7" in bench_history.table(result)
