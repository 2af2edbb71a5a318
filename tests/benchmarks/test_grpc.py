"""`sowsched bench grpc` end to end on a tiny setting: every documented field is there (numbers are not asserted)."""

from __future__ import annotations

import argparse
import json
import os
import signal
import threading
import time

import pytest

from benchmarks import grpc as bench


def test_bench_grpc_reports_the_issue_fields_per_client_count() -> None:
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    args = parser.parse_args(["--clients", "1,2", "--active", "3", "--submits", "4", "--echo-seconds", "0.2",
                              "--samples", "200", "--stream-submits", "6", "--feature-submits", "0"])
    result = json.loads(json.dumps(bench.run(args)))
    assert "prediction" not in result
    assert set(result["clients"]) == {"1", "2"} and result["target_ratio"] == 0.3
    assert result["target_stream_ratio"] == 5.0
    for row in result["clients"].values():
        for key in ("submit_per_s", "echo_per_s", "ratio", "p50_ms", "p99_ms", "writer_ms_mean", "commit_ms_mean",
                    "stream_per_s", "stream_ratio", "stream_writer_ms_mean", "stream_batch_items_mean"):
            assert row[key] > 0.0, key
        assert row["commit_ms_mean"] <= row["writer_ms_mean"] and row["settle_ms_mean"] >= 0.0
        assert row["submits"] == 4 and row["streamed"] == 6 and row["active_jobs_after"] == 3 + 1 + 4 + 6
    text = bench.table(result)
    assert "commit ms" in text and "settle ms" in text and "stream/s" in text


def test_bench_grpc_reports_the_predictions_added_ms_against_the_same_sow_submitted_explicitly() -> None:
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    args = parser.parse_args(["--clients", "1", "--active", "2", "--submits", "2", "--echo-seconds", "0.1",
                              "--samples", "200", "--stream-submits", "2", "--feature-submits", "4", "--train", "3"])
    result = json.loads(json.dumps(bench.run(args)))
    p = result["prediction"]
    assert p["pairs"] == 4 and p["trained"] >= 1 and p["target_added_ms"] == 0.5
    assert p["features_p50_ms"] > 0.0 and p["explicit_p50_ms"] > 0.0 and "added_ms_p50" in p
    assert "prediction (one client, 4 pairs" in bench.table(result)


class Stop(BaseException):
    """What cli/main.py raises on SIGTERM, in kind."""


def _raise_stop(signum: int, frame: object) -> None:
    raise Stop


def test_an_interrupted_hammer_lets_its_threads_end_before_it_returns() -> None:
    calls: list[int] = []
    threads: set[threading.Thread] = set()

    def work(client: object, k: int, i: int) -> bool:
        time.sleep(0.01)
        calls.append(k)
        threads.add(threading.current_thread())
        return True  # forever, until interrupted

    previous = signal.signal(signal.SIGTERM, _raise_stop)
    try:
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM)).start()
        with pytest.raises(Stop):
            bench.hammer([object(), object()], work)  # type: ignore[list-item]
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert set(calls) == {0, 1} and len(threads) == 2
    assert not [t for t in threads if t.is_alive()]  # none left calling a stopped server
