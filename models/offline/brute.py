"""Exhaustive search over every start (or "not run") of every job, for tiny hindsight instances only."""

from __future__ import annotations

import math

import numpy as np

from models.offline.hindsight import HindsightInstance, HindsightJob, OfflineResult

SOLVER_NAME = "brute"
MAX_COMBINATIONS = 2_000_000


def combinations(instance: HindsightInstance) -> int:
    """The number of complete assignments: prod_j (1 + number of valuable starts of j)."""
    return math.prod(1 + len(job.starts()) for job in instance.jobs)


def solve_brute(instance: HindsightInstance, max_combinations: int = MAX_COMBINATIONS) -> OfflineResult:
    """Try every assignment (depth first, skipping any that overloads a round); refuse above `max_combinations`."""
    total = combinations(instance)
    if total > max_combinations:
        raise ValueError(f"instance has {total} start combinations ({len(instance.jobs)} jobs), above the bound "
                         f"max_combinations={max_combinations}; use the CP-SAT or MILP solver")
    jobs = list(instance.jobs)
    load = np.zeros(max(instance.horizon, 1), dtype=np.int64)
    _, best_starts = _search(jobs, 0, load, instance.capacity_row(load.size), [None] * len(jobs))
    starts = {job.id: s for job, s in zip(jobs, best_starts, strict=True)}
    value = instance.schedule_value(starts)
    return OfflineResult(value=value, bound=value, gap=0.0, status="optimal", solve_seconds=None,
                         starts=starts, solver=SOLVER_NAME)


def _search(jobs: list[HindsightJob], i: int, load: np.ndarray, capacity: np.ndarray,
            chosen: list[int | None]) -> tuple[float, list[int | None]]:
    """The best completion of `chosen[:i]`: each remaining job either does not run or takes a start that fits."""
    if i == len(jobs):
        return math.fsum(job.value(s) for job, s in zip(jobs, chosen, strict=True)), list(chosen)
    job = jobs[i]
    chosen[i] = None
    best = _search(jobs, i + 1, load, capacity, chosen)
    for s in job.starts():
        window = slice(s, s + job.duration)
        if np.any(load[window] + job.concurrency > capacity[window]):
            continue
        load[window] += job.concurrency
        chosen[i] = s
        candidate = _search(jobs, i + 1, load, capacity, chosen)
        load[window] -= job.concurrency
        if candidate[0] > best[0]:
            best = candidate
    chosen[i] = None
    return best
