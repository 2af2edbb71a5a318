"""`sowsched bench hpc`: bad flag values are refused by the parser (exit 2) before the trace is read; the record
shows the trace as given or relative to the working directory."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from benchmarks import hpc as bench_hpc
from cli.main import main


@pytest.mark.parametrize(("flags", "match"), [
    (["--cp-jobs", "0"], "argument --cp-jobs: 0 is below the bound 1"),
    (["--cp-jobs", "many"], "argument --cp-jobs: 'many' is not an integer"),
    (["--per-bin", "-1"], "argument --per-bin: -1 is below the bound 1"),
    (["--time-limit", "-1"], "argument --time-limit: -1.0 must be positive and finite"),
    (["--time-limit", "0"], "argument --time-limit: 0.0 must be positive and finite"),
    (["--trace", "{tmp}/missing.swf"], "argument --trace: {tmp}/missing.swf is not a readable file"),
])
def test_bad_bench_hpc_flags_exit_2_naming_flag_value_and_bound(
        flags: list[str], match: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench_hpc, "run", lambda args: pytest.fail("the benchmark ran"))
    with pytest.raises(SystemExit) as info:
        main(["bench", "hpc", *(f.replace("{tmp}", str(tmp_path)) for f in flags)])
    assert info.value.code == 2 and match.replace("{tmp}", str(tmp_path)) in capsys.readouterr().err


def test_a_tiny_trace_runs_and_prints_one_json_object(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.swf"
    rows = [(0, 10, 3), (1, 5, 3), (2, 3, 4), (3, 20, 1), (4, 2, 2)]
    trace.write_text("; MaxNodes: 4\n" + "".join(
        f"{i + 1} {s} -1 {d} {r} -1 -1 {r} {d} -1 1 1 1 -1 1 -1 -1 -1\n" for i, (s, d, r) in enumerate(rows)))
    assert main(["bench", "hpc", "--trace", str(trace), "--cp-jobs", "5", "--per-bin", "1", "--time-limit", "0.1",
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [r["jobs"] for r in result["throughput"]] == [5, 5, 5, 5]


def test_the_record_shows_the_trace_relative_to_the_working_directory(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tmp_path / "t.swf"
    trace.write_text("; MaxNodes: 4\n" + "".join(
        f"{i + 1} {i} -1 {d} 2 -1 -1 2 {d} -1 1 1 1 -1 1 -1 -1 -1\n" for i, d in enumerate((3, 5, 2))))
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    for given, shown in ((str(trace), "../t.swf"), ("../t.swf", "../t.swf"), ("./../t.swf", "./../t.swf")):
        args = argparse.Namespace(trace=given, cp_jobs=3, per_bin=1, time_limit=0.1)
        assert bench_hpc.run(args)["trace"] == shown  # an absolute path would show this machine's directories
