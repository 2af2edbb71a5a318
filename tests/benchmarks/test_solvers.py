"""`sowsched bench solvers --json`: per instance the keys the issue names, and both solvers agree when optimal."""

from __future__ import annotations

import json

import pytest

from benchmarks.solvers import instance_for, offered_load
from cli.main import main


def test_json_has_per_instance_times_statuses_and_values(capsys: pytest.CaptureFixture[str]) -> None:
    main(["bench", "solvers", "--sizes", "5,12", "--time-limit", "5", "--workers", "1", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert [r["jobs"] for r in result["instances"]] == [5, 12]
    for r in result["instances"]:
        assert {"cpsat_s", "cpsat_status", "milp_s", "milp_status", "cpsat_value", "milp_value", "lp_bound",
                "milp_over_cpsat"} <= set(r)
        if r["cpsat_status"] == r["milp_status"] == "optimal":
            assert r["cpsat_value"] == pytest.approx(r["milp_value"])
        assert r["lp_bound"] >= max(r["cpsat_value"], r["milp_value"]) - 1e-6
    assert "needs --time-limit 60" in result["note"]


def test_benchmark_instances_are_seeded_by_seed_and_size() -> None:
    assert instance_for(20, 0, 64, 200) == instance_for(20, 0, 64, 200)
    assert instance_for(20, 0, 64, 200) != instance_for(20, 1, 64, 200)
    assert 0 < offered_load(instance_for(20, 0, 64, 200)) < 1


def test_left_shift_and_plain_share_reach_cpsat_and_the_json(capsys: pytest.CaptureFixture[str]) -> None:
    main(["bench", "solvers", "--sizes", "8", "--time-limit", "5", "--workers", "1", "--plain-share", "0.5",
          "--left-shift", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert (result["plain_share"], result["left_shift"], result["cpsat_workers"]) == (0.5, True, 1)
    assert result["bound_model"] == "indexed"
    row = result["instances"][0]
    assert row["cpsat_status"] == row["milp_status"] == "optimal"
    assert row["cpsat_value"] == pytest.approx(row["milp_value"])


def test_rc_fixing_reaches_cpsat_and_every_row_reports_what_fixing_could_remove(
        capsys: pytest.CaptureFixture[str]) -> None:
    main(["bench", "solvers", "--sizes", "10", "--time-limit", "5", "--workers", "1", "--rc-fixing", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert result["rc_fixing"] is True
    row = result["instances"][0]
    assert row["cpsat_status"] == row["milp_status"] == "optimal"
    assert row["cpsat_value"] == pytest.approx(row["milp_value"])
    assert 0 <= row["rc_fixable"] <= row["rc_columns"] and row["rc_max"] >= 0
    assert row["rc_room"] == pytest.approx(row["lp_bound"] - row["cpsat_value"], abs=0.01)
    assert row["lp_whole_jobs"] + row["lp_spread_jobs"] <= row["jobs"]


def test_lns_share_reaches_cpsat_and_the_json(capsys: pytest.CaptureFixture[str]) -> None:
    main(["bench", "solvers", "--sizes", "10", "--time-limit", "5", "--workers", "1", "--plain-share", "0.3",
          "--lns-share", "0.4", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert result["lns_share"] == 0.4
    row = result["instances"][0]
    assert row["cpsat_status"] == row["milp_status"] == "optimal"
    assert row["cpsat_value"] == pytest.approx(row["milp_value"])


def test_shares_that_leave_no_time_for_the_bound_model_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["bench", "solvers", "--sizes", "5", "--lns-share", "0.5"])
    assert exit_info.value.code == 2
    assert "--plain-share 0.7 + --lns-share 0.5 = 1.2 leaves no time for the bound model" in capsys.readouterr().err


@pytest.mark.parametrize(("flag", "value", "message"), [
    ("--plain-share", "0", "0.0 is not a share of the limit: it must lie in (0, 1)"),
    ("--lns-share", "1", "1.0 is not a share of the limit: it must lie in [0, 1)"),
    ("--lns-share", "x", "'x' is not a number"),
])
def test_shares_are_checked_when_parsed(capsys: pytest.CaptureFixture[str], flag: str, value: str,
                                        message: str) -> None:
    with pytest.raises(SystemExit):
        main(["bench", "solvers", "--sizes", "5", flag, value])
    assert message in capsys.readouterr().err
