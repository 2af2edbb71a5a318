"""`sowsched bench predict`: the record shows each trace as given or relative to the working directory, never this
machine's absolute directories."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from benchmarks import predict as bench_predict
from tests.cli.commands.test_predict import write_trace


def test_the_record_shows_every_trace_relative_to_the_working_directory(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    trace = write_trace(tmp_path)  # absolute, as the defaults (models/data.py) are
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    monkeypatch.setattr(bench_predict, "SIX_TRACES", (trace, trace))  # --six's traces
    args = argparse.Namespace(trace=str(trace), jobs=None, six=True, no_reference=True)
    record = bench_predict.run(args)
    assert record["trace"] == "../tiny.swf"
    assert [row["trace"] for row in record["schedulers"]] == ["../tiny.swf", "../tiny.swf"]
    args.trace, args.six = "../tiny.swf", False
    assert bench_predict.run(args)["trace"] == "../tiny.swf"
