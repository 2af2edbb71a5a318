"""`sowsched bench writer` end to end on a tiny setting: every stage is reported and the wrapped functions are
restored afterwards (numbers are not asserted)."""

from __future__ import annotations

import argparse

import mechanism.engine
import server.store
from benchmarks import writer as bench


def test_bench_writer_reports_every_stage_of_one_submission_and_restores_the_timed_functions() -> None:
    submit, append = mechanism.engine.Engine.submit, server.store.CommandStore.append
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    result = bench.run(parser.parse_args(["--active", "5", "--submits", "4", "--samples", "200"]))
    stages = result["stages"]
    assert {label for label, *_ in bench.STAGES} <= set(stages)
    for label in ("engine.submit", "oracle: estimates", "launch plan (choose_plan)", "encode the quote",
                  "log insert (store.append)", "servicer: parse + validate the SoW", "writer_ms (as logged)"):
        assert stages[label]["calls_per_submission"] == 1.0 and stages[label]["p50_ms"] > 0.0, label
    assert mechanism.engine.Engine.submit is submit and server.store.CommandStore.append is append
    assert "oracle: estimates" in bench.table(result)
