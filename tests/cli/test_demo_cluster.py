"""`make demo-cluster`'s driver with local process groups: every job ends, each completed one with the work that ran
it, and the invoices and placements are printed."""

from __future__ import annotations

import pytest

from cli import demo_cluster

pytestmark = pytest.mark.slow  # a wall-clock server: about 30 s


def test_demo_cluster_ends_every_job_and_prints_where_each_ran(capsys: pytest.CaptureFixture[str]) -> None:
    assert demo_cluster.main(["--executor", "local", "--pipelines", "1", "--round-seconds", "2"]) == 0
    out = capsys.readouterr().out
    assert "acme" in out and "globex" in out and "ran on (exit code)" in out
    rows = [line.split() for line in out.splitlines() if line.startswith(("acme ", "globex ")) and "-" in line[:20]]
    assert len(rows) == 6
    assert all(r[2] == "COMPLETED" and "local" in r and r[-1] == "(0)" for r in rows)  # no child arrives late


def test_a_childs_declared_arrivals_cover_every_round_its_parent_can_finish_in() -> None:
    """The parent's quote starts it in round 4 or 6 (by arrival group); with durations of 2 or 3 rounds it finishes
    in rounds 5 to 9 (a completion may come after 1 round); the child, born in round 2 or 3, declares offsets 2 to 7."""
    from mechanism.plans import GroupPlan, LaunchPlan
    from mechanism.views import Quote

    plan = LaunchPlan(birth=1, groups=(GroupPlan(1, None, 4, 1.0), GroupPlan(2, None, 6, 1.0),
                                       GroupPlan(3, None, None, 0.0)), outcomes=(), utility=1.0)
    assert demo_cluster.child_arrivals(Quote("p", plan), now=2) == [2, 3, 4, 5, 6, 7]
