"""Online baselines without prices: first-come-first-served, and deterministic worst-case reservation.

Both are judged on the realized outcomes, like the mechanism. Decisions where the issue is silent:

- FCFS keeps one queue in arrival order (ties: birth, then workload order). Each round the head starts if its
  concurrency fits the free nodes, otherwise everybody waits (no backfilling). A job leaves the queue unstarted
  once starting can no longer earn value (its owner would withdraw it); a started job runs its realized duration.
- Reservation: at birth (in birth order), job j reserves c_j nodes for L_j = (a_max - a_min) + d_max rounds, the
  span that holds its worst-case arrival and longest duration under its declared SoW. The window is the earliest
  [w, w + L_j) with w >= b_j + a_min that fits under C next to the earlier reservations and whose worst-case
  completion w + L_j still earns value; if none exists the job is rejected. An admitted job arriving at a starts
  at a + (w - b_j - a_min), so it always finishes inside its window. The reservation is never released early.
  A realized outcome outside the declared SoW (arrival not declared, or longer than d_max) does not run.
  Reservations are made under C; where the realized capacity of a round is lower, the newest running jobs are
  evicted (newest first as in the mechanism's step 3, but among the running jobs only: a reservation that has not
  started holds no node yet) and earn nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from models.offline.hindsight import HindsightInstance, HindsightJob

if TYPE_CHECKING:
    from models.simulation import Workload, WorkloadJob


@dataclass(frozen=True)
class BaselineResult:
    """Realized welfare of a baseline, its schedule (job id -> start or None) and how many jobs earned value."""

    name: str
    welfare: float
    starts: dict[str, int | None] = field(default_factory=dict)
    completed: int = 0
    rejected: int = 0


def fcfs(instance: HindsightInstance) -> BaselineResult:
    """First come, first served on the realized arrivals and durations (no prices, no backfilling)."""
    # A job that can earn nothing would leave the queue at its arrival: it is never queued (its arrival may be far).
    earning = (i for i, job in enumerate(instance.jobs) if job.can_earn)
    order = sorted(earning, key=lambda i: (instance.jobs[i].arrival, instance.jobs[i].birth, i))
    queue: list[HindsightJob] = []
    starts: dict[str, int | None] = {j.id: None for j in instance.jobs}
    load = np.zeros(max(instance.horizon, 1) + 1, dtype=np.int64)
    cap = instance.capacity_row(load.size)
    nxt, t = 0, 0
    while nxt < len(order) or queue:
        while nxt < len(order) and instance.jobs[order[nxt]].arrival == t:
            queue.append(instance.jobs[order[nxt]])
            nxt += 1
        queue = [j for j in queue if t <= j.last_start]  # withdrawn: starting now earns nothing
        while queue and _fits(load, t, queue[0], cap):
            job = queue.pop(0)
            load[t:t + job.duration] += job.concurrency
            starts[job.id] = t
        t += 1
    return _result("fcfs", instance, starts, rejected=0)


def _fits(load: np.ndarray, t: int, job: HindsightJob, capacity: np.ndarray) -> bool:
    return bool(np.all(load[t:t + job.duration] + job.concurrency <= capacity[t:t + job.duration]))


def reservation(workload: Workload) -> BaselineResult:
    """Deterministic worst-case reservations made at birth, judged on the realized outcomes."""
    instance = HindsightInstance.from_realized(workload)
    realized = instance.by_id()
    jobs = sorted(workload.jobs, key=lambda j: j.birth)  # stable: workload order within a round
    horizon = max((j.birth + j.sow.value_steps[-1][0] for j in jobs), default=0) + 1
    reserved = np.zeros(horizon + 1, dtype=np.int64)
    starts: dict[str, int | None] = {j.id: None for j in workload.jobs}
    rejected = 0
    for job in jobs:
        window = reservation_window(job, reserved, workload.platform.C)
        if window is None:
            rejected += 1
            continue
        w, length = window
        reserved[w:w + length] += job.sow.concurrency
        if _inside_sow(job):
            a_min = min(o.arrival_offset for o in job.sow.outcomes)
            starts[job.id] = realized[job.id].arrival + (w - job.birth - a_min)
    seniority = [j.id for j in jobs if starts[j.id] is not None]
    return _result("reservation", instance, _lifo_under_capacity(instance, seniority, starts), rejected=rejected)


def _lifo_under_capacity(instance: HindsightInstance, seniority: list[str],
                         starts: dict[str, int | None]) -> dict[str, int | None]:
    """The starts with every job evicted that LIFO removes where the realized load exceeds the round's capacity
    (the newest first, `seniority` oldest first); an evicted job earns nothing. Without a series nothing goes."""
    if not instance.capacities:
        return starts
    jobs = instance.by_id()
    begin = {j: s for j in seniority if (s := starts[j]) is not None}
    end = max((begin[j] + jobs[j].duration for j in begin), default=0)
    capacity = instance.capacity_row(end)
    evicted: set[str] = set()
    for t in range(end):
        running = [j for j in begin if j not in evicted and begin[j] <= t < begin[j] + jobs[j].duration]
        load = sum(jobs[j].concurrency for j in running)
        while load > capacity[t]:
            newest = running.pop()
            evicted.add(newest)
            load -= jobs[newest].concurrency
    return {j: None if j in evicted else s for j, s in starts.items()}


def _inside_sow(job: WorkloadJob) -> bool:
    """A realized arrival among the declared ones and a duration within the longest declared (else it never runs)."""
    arrivals = {o.arrival_offset for o in job.sow.outcomes}
    return job.arrival_offset in arrivals and job.duration <= max(o.duration for o in job.sow.outcomes)


def reservation_window(job: WorkloadJob, reserved: np.ndarray, capacity: int) -> tuple[int, int] | None:
    """The earliest worst-case window (start, length) that fits and still earns value, or None."""
    a_min = min(o.arrival_offset for o in job.sow.outcomes)
    a_max = max(o.arrival_offset for o in job.sow.outcomes)
    length = (a_max - a_min) + max(o.duration for o in job.sow.outcomes)
    c, k_last = job.sow.concurrency, job.sow.value_steps[-1][0]
    for w in range(job.birth + a_min, job.birth + k_last - length + 1):
        if np.all(reserved[w:w + length] + c <= capacity):
            return w, length
    return None


def _result(name: str, instance: HindsightInstance, starts: dict[str, int | None], rejected: int) -> BaselineResult:
    values = [j.value(starts[j.id]) for j in instance.jobs]
    return BaselineResult(name=name, welfare=math.fsum(values), starts=starts,
                          completed=sum(v > 0 for v in values), rejected=rejected)
