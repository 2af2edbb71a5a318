"""HiGHS instances made by models.highs say nothing on stdout or stderr, and still solve."""

from __future__ import annotations

import subprocess
import sys


def test_a_quiet_highs_prints_nothing_and_solves_a_tiny_lp() -> None:
    code = ("from models.highs import quiet_highs; import highspy, numpy as np\n"
            "h = quiet_highs(); h.addVar(0.0, 2.0); h.changeColCost(0, -1.0); h.run()\n"
            "assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal\n"
            "assert abs(h.getInfo().objective_function_value + 2.0) < 1e-9\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "")
