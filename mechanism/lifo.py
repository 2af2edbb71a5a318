"""The LIFO rule played literally, round by round (docs/model.md section 6, step 3): the independent reference."""

from __future__ import annotations

from collections.abc import Sequence


def capacity_of(capacity: int | Sequence[int], tau: int) -> int:
    """The capacity of round tau: a fixed C, or the tau-th entry of a per-round capacity path."""
    return int(capacity[tau]) if hasattr(capacity, "__getitem__") else int(capacity)


def lifo_loads(jobs: Sequence[tuple[int, int, int]], horizon: int, capacity: int | Sequence[int],
               cancels_waiting: bool = True) -> tuple[list[int], list[int | None]]:
    """Play rounds 0..horizon-1 for jobs given oldest first as (start, length, concurrency), start -1 = never.

    Returns the load the still-active jobs demand in each round before its evictions, and the round each job
    was evicted or cancelled in (None if never). While the load exceeds the round's capacity (a fixed C, or
    capacity[tau] of a capacity path) the newest active job goes, whether or not it contributes to the round
    (Remark 2); with `cancels_waiting` false, the newest active job that demands the round goes (the
    `newest_demanding` rule).
    """
    active = [True] * len(jobs)
    removed_at: list[int | None] = [None] * len(jobs)
    loads: list[int] = []
    for tau in range(horizon):
        for k, (s, n, _) in enumerate(jobs):  # a job past its last round has completed: no longer active
            if active[k] and s >= 0 and tau >= s + n:
                active[k] = False
        load = sum(c for k, (s, n, c) in enumerate(jobs) if active[k] and s >= 0 and s <= tau < s + n)
        loads.append(load)
        k = len(jobs) - 1
        while load > capacity_of(capacity, tau):
            while not active[k] or not (cancels_waiting or _demands(jobs[k], tau)):
                k -= 1
            active[k] = False
            removed_at[k] = tau
            if _demands(jobs[k], tau):
                load -= jobs[k][2]
    return loads, removed_at


def _demands(job: tuple[int, int, int], tau: int) -> bool:
    s, n, _ = job
    return s >= 0 and s <= tau < s + n


def fails_given_loads(loads: Sequence[int], start: int, duration: int, concurrency: int,
                      capacity: int | Sequence[int], cancels_waiting: bool = True) -> bool:
    """A newer job fails iff the earlier jobs overflow while it waits (only under Remark 2's rule), or it does not
    fit while it runs."""
    if cancels_waiting and any(load > capacity_of(capacity, tau) for tau, load in enumerate(loads[:start])):
        return True
    return any(loads[tau] + concurrency > capacity_of(capacity, tau)
               for tau in range(start, min(start + duration, len(loads))))
