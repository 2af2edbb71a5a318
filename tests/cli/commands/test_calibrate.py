"""`sowsched calibrate`: one JSON object with the calibration, and bad counts refused before any run."""

from __future__ import annotations

import json

import pytest

from cli.main import main
from tests.cli.commands.test_jobs import undocumented_arguments


def test_json_is_one_object_with_the_runs_and_bins(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", "--workload", "toy", "--seeds", "2", "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    result = json.loads(out)
    assert result["runs"] == 2 and result["jobs"] > 0 and result["bins"]


@pytest.mark.parametrize(("flags", "match"), [
    (["--seeds", "0"], "argument --seeds: 0 is below the bound 1"),
    (["--seeds", "-1"], "argument --seeds: -1 is below the bound 1"),
    (["--rounds", "0"], "argument --rounds: 0 is below the bound 1"),
    (["--first-seed", "-1"], "argument --first-seed: -1 is below the bound 0"),
    (["--load", "-1"], "argument --load: -1.0 must be positive and finite"),
    (["--load", "inf"], "argument --load: inf must be positive and finite"),
])
def test_bad_counts_and_loads_exit_2_naming_the_bound(flags: list[str], match: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["calibrate", *flags, "--json"])
    assert info.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and match in err


def test_one_run_has_a_null_standard_error_not_nan(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", "--workload", "toy", "--seeds", "1", "--json"]) == 0
    out = capsys.readouterr().out
    assert "NaN" not in out and json.loads(out)["gap_se"] is None


def test_runs_without_a_scheduled_job_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", "--workload", "overload", "--seeds", "1", "--load", "0.01", "--json"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "the 1 runs scheduled no job: nothing to calibrate" in err


def test_every_argument_has_a_help_text() -> None:
    assert undocumented_arguments("calibrate") == []


def test_the_last_bin_is_closed_because_it_holds_an_estimate_of_1() -> None:
    from cli.commands.calibrate import table
    from mechanism.platform import Platform
    from models.calibration import calibrate
    from models.simulation import JobRecord, SimulationResult

    jobs = [JobRecord(id=str(f), birth=0, concurrency=1, state="evicted", start=0, duration=1, value=0.0, charge=0.0,
                      failure=f, failure_raw=f) for f in (0.0, 1.0)]
    rows = table(calibrate([SimulationResult("x", Platform(C=4, C_m=1, D_m=1, S_m=2, H=2.0), jobs=jobs)],
                           bins=(0.0, 0.5, 1.0))).splitlines()[2:]
    assert [r.split()[:2] for r in rows] == [["[0.00,", "0.50)"], ["[0.50,", "1.00]"]]


def test_the_raw_estimate_is_binned_and_the_help_and_table_say_so(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/model.md section 5: the announced estimate zeroes small raw ones, so calibration bins the raw estimate."""
    from cli.commands.calibrate import table
    from mechanism.platform import Platform
    from models.calibration import calibrate
    from models.simulation import JobRecord, SimulationResult

    job = JobRecord(id="a", birth=0, concurrency=1, state="cancelled", start=0, duration=1, value=0.0, charge=0.0,
                    failure=0.0, failure_raw=0.04)  # announced 0: below epsilon/10 + eps0
    c = calibrate([SimulationResult("x", Platform(C=4, C_m=1, D_m=1, S_m=2, H=2.0), jobs=[job])])
    assert (c.estimate, c.bins[0].estimate, c.bins[0].realized) == (0.04, 0.04, 1.0)
    assert "mean raw estimate 0.040" in table(c) and "raw estimate bin" in table(c)
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "raw failure estimates" in capsys.readouterr().out.split("calibrate", 1)[1]


def test_seeds_beyond_the_platform_bound_exit_2_naming_both_flags(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", "--workload", "toy", "--first-seed", str(2**63 - 1), "--seeds", "2", "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == (f"sowsched calibrate: --first-seed {2**63 - 1} with --seeds 2 reaches seed {2**63}, "
                                 f"beyond the bound {2**63 - 1}\n")


def test_a_workload_too_large_for_the_exact_oracle_is_one_line_and_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    # six toy jobs a round: the earlier jobs soon have more than 20,000 joint outcomes
    assert main(["calibrate", "--workload", "toy", "--load", "6", "--seeds", "1", "--oracle", "exact", "--json"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("sowsched calibrate: exact oracle needs ") and "above the bound max_combinations=" in err


def test_one_run_in_the_table_says_the_standard_error_is_undefined_not_nan(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", "--workload", "toy", "--seeds", "1"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert head.endswith("(standard error undefined for one run)") and "nan" not in head
