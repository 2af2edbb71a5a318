"""Shared set-up for the executor tests: the real Slurm test bed (scripts/slurm-up), required where CI says so."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable

import pytest

REQUIRE_ENV = "SOWSCHED_REQUIRE_SLURM"  # .ci/run sets it to 1 when it runs as root: a Slurm test may not skip


def slurm_ready() -> bool:
    """sinfo answers and the test bed's node takes jobs (idle, busy, or finishing one)."""
    if shutil.which("sinfo") is None:
        return False
    try:
        out = subprocess.run(["sinfo", "-h", "-n", "localhost", "-o", "%T"], capture_output=True, text=True,
                             timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    state = out.stdout.strip()
    return out.returncode == 0 and state.startswith(("idle", "mixed", "allocated", "completing"))


def need_slurm() -> None:
    """Skip without Slurm, unless the run requires it (CI as root): then fail."""
    if slurm_ready():
        return
    message = "no Slurm test bed (run scripts/slurm-up as root)"
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{message}; {REQUIRE_ENV}=1 requires it")
    pytest.skip(message)


def wait_until(condition: Callable[[], object], seconds: float = 60.0, what: str = "condition") -> None:
    """Poll `condition` until it holds (a bound on a hang, not a timing assertion)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not hold within {seconds:g} s")
        time.sleep(0.05)
