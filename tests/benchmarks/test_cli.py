"""`sowsched bench cli`: every client verb is timed, each run a call the server accepts (numbers are not asserted)."""

from __future__ import annotations

import argparse

import pytest

from benchmarks import cli as bench
from cli.verbs import JOBS, VERBS


def test_bench_cli_times_every_verb_that_talks_to_a_server() -> None:
    assert set(bench.VERBS) == {name for name, verb in VERBS.items() if verb.group == JOBS}


def test_bench_cli_reports_help_and_a_successful_call_per_verb() -> None:
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    result = bench.run(parser.parse_args(["--runs", "2"]))  # a refused call would raise, not report a time
    assert set(result["call"]) == set(bench.VERBS) and set(result["help"]) == {*bench.VERBS, "(top)"}
    assert all(t > 0.0 for t in (*result["call"].values(), *result["help"].values()))
    assert "report-capacity" in bench.table(result)


def test_a_run_that_exits_non_zero_is_an_error_not_a_time() -> None:
    with pytest.raises(RuntimeError, match=r"^false exited 1: $"):
        bench.seconds(["false"], check=True)
