"""`sowsched hpc` and `sowsched hpc-study`: bad traces, scheduler names and limits are one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.main import main

ROWS = [(0, 10, 3), (1, 5, 3), (2, 3, 4)]


def write_trace(tmp_path: Path, rows: list[str] | None = None) -> Path:
    path = tmp_path / "tiny.swf"
    lines = rows or [
        f"{i + 1} {s} -1 {d} {r} -1 -1 {r} {d + 3} -1 1 1 1 -1 1 -1 -1 -1" for i, (s, d, r) in enumerate(ROWS)
    ]
    path.write_text("\n".join(["; MaxNodes: 4", *lines]) + "\n")
    return path


@pytest.mark.parametrize("command", ["hpc", "hpc-study"])
def test_a_missing_trace_exits_2_naming_the_file(command: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    extra = ["--scheduler", "easy"] if command == "hpc" else []
    assert main([command, "--trace", str(tmp_path / "missing.swf"), *extra, "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"sowsched {command}: [Errno 2] No such file or directory")


def test_a_malformed_trace_exits_2_naming_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = write_trace(tmp_path, ["1 2 3"])
    assert main(["hpc", "--trace", str(trace), "--scheduler", "easy"]) == 2
    assert capsys.readouterr().err == "sowsched hpc: line 2: expected 18 fields, found 3\n"


@pytest.mark.parametrize(("command", "flags"), [
    ("hpc", ["--scheduler", "bogus"]),
    ("hpc", ["--scheduler", "cp-offline-bogus"]),
    ("hpc", ["--scheduler", ""]),  # was a traceback after the run started
    ("hpc-study", ["--schedulers", "easy,bogus"]),
])
def test_an_unknown_scheduler_exits_2_before_the_trace_is_read(command: str, flags: list[str], tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, "--trace", str(tmp_path / "never-read.swf"), *flags]) == 2
    assert "is not a known scheduler name" in capsys.readouterr().err


@pytest.mark.parametrize(("command", "flags", "match"), [
    ("hpc", ["--scheduler", "cp-af", "--time-limit", "-1"], "argument --time-limit: -1.0 must be positive and finite"),
    ("hpc", ["--scheduler", "cp-af", "--time-limit", "0"], "argument --time-limit: 0.0 must be positive and finite"),
    ("hpc-study", ["--offline-time-limit", "0"], "argument --offline-time-limit: 0.0 must be positive and finite"),
    ("hpc-study", ["--cp-jobs", "-1"], "argument --cp-jobs: -1 is below the bound 0"),
    ("hpc", ["--scheduler", "easy-learned", "--guard", "-1"], "argument --guard: -1.0 must be"),
    ("hpc", ["--scheduler", "easy-learned", "--calibrate", "-1"], "argument --calibrate: -1 is below the bound 0"),
    ("hpc", ["--scheduler", "easy-learned", "--portfolio", "-1"], "argument --portfolio: -1 is below the bound 0"),
    ("hpc", ["--scheduler", "easy-learned", "--portfolio-risks", "0.8,2"],
     "argument --portfolio-risks: 2.0 must lie in [0, 1]"),
])
def test_bad_limits_and_counts_are_refused_by_the_parser(command: str, flags: list[str], match: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main([command, "--trace", str(write_trace(tmp_path)), *flags])
    assert info.value.code == 2 and match in capsys.readouterr().err


def test_the_portfolio_reports_its_choices_and_refuses_a_guard(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    trace = str(write_trace(tmp_path))
    assert main(["hpc", "--trace", trace, "--scheduler", "easy-learned", "--portfolio", "24", "--json"]) == 0
    details = json.loads(capsys.readouterr().out)["details"]
    assert details["portfolio"]["chosen"] == {"easy-pp": 0, "easy-learned": 0}  # three jobs in one period
    assert details["portfolio"]["submitted"] == {"easy-pp": 3, "easy-learned": 0}
    assert details["portfolio"]["ties"] == details["portfolio"]["empty"] == 0
    assert main(["hpc", "--trace", trace, "--scheduler", "easy-learned", "--portfolio", "24", "--guard", "1"]) == 2
    assert "portfolio=24 replays the plain risk test: guard=1.0" in capsys.readouterr().err


def test_a_good_trace_still_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hpc", "--trace", str(write_trace(tmp_path)), "--scheduler", "easy", "--json"]) == 0
    assert '"jobs": 3' in capsys.readouterr().out


@pytest.mark.parametrize("schedulers", ["easy,", ",", "easy,,laf-conservative"])
def test_an_empty_name_in_schedulers_exits_2_naming_the_flag(schedulers: str, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hpc-study", "--trace", str(write_trace(tmp_path)), "--schedulers", schedulers, "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"sowsched hpc-study: --schedulers={schedulers!r} names an empty scheduler\n"


@pytest.mark.parametrize(("command", "extra"), [("hpc", ["--scheduler", "easy"]), ("hpc-study", [])])
def test_a_trace_with_no_job_left_after_cleaning_exits_2(command: str, extra: list[str], tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    # every job of the tiny trace needs 3 or 4 nodes: with --nodes 2 all are dropped as above the machine
    assert main([command, "--trace", str(write_trace(tmp_path)), "--nodes", "2", *extra, "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"sowsched {command}: no job left after cleaning (3 records, nodes=2, dropped_size_above_machine=3)\n"


def test_offline_cp_with_requested_estimates_exits_2_instead_of_mislabelling_an_exact_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # off-line CP knows every runtime (seed 001, Sec. 4); a run labelled "requested" would be the exact one
    argv = ["hpc", "--trace", str(write_trace(tmp_path)), "--scheduler", "cp-offline-af", "--estimates", "requested"]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == ("sowsched hpc: --estimates=requested: scheduler='cp-offline-af' uses the true runtimes "
                   "(off-line CP takes --estimates exact only)\n")


@pytest.mark.parametrize(("flags", "message"), [
    (["--schedulers", "easy,cp-af"], "--schedulers names cp-af but --cp-jobs=0 skips the on-line CP schedulers"),
    (["--schedulers", "cp-offline-awf", "--cp-jobs", "3"],
     "--schedulers names cp-offline-awf but --offline-jobs=0 skips the off-line CP schedulers"),
    (["--schedulers", "cp-offline-awf", "--offline-jobs", "3", "--estimates", "requested"],
     "--schedulers names cp-offline-awf, an off-line CP scheduler, which runs with --estimates exact only"),
])
def test_a_named_scheduler_that_the_study_would_skip_exits_2(flags: list[str], message: str, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    # before, the study skipped it silently: an empty table (or a table without it) and exit 0
    assert main(["hpc-study", "--trace", str(write_trace(tmp_path)), *flags, "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"sowsched hpc-study: {message}\n"


def test_the_several_risk_portfolio_names_its_candidates_and_needs_a_period(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = str(write_trace(tmp_path))
    flags = ["hpc", "--trace", trace, "--scheduler", "easy-learned", "--portfolio-risks", "0.8,0.95"]
    assert main([*flags, "--portfolio", "24", "--json"]) == 0
    details = json.loads(capsys.readouterr().out)["details"]
    assert details["portfolio"]["submitted"] == {"easy-pp": 3, "risk=0.8": 0, "risk=0.95": 0}
    assert details["portfolio_risks"] == [0.8, 0.95]
    assert main(flags) == 2
    assert "portfolio_risks=(0.8, 0.95) needs portfolio >= 1 (got 0)" in capsys.readouterr().err
    assert main([*flags[:-1], "0.95,0.8", "--portfolio", "24"]) == 2
    assert "portfolio_risks=(0.95, 0.8) must be strictly increasing" in capsys.readouterr().err
