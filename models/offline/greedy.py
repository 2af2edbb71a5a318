"""A greedy hindsight schedule by value density, used to warm-start the offline solvers."""

from __future__ import annotations

import numpy as np

from models.offline.hindsight import HindsightInstance, HindsightJob


def density(job: HindsightJob) -> float:
    """Best reachable value per node-round: v_1 / (c d) over the steps a start after arrival can meet."""
    steps = job.reachable_steps()
    return steps[0][1] / (job.concurrency * job.duration) if steps else 0.0


def density_greedy(instance: HindsightInstance) -> dict[str, int | None]:
    """Jobs by decreasing density (ties: instance order); each takes the earliest start of highest value that
    fits next to the jobs placed before it, or does not run."""
    load = np.zeros(max(instance.horizon, 1) + 1, dtype=np.int64)
    cap = instance.capacity_row(load.size)
    starts: dict[str, int | None] = {j.id: None for j in instance.jobs}
    order = sorted(range(len(instance.jobs)), key=lambda i: (-density(instance.jobs[i]), i))
    for i in order:
        job = instance.jobs[i]
        best: int | None = None
        for s in job.starts():
            fits = bool(np.all(load[s:s + job.duration] + job.concurrency <= cap[s:s + job.duration]))
            if fits and (best is None or job.value(s) > job.value(best)):
                best = s
        if best is not None:
            load[best:best + job.duration] += job.concurrency
            starts[job.id] = best
    return starts
