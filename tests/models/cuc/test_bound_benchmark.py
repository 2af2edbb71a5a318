"""The denominator benchmark on a small series: ratios ordered as the bounds require."""

import argparse
from pathlib import Path

from benchmarks import cuc_bound
from tests.models.cuc.test_cli import tiny_file


def test_ratios_respect_the_bounds(tmp_path: Path) -> None:
    args = argparse.Namespace(capacity=str(tiny_file(tmp_path)), vm_type="t1", every=12, time_limit=2.0,
                              demand_multiple=None,
                              max_share=0.05)  # few, large jobs: the MILP stays small
    out = cuc_bound.run(args)
    assert len(out["rows"]) == 3
    for r in out["rows"]:
        # rounded LP <= MILP incumbent (the rounded schedule is its MIP start) <= dual bound <= LP bound
        assert r["rounded_over_lp"] <= r["milp_over_lp"] + 1e-9
        assert r["greedy_ratio_over_lp"] <= r["dual_over_lp"] + 1e-9
        assert r["greedy_value_over_lp"] <= r["dual_over_lp"] + 1e-9
        assert r["milp_over_lp"] <= r["dual_over_lp"] + 1e-9 <= 1 + 2e-9
    assert "MILP incumbent" in cuc_bound.table(out)  # bad options: tests/benchmarks/test_arguments.py
