"""The job-size benchmark on a small series: more, smaller jobs as max_share falls; ratios bounded by the LP."""

import argparse
from pathlib import Path

from benchmarks import cuc_jobs
from tests.models.cuc.test_cli import tiny_file


def test_smaller_shares_give_more_jobs_under_the_same_bound(tmp_path: Path) -> None:
    args = argparse.Namespace(capacity=[str(tiny_file(tmp_path))], vm_types=None, shares=[0.05, 0.02], hours=None,
                              train_hours=144, per_job_samples=2, demand_multiples=[1.5], scale=1.0)
    out = cuc_jobs.run(args)
    big, small = out["rows"]
    assert (big["max_share"], small["max_share"]) == (0.05, 0.02)
    assert small["jobs"] > 2 * big["jobs"] and small["cols"] > 2 * big["cols"]
    for r in out["rows"]:
        assert r["samples"] == 25
        assert 0 < r["ratio"] <= 1 + 1e-9 and 0 < r["value"] <= 1 + 1e-9  # Alg. 3 never beats the LP bound
        assert 0 < r["certified_gap_max"] < 1 and r["lp_job_s"] is not None
    assert small["certified_gap_max"] < big["certified_gap_max"]  # smaller jobs: a tighter certified gap
    assert "certified gap" in cuc_jobs.table(out)  # bad options: tests/benchmarks/test_arguments.py


def test_more_demand_fills_the_capacity_and_the_optimum_lies_between_the_rounded_lp_and_the_lp(tmp_path: Path) -> None:
    args = argparse.Namespace(capacity=[str(tiny_file(tmp_path))], vm_types=None, shares=[0.01], hours=None,
                              train_hours=144, per_job_samples=1, demand_multiples=[1.5, 5.0], scale=0.5)
    low, high = cuc_jobs.run(args)["rows"]
    assert (low["demand_multiple"], high["demand_multiple"]) == (1.5, 5.0)
    for r in (low, high):
        assert 0 < r["rounded_fill_min"] <= r["rounded_fill"] <= r["lp_fill"] <= 1 + 1e-9
    assert high["rounded_fill"] > low["rounded_fill"] and high["rounded_fill"] >= 0.995
