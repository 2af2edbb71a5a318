"""Run independent tasks on a local process pool or as Ray tasks, in task order, with a progress bar on stderr."""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, Literal

from tqdm import tqdm

Backend = Literal["local", "ray"]
BACKENDS: tuple[Backend, ...] = ("local", "ray")


def run_tasks(fn: Callable[[Any], Any], tasks: Sequence[Any], backend: Backend = "local",
              processes: int | None = None, address: str | None = None, ray_cpus: int | None = None,
              progress: bool = True, desc: str = "tasks") -> list[Any]:
    """`[fn(t) for t in tasks]`, computed on `backend`; results come back in task order whatever finishes first.

    local: a process pool of `processes` workers (default: every core; 1 runs in this process).
    ray: one Ray task per item on the cluster at `address`, or on a new local Ray with `ray_cpus` CPUs.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r} is not one of {', '.join(BACKENDS)}")
    bar = tqdm(total=len(tasks), desc=desc, file=sys.stderr, disable=not progress or not tasks)
    try:
        if backend == "ray":
            return _run_ray(fn, tasks, address, ray_cpus, bar)
        return _run_local(fn, tasks, (os.cpu_count() or 1) if processes is None else processes, bar)
    finally:
        bar.close()


def _run_local(fn: Callable[[Any], Any], tasks: Sequence[Any], processes: int, bar: tqdm) -> list[Any]:
    if processes < 1:
        raise ValueError(f"processes={processes} is below the bound 1")
    results: list[Any] = [None] * len(tasks)
    if processes == 1 or len(tasks) <= 1:
        for i, task in enumerate(tasks):
            results[i] = fn(task)
            bar.update(1)
        return results
    # spawn, not fork: the parent may already run OpenMP or solver threads, which a fork cannot copy safely.
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=min(processes, len(tasks)), mp_context=context)
    try:
        futures = {pool.submit(fn, task): i for i, task in enumerate(tasks)}
        for fut in as_completed(futures):
            results[futures[fut]] = fut.result()
            bar.update(1)
    except BaseException:  # a failed task, Ctrl-C or SIGTERM (cli/main.py): stop the workers, not only the queue
        _terminate_workers(pool)
        raise
    pool.shutdown()
    return results


def _terminate_workers(pool: ProcessPoolExecutor) -> None:
    """Stop `pool` at once: cancel what has not started and terminate the workers, whose running tasks would
    otherwise go on after their parent is gone (Python 3.14's `terminate_workers`)."""
    workers = list((pool._processes or {}).values())  # 3.11 has no public handle on them
    pool.shutdown(wait=False, cancel_futures=True)
    for worker in workers:
        worker.terminate()
    for worker in workers:
        worker.join(timeout=5)


def _run_ray(fn: Callable[[Any], Any], tasks: Sequence[Any], address: str | None, ray_cpus: int | None,
             bar: tqdm) -> list[Any]:
    import ray  # optional dependency (the `ray` extra): imported only for this backend

    started_here = not ray.is_initialized()
    if started_here:
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            _start_local_ray(ray, ray_cpus)
    try:
        remote = ray.remote(fn)
        refs = [remote.remote(task) for task in tasks]
        index = {ref: i for i, ref in enumerate(refs)}
        results: list[Any] = [None] * len(tasks)
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                results[index[ref]] = ray.get(ref)
                bar.update(1)
        return results
    finally:
        if started_here:
            ray.shutdown()


LOCAL_RAY_ATTEMPTS = 3


def _start_local_ray(ray: Any, ray_cpus: int | None) -> None:
    """Start a local Ray instance, retrying when its start-up times out on a busy machine.

    Ray waits 30 s for its GCS server (RAY_gcs_server_port_wait_time_s, Ray's own override; an operator's value
    is kept) and a fixed 30 s for its raylet; on a loaded 2-core machine either can pass. A failed start is
    shut down cleanly and tried again.
    """
    os.environ.setdefault("RAY_gcs_server_port_wait_time_s", "120")
    for attempt in range(1, LOCAL_RAY_ATTEMPTS + 1):
        try:
            ray.init(num_cpus=ray_cpus, include_dashboard=False, log_to_driver=False)
            return
        except Exception as exc:
            ray.shutdown()
            if attempt == LOCAL_RAY_ATTEMPTS or "timed out" not in str(exc).lower():
                raise
            print(f"sowsched: local Ray start-up timed out (attempt {attempt} of {LOCAL_RAY_ATTEMPTS}): {exc}; "
                  "retrying", file=sys.stderr)
