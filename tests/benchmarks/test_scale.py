"""`sowsched bench scale` end to end on two tiny sizes: every reported field is there (numbers are not asserted)."""

from __future__ import annotations

import argparse

import pytest

from benchmarks import scale as bench
from cli.args import BenchInputError


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    return parser.parse_args(["--submits", "2", "--stream-submits", "3", "--samples", "200", *argv])


def test_bench_scale_reports_rates_round_time_memory_and_snapshot_size_per_size() -> None:
    result = bench.run(_args("--active", "10,20", "--capacity", "40,80"))
    assert [(r["active_loaded"], r["C"]) for r in result["sizes"]] == [(10, 40), (20, 80)]
    for r in result["sizes"]:
        for key in ("submit_per_s", "stream_per_s", "advance_ms", "first_quote_ms", "rss_mb_loaded",
                    "snapshot_bytes"):
            assert r[key] > 0, key
        assert r["round_ms"] == pytest.approx(r["advance_ms"] + r["first_quote_ms"])
    assert "snapshot KiB" in bench.table(result)


def test_bench_scale_refuses_capacities_that_do_not_pair_with_the_sizes() -> None:
    with pytest.raises(BenchInputError, match="--capacity has 1 values, --active 2"):
        bench.run(_args("--active", "10,20", "--capacity", "40"))
