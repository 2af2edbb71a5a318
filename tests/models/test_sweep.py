"""Sweep backends: results come back in task order, the local pool and Ray give identical results, and a pool that
stops early (a failed task, a signal) terminates its workers."""

from __future__ import annotations

import operator
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from cli.commands.welfare import welfare_task
from models.sweep import run_tasks

TASKS = [{"workload": "toy", "load": 1.0, "seed": s, "solver": "cpsat", "time_limit": 2.0} for s in (0, 1)]
# A W.json file's task carries the parsed document, not a path (a Ray worker elsewhere has no such file).
FILE_DOC = {"platform": {"C": 4, "C_m": 2, "D_m": 3, "S_m": 8, "H": 50.0, "epsilon": 0.1, "eps0": 0.05,
                         "delta0": 0.05, "seed": 1, "samples": 300},
            "jobs": [{"id": f"j{i}", "birth": i // 2, "concurrency": 2, "value_steps": [[4, 30.0], [8, 5.0]],
                      "outcomes": [[0, 1, 0.5, None], [1, 3, 0.5, None]], "realized": [i % 2, 1 + 2 * (i % 2)]}
                     for i in range(8)]}
FILE_TASK = {"workload": "w.json", "document": FILE_DOC, "load": 1.0, "seed": 1, "solver": "cpsat",
             "time_limit": 2.0}


def test_local_pool_returns_results_in_task_order() -> None:
    pairs = [(i, i + 1) for i in range(7)]
    assert run_tasks(_mul, pairs, processes=2, progress=False) == [i * (i + 1) for i in range(7)]
    assert run_tasks(_mul, pairs, processes=1, progress=False) == [i * (i + 1) for i in range(7)]


def test_unknown_backend_and_bad_pool_size_are_refused() -> None:
    with pytest.raises(ValueError, match="backend='spark' is not one of local, ray"):
        run_tasks(_mul, [(1, 2)], backend="spark", progress=False)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="processes=-1 is below the bound 1"):
        run_tasks(_mul, [(1, 2)], processes=-1, progress=False)


@pytest.mark.slow
def test_ray_backend_gives_the_same_rows_as_the_local_pool() -> None:
    tasks = [*TASKS, FILE_TASK]
    local = run_tasks(welfare_task, tasks, backend="local", processes=2, progress=False)
    remote = run_tasks(welfare_task, tasks, backend="ray", ray_cpus=1, progress=False)
    assert remote == local
    assert [(r["workload"], r["seed"]) for r in remote] == [("toy", 0), ("toy", 1), ("w.json", 1)]


def _mul(pair: tuple[int, int]) -> int:
    return operator.mul(*pair)


class FakeRay:
    """Stands in for the ray module: init fails with the given errors first, then succeeds."""

    def __init__(self, errors: list[Exception]) -> None:
        self.errors = list(errors)
        self.inits = 0
        self.shutdowns = 0

    def init(self, **_: object) -> None:
        self.inits += 1
        if self.errors:
            raise self.errors.pop(0)

    def shutdown(self) -> None:
        self.shutdowns += 1


def test_local_ray_start_up_timeouts_are_retried() -> None:
    from models.sweep import _start_local_ray

    fake = FakeRay([Exception("The current node timed out during startup.")])
    _start_local_ray(fake, 1)
    assert (fake.inits, fake.shutdowns) == (2, 1)


def test_other_ray_start_up_errors_and_the_last_timeout_are_raised() -> None:
    from models.sweep import LOCAL_RAY_ATTEMPTS, _start_local_ray

    with pytest.raises(ValueError, match="bad num_cpus"):
        _start_local_ray(FakeRay([ValueError("bad num_cpus")]), 1)
    fake = FakeRay([RuntimeError("Timed out waiting for file")] * LOCAL_RAY_ATTEMPTS)
    with pytest.raises(RuntimeError, match="Timed out waiting for file"):
        _start_local_ray(fake, 1)
    assert fake.inits == LOCAL_RAY_ATTEMPTS


def test_a_pool_of_zero_processes_is_refused_not_taken_as_every_core() -> None:
    with pytest.raises(ValueError, match="processes=0 is below the bound 1"):
        run_tasks(_mul, [(1, 2)], processes=0, progress=False)


def _sleep_or_fail(task: tuple[str, str]) -> int:
    """('sleep', PIDFILE): write this worker's pid and sleep; ('fail', PIDFILE): once the sleeper runs, raise."""
    kind, pidfile = task
    if kind == "sleep":
        staged = Path(f"{pidfile}.{os.getpid()}")  # written whole, then renamed: a reader never sees it empty
        staged.write_text(str(os.getpid()))
        os.replace(staged, pidfile)
        time.sleep(300)
        return 0
    deadline = time.monotonic() + 60
    while not Path(pidfile).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    raise RuntimeError("this task fails")


def _alive(pid: int, grace: float = 10.0) -> bool:
    """Whether process `pid` still runs `grace` seconds from now (a zombie, dead but not yet reaped, does not)."""
    deadline = time.monotonic() + grace
    while True:
        try:
            os.kill(pid, 0)
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (ProcessLookupError, FileNotFoundError):
            return False
        if state == "Z" or time.monotonic() > deadline:
            return state != "Z"
        time.sleep(0.1)


class Stop(BaseException):
    """What cli/main.py raises on SIGTERM, in kind."""


def _raise_stop(signum: int, frame: object) -> None:
    raise Stop


def test_a_failed_task_terminates_the_workers_still_running(tmp_path: Path) -> None:
    pidfile = str(tmp_path / "sleeper.pid")
    started = time.monotonic()
    with pytest.raises(RuntimeError, match=r"^this task fails$"):
        run_tasks(_sleep_or_fail, [("sleep", pidfile), ("fail", pidfile)], processes=2, progress=False)
    assert time.monotonic() - started < 120  # it did not wait for the sleeper's 300 s
    assert not _alive(int(Path(pidfile).read_text()))  # and did not leave it sleeping


def test_a_signal_that_stops_the_parent_terminates_its_workers(tmp_path: Path) -> None:
    pidfile = tmp_path / "sleeper.pid"

    def term_once_the_sleeper_runs() -> None:
        while not pidfile.exists():
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGTERM)

    previous = signal.signal(signal.SIGTERM, _raise_stop)
    started = time.monotonic()
    try:
        threading.Thread(target=term_once_the_sleeper_runs, daemon=True).start()
        with pytest.raises(Stop):
            run_tasks(_sleep_or_fail, [("sleep", str(pidfile)), ("sleep", str(tmp_path / "other.pid"))],
                      processes=2, progress=False)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert time.monotonic() - started < 120  # it did not wait for the sleepers' 300 s
    assert not _alive(int(pidfile.read_text()))
