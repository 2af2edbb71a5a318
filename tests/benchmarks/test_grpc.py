"""`sowsched bench grpc` end to end on a tiny setting: every documented field is there (numbers are not asserted)."""

from __future__ import annotations

import argparse
import json

from benchmarks import grpc as bench


def test_bench_grpc_reports_the_issue_fields_per_client_count() -> None:
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    args = parser.parse_args(["--clients", "1,2", "--active", "3", "--submits", "4", "--echo-seconds", "0.2",
                              "--samples", "200"])
    result = json.loads(json.dumps(bench.run(args)))
    assert set(result["clients"]) == {"1", "2"} and result["target_ratio"] == 0.5
    for row in result["clients"].values():
        for key in ("submit_per_s", "echo_per_s", "ratio", "p50_ms", "p99_ms", "writer_ms_mean", "commit_ms_mean"):
            assert row[key] > 0.0, key
        assert row["commit_ms_mean"] <= row["writer_ms_mean"] and row["settle_ms_mean"] >= 0.0
        assert row["submits"] == 4 and row["active_jobs_after"] == 3 + 1 + 4
    assert "commit ms" in bench.table(result) and "settle ms" in bench.table(result)
