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
    assert not any(r[2] in demo_cluster.ACTIVE for r in rows)
    assert all("local" in r and r[-1] == "(0)" for r in rows if r[2] == "COMPLETED")
