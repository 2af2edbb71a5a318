"""Problem (1) near its optimum at any number of jobs: the LP on job classes, rounded, the rest filled by Alg. 3.

1. The LP relaxation of problem (1) on the job classes (`exact.aggregate`: jobs of equal (d_i, e_i, ST_i)), at most
   6 x 24 x 24 columns whatever N: y_kt = C_k x_kt cores of class k start at hour t, sum_t y_kt <= C_k, and the load
   of every hour is at most a_t.
2. Rounding: each class's jobs, by descending c_i (input order on ties), go first-fit into the class's buckets
   (k, t) in hour order, a job only where it fits whole (c_i <= what is left of y_kt). The load of an hour is then at
   most the LP's, so at most a_t.
3. The jobs left over go through Alg. 3 (`greedy_schedule`, line 1 by c_i d_i) under the capacity that is left.

The LP value bounds u* from above, so the result carries its own certificate: u* - utility <= bound - utility.
Step 2 leaves less than max_i c_i of a bucket unfilled, so utility >= bound - sum over the LP's nonzero buckets
(k, t) of d_k max_{i in k} c_i.
"""

from __future__ import annotations

import time

import numpy as np
from numpy.typing import ArrayLike, NDArray

from models.arrays import IntArray
from models.cuc.exact import ExactResult, aggregate, capacity_array, job_classes, solve_relaxation
from models.cuc.greedy import greedy_schedule
from models.cuc.problem import UNSCHEDULED, Jobs, load, utility

FIT_TOLERANCE = 1e-7  # cores of a bucket treated as absent: the LP's own feasibility tolerance


def solve_rounded(jobs: Jobs, capacity: ArrayLike) -> ExactResult:
    """A feasible schedule of problem (1) under a_t and the LP bound it is certified against (`bound`)."""
    a = capacity_array(jobs, capacity)
    if np.any(np.isnan(a)) or np.any(a < 0):
        raise ValueError("capacity must be >= 0 in every hour")
    tick = time.perf_counter()
    start = np.full(len(jobs), UNSCHEDULED, dtype=np.int64)
    bound = 0.0
    if len(jobs):
        first, cls = job_classes(jobs)
        classes = aggregate(jobs, (first, cls))
        lp = solve_relaxation(classes, a)
        bound = lp.value
        start = _first_fit(jobs, cls, lp.job, lp.hour, classes.c[lp.job] * lp.x)
        start = _repair(jobs, start, a)
        rest = np.flatnonzero(start == UNSCHEDULED)
        left = Jobs(c=jobs.c[rest], d=jobs.d[rest], e=jobs.e[rest], l=jobs.l[rest], T=jobs.T)
        start[rest] = greedy_schedule(left, a - load(jobs, start), "value")
    u = utility(jobs, start)
    return ExactResult(start=start, utility=u, bound=bound, optimal=u >= bound, time_s=time.perf_counter() - tick)


def _first_fit(jobs: Jobs, cls: IntArray, col_class: IntArray, col_hour: IntArray,
               cores: NDArray[np.float64]) -> IntArray:
    """Step 2: each class's jobs by descending c_i into the first of its buckets (LP columns, in hour order) that
    still holds c_i cores."""
    start = np.full(len(jobs), UNSCHEDULED, dtype=np.int64)
    by_class = np.lexsort((-jobs.c, cls))  # class, then descending c_i; lexsort is stable: input order on ties
    job_bounds = np.searchsorted(cls[by_class], np.arange(cls.max() + 2))
    cols = np.lexsort((col_hour, col_class))
    col_bounds = np.searchsorted(col_class[cols], np.arange(cls.max() + 2))
    for k in range(cls.max() + 1):
        mine = cols[col_bounds[k]:col_bounds[k + 1]]
        mine = mine[cores[mine] > FIT_TOLERANCE]
        if mine.size == 0:
            continue
        left = cores[mine] - FIT_TOLERANCE
        for i in by_class[job_bounds[k]:job_bounds[k + 1]]:
            fits = np.flatnonzero(left >= jobs.c[i])
            if fits.size:
                left[fits[0]] -= jobs.c[i]
                start[i] = col_hour[mine[fits[0]]]
    return start


def _repair(jobs: Jobs, start: IntArray, a: NDArray[np.float64]) -> IntArray:
    """Unschedule jobs (the latest-placed, smallest first) from any hour whose load the LP's tolerance let exceed
    a_t, so the schedule is feasible exactly (almost never needed)."""
    start = start.copy()
    used = load(jobs, start)
    for t in np.flatnonzero(used > a):
        on = np.flatnonzero((start != UNSCHEDULED) & (start <= t) & (t < start + jobs.d))
        for i in on[np.lexsort((-on, jobs.c[on]))]:
            if used[t] <= a[t]:
                break
            used[start[i]:start[i] + jobs.d[i]] -= jobs.c[i]
            start[i] = UNSCHEDULED
    return start
