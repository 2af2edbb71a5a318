"""Shared set-up for the executor tests: the real Slurm test bed (scripts/slurm-up), required where CI says so."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from clients.agent_state import LaunchRow
from clients.executors import SLURM_GONE

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


def array_of(row: LaunchRow | None) -> tuple[str, int] | None:
    """(array key, index) of a launch made as an element of an array, or None."""
    if row is None or row.batch is None or row.idx is None:
        return None
    return row.batch, row.idx


def slurm_jobs(handle: str, array: tuple[str, int] | None = None) -> dict[str, str]:
    """Slurm job id -> state of every job Slurm still lists (finished ones for MinJobAge seconds) launched under
    `handle`, or, for a launch made as element i of the array under key k (`array` = (k, i)), every element i of an
    array commented with k (one per sbatch that made it): read from squeue, not from the agent."""
    out = subprocess.run(["squeue", "-h", "--array", "--states=all", "-O",
                          "JobID:|,State:|,Comment:|,ArrayJobID:|,ArrayTaskID:|"], capture_output=True, text=True,
                         timeout=30, check=True).stdout
    key, index = array if array is not None else (handle, None)
    jobs: dict[str, str] = {}
    for line in out.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) < 5 or parts[2] != f"sowsched:{key}":
            continue
        if index is None:
            jobs[parts[0]] = parts[1]
        elif parts[4] == str(index):
            jobs[f"{parts[3]}_{parts[4]}"] = parts[1]
    return jobs


def live_work(kind: str, handle: str, array: tuple[str, int] | None = None) -> list[str]:
    """What still runs under a launch handle, seen from outside the agent: processes (not zombies) whose environment
    holds SOWSCHED_LAUNCH=handle (a payload's, locally or on the Slurm node), and on Slurm its unfinished jobs (with
    `array`, its array elements: see slurm_jobs)."""
    needle = f"SOWSCHED_LAUNCH={handle}".encode()
    live = []
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and needle in (d / "environ").read_bytes().split(b"\0"):
                live.append(f"pid {d.name}")
        except OSError:
            continue
    if kind == "slurm":
        live += [f"slurm {j} {s}" for j, s in slurm_jobs(handle, array).items() if s not in SLURM_GONE]
    return live
