"""Left-shift dominance: some optimal hindsight schedule starts every run job at its arrival, when a job ends, or
where the capacity rises.

A job's value never rises with a later completion, so moving a run job one round earlier never loses value, and
it stays feasible whenever the round before its start has room for it. Repeating such moves (each lowers the
sum of starts, so it stops) ends in a *semi-active* schedule: no run job can start one round earlier. In such a
schedule a job j starting at s > a_j finds round s-1 too full for it; had no job ended at s and C_s <= C_{s-1},
every job occupying s-1 would occupy s too, so the load at s-1 without j would be at most the load at s without
j, and j would fit at s-1. Hence: s > a_j and C_s <= C_{s-1} imply some run job k has start[k] + d_k = s. (With
capacities (0, 1) a job arriving at 0 can only start at 1, where no job ends: the rise is the exception.)
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from models.offline.hindsight import HindsightInstance


def left_shift(instance: HindsightInstance, starts: Mapping[str, int | None]) -> dict[str, int | None]:
    """The semi-active schedule reached by moving run jobs one round earlier while they fit (value never drops)."""
    instance.check_schedule(starts)
    shifted: dict[str, int | None] = {j.id: starts.get(j.id) for j in instance.jobs}
    jobs = instance.by_id()
    ends = [s + jobs[j].duration for j, s in shifted.items() if s is not None]
    load = np.zeros(max(ends, default=0) + 1, dtype=np.int64)
    for j, s in shifted.items():
        if s is not None:
            load[s:s + jobs[j].duration] += jobs[j].concurrency
    moved = True
    while moved:
        moved = False
        for job in instance.jobs:
            s = shifted[job.id]
            while s is not None and s > job.arrival and load[s - 1] + job.concurrency <= instance.capacity_at(s - 1):
                load[s + job.duration - 1] -= job.concurrency
                load[s - 1] += job.concurrency
                s -= 1
                moved = True
            shifted[job.id] = s
    return shifted


def is_semi_active(instance: HindsightInstance, starts: Mapping[str, int | None]) -> bool:
    """True iff no run job could start one round earlier (at or after its arrival) without overloading a round."""
    jobs = instance.by_id()
    load: dict[int, int] = {}
    for j, s in starts.items():
        if s is not None:
            for t in range(s, s + jobs[j].duration):
                load[t] = load.get(t, 0) + jobs[j].concurrency
    return all(s is None or s == jobs[j].arrival
               or load.get(s - 1, 0) + jobs[j].concurrency > instance.capacity_at(s - 1)
               for j, s in starts.items())
