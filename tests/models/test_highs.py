"""HiGHS instances made by models.highs say nothing on stdout or stderr, and still solve."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_a_quiet_highs_prints_nothing_and_solves_a_tiny_lp() -> None:
    code = ("from models.highs import quiet_highs; import highspy, numpy as np\n"
            "h = quiet_highs(); h.addVar(0.0, 2.0); h.changeColCost(0, -1.0); h.run()\n"
            "assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal\n"
            "assert abs(h.getInfo().objective_function_value + 2.0) < 1e-9\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "")


def test_instances_of_different_thread_counts_run_one_after_the_other_in_one_process() -> None:
    # HiGHS sizes one scheduler per process at its first run and fails a later run asking another count, unless
    # quiet_highs resets it: 1, 2, 1 threads, each must solve (a fresh process, so no earlier run sized it)
    code = ("from models.highs import quiet_highs; import highspy\n"
            "for threads in (1, 2, 2, 1):\n"
            "    h = quiet_highs(threads); h.addVar(0.0, 2.0); h.changeColCost(0, -1.0)\n"
            "    assert h.run() == highspy.HighsStatus.kOk, threads\n"
            "    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal, threads\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert (out.returncode, out.stderr) == (0, "")


def test_a_thread_count_below_one_is_refused() -> None:
    from models.highs import quiet_highs

    with pytest.raises(ValueError, match=r"threads=0 is below the bound 1"):
        quiet_highs(0)
