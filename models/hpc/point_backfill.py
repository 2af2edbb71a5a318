"""EASY and EASY++ on point predictions, compiled: the event simulator of prediction_backfill in one numba loop.

`simulate_point` gives the start times, passes, backfills and corrections that `simulate_backfill` gives with
the point policies of models/predict/schedulers.py (requested time, true runtime, Tsafrir's average of the
user's last two completed runtimes, or a prediction given per job, as the portfolio's EASY++ replay gives each
job the one it got live; each corrected to the requested time when it runs out), event for event:
the same order at one instant (predictions over, then submissions, then terminations, each in push order), one
pass after the instant's last event, the same shadow time and spare nodes. Tests hold the two equal.

Events live in one binary heap of int64 keys ((time * 3 + kind) * stride + counter); submissions, already in
(submit, id) order, are read from the arrays. The queue is a slice of one array, compacted in place.
"""

from __future__ import annotations

from enum import IntEnum

import numba
import numpy as np

from models.arrays import BoolArray, IntArray
from models.hpc.jobs import Workload
from models.hpc.prediction_backfill import BackfillResult

# Event kinds in their order at one instant (pyss EVENTS_ORDER), as in prediction_backfill.
_PREDICTION_OVER, _TERMINATION = 0, 2


class PointMode(IntEnum):
    """The point prediction a job gets at submission (each is capped by, and corrected to, the requested time)."""

    REQUESTED = 0
    EXACT = 1
    TSAFRIR = 2
    GIVEN = 3  # simulate_point's `given` array


@numba.njit(cache=True, nogil=True)
def _heap_push(heap: IntArray, size: int, key: int) -> int:
    i = size
    heap[i] = key
    while i > 0:
        parent = (i - 1) >> 1
        if heap[parent] <= key:
            break
        heap[i] = heap[parent]
        i = parent
    heap[i] = key
    return size + 1


@numba.njit(cache=True, nogil=True)
def _heap_pop(heap: IntArray, size: int) -> int:
    """Removes the smallest key (returned by the caller from heap[0] before the call); returns the new size."""
    size -= 1
    last = heap[size]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and heap[child + 1] < heap[child]:
            child += 1
        if last <= heap[child]:
            break
        heap[i] = heap[child]
        i = child
    if size > 0:
        heap[i] = last
    return size


@numba.njit(cache=True, nogil=True)
def _instant(submit: IntArray, nxt: int, heap: IntArray, heap_size: int, stride: int) -> int:
    """The next instant with an event: the next submission's (`nxt`) or the heap's first event's, the earlier."""
    now = submit[nxt] if nxt < submit.size else heap[0] // stride // 3
    if heap_size > 0 and heap[0] // stride // 3 < now:
        now = heap[0] // stride // 3
    return now


@numba.njit(cache=True, nogil=True)
def _free_now(nodes: int, busy: int, now: int, running: IntArray, n_running: int, pend: IntArray,
              size: IntArray) -> int:
    """Nodes free at `now` by the predicted ends (a job predicted to end at `now` frees its nodes now)."""
    free = nodes - busy
    for k in range(n_running):
        j = running[k]
        if pend[j] == now:
            free += size[j]
    return free


@numba.njit(cache=True, nogil=True)
def _start(j: int, now: int, predicted: IntArray, starts: IntArray, pend: IntArray, running: IntArray,
           where: IntArray, n_running: int) -> int:
    """Job j starts at `now` (its predicted end set, added to the running set); returns the new running count."""
    starts[j] = now
    pend[j] = now + predicted[j]
    running[n_running] = j
    where[j] = n_running
    return n_running + 1


@numba.njit(cache=True, nogil=True)
def _finish(j: int, running: IntArray, where: IntArray, n_running: int, busy: int, size: IntArray) -> tuple[int, int]:
    """Job j leaves the running set (the last one takes its place) and frees its nodes; returns the new running
    count and busy nodes."""
    k = where[j]
    n_running -= 1
    moved = running[n_running]
    running[k] = moved
    where[moved] = k
    where[j] = -1
    return n_running, busy - size[j]


@numba.njit(cache=True, nogil=True)
def _corrected(j: int, new: int, elapsed: int, runtime: IntArray, predicted: IntArray, starts: IntArray,
               pend: IntArray, heap: IntArray, heap_size: int, event_job: IntArray, counter: int,
               stride: int) -> tuple[int, int]:
    """Job j, `elapsed` into its run, is now predicted to run `new` seconds; if it still ends later, the instant
    the new prediction runs out is pushed. Returns the heap size and the next event counter."""
    if new <= elapsed:
        raise ValueError("a corrected prediction is not above the elapsed time")
    predicted[j] = new
    pend[j] = starts[j] + new
    if new < runtime[j]:
        event_job[counter] = j
        heap_size = _heap_push(heap, heap_size, (pend[j] * 3 + _PREDICTION_OVER) * stride + counter)
        counter += 1
    return heap_size, counter


@numba.njit(cache=True, nogil=True)
def _scratch(n: int) -> tuple[IntArray, IntArray, IntArray, IntArray, BoolArray]:
    """A pass's scratch arrays: the jobs started, the candidates, the predicted ends and their nodes, which
    candidates end by the reservation."""
    return (np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64),
            np.empty(n, dtype=np.int64), np.empty(n, dtype=np.bool_))


@numba.njit(cache=True, nogil=True)
def _heads(nodes: int, queue: IntArray, q0: int, q1: int, size: IntArray, busy: int, now: int,
           predicted: IntArray, starts: IntArray, pend: IntArray, running: IntArray, where: IntArray, n_running: int,
           started: IntArray) -> tuple[int, int, int, int, int]:
    """Starts queue heads while they fit the nodes free at `now` (into `started`); returns the queue's new start,
    how many started, the free and busy nodes and the running count."""
    free = _free_now(nodes, busy, now, running, n_running, pend, size)
    n_started = 0
    while q0 < q1 and size[queue[q0]] <= free:
        j = queue[q0]
        q0 += 1
        started[n_started] = j
        n_started += 1
        free -= size[j]
        busy += size[j]
        n_running = _start(j, now, predicted, starts, pend, running, where, n_running)
    return q0, n_started, free, busy, n_running


@numba.njit(cache=True, nogil=True)
def _compact(queue: IntArray, q0: int, q1: int, starts: IntArray) -> int:
    """Drops the started jobs from the queue slice, in place and in order; returns its new end."""
    w = q0
    for k in range(q0, q1):
        if starts[queue[k]] < 0:
            queue[w] = queue[k]
            w += 1
    return w


@numba.njit(cache=True, nogil=True)
def _backfill(queue: IntArray, q0: int, q1: int, cand: IntArray, order: IntArray, ends_by: BoolArray,
              size: IntArray, free: int, busy: int, extra: int, now: int, predicted: IntArray, starts: IntArray,
              pend: IntArray, running: IntArray, where: IntArray, n_running: int, started: IntArray,
              n_started: int) -> tuple[int, int, int, int]:
    """Tries the candidates cand[order[k]] in turn: one that fits starts if it ends by the reservation
    (`ends_by[order[k]]`) or fits the spare nodes; the started ones leave the queue slice. Returns how many have
    started in the pass, the busy nodes, the running count and the queue's new end."""
    heads = n_started
    for k in range(order.size):
        j = cand[order[k]]
        if size[j] > free:
            continue
        if ends_by[order[k]]:
            pass
        elif size[j] <= extra:
            extra -= size[j]
        else:
            continue
        free -= size[j]
        busy += size[j]
        n_running = _start(j, now, predicted, starts, pend, running, where, n_running)
        started[n_started] = j
        n_started += 1
    if n_started > heads:
        q1 = _compact(queue, q0, q1, starts)
    return n_started, busy, n_running, q1


@numba.njit(cache=True, nogil=True)
def _reservation(now: int, free: int, need: int, running: IntArray, n_running: int, pend: IntArray,
                 size: IntArray, ends: IntArray, nsz: IntArray) -> tuple[int, int]:
    """The head's reservation: the earliest predicted end after `now` at which `need` nodes are free (every job
    predicted to end then frees its nodes), and the nodes spare then; `ends` and `nsz` are scratch."""
    r = 0
    for k in range(n_running):
        j = running[k]
        if pend[j] > now:
            ends[r] = pend[j]
            nsz[r] = size[j]
            r += 1
    order = np.argsort(ends[:r], kind="mergesort")
    available = free
    k = 0
    while k < r:
        end = ends[order[k]]
        while k < r and ends[order[k]] == end:
            available += nsz[order[k]]
            k += 1
        if available >= need:
            return end, available - need
    raise ValueError("a job never fits the machine")


@numba.njit(cache=True, nogil=True)
def _candidates(queue: IntArray, q0: int, q1: int, size: IntArray, free: int, cand: IntArray) -> int:
    """The queued jobs behind the head that fit the `free` nodes, in queue order, into `cand`; returns how many."""
    m = 0
    for k in range(q0 + 1, q1):
        if size[queue[k]] <= free:
            cand[m] = queue[k]
            m += 1
    return m


@numba.njit(cache=True, nogil=True)
def _reserve(nodes: int, now: int, queue: IntArray, q0: int, q1: int, size: IntArray, busy: int, predicted: IntArray,
             starts: IntArray, pend: IntArray, running: IntArray, where: IntArray, n_running: int, started: IntArray,
             cand: IntArray, ends: IntArray, nsz: IntArray) -> tuple[int, int, int, int, int, int, int, int]:
    """A pass up to its backfilling: the heads started (`_heads`), the m candidates (in `cand`; 0 when the queue
    holds no job behind a blocked head) and the head's shadow time and spare nodes. Returns the queue's new start,
    how many started, the free and busy nodes, the running count, m, the shadow time and the spare nodes."""
    q0, n_started, free, busy, n_running = _heads(nodes, queue, q0, q1, size, busy, now, predicted, starts,
                                                  pend, running, where, n_running, started)
    m = shadow = extra = 0
    if q1 - q0 > 1:
        m = _candidates(queue, q0, q1, size, free, cand)
        if m > 0:
            shadow, extra = _reservation(now, free, size[queue[q0]], running, n_running, pend, size, ends, nsz)
    return q0, n_started, free, busy, n_running, m, shadow, extra


@numba.njit(cache=True, nogil=True)
def _launch(started: IntArray, n_started: int, now: int, runtime: IntArray, predicted: IntArray, heap: IntArray,
            heap_size: int, event_job: IntArray, counter: int, stride: int) -> tuple[int, int]:
    """Pushes each started job's termination and, if it is predicted to end before it does, the instant its
    prediction runs out; returns the heap size and the next event counter."""
    for k in range(n_started):
        j = started[k]
        event_job[counter] = j
        heap_size = _heap_push(heap, heap_size, ((now + runtime[j]) * 3 + _TERMINATION) * stride + counter)
        counter += 1
        if predicted[j] < runtime[j]:
            event_job[counter] = j
            heap_size = _heap_push(heap, heap_size, ((now + predicted[j]) * 3 + _PREDICTION_OVER) * stride
                                   + counter)
            counter += 1
    return heap_size, counter


@numba.njit(cache=True, nogil=True)
def _simulate(submit: IntArray, runtime: IntArray, size: IntArray, requested: IntArray, user: IntArray,
              nodes: int, mode: int, sjf: bool, pass_if_new_fits: bool,
              given: IntArray) -> tuple[IntArray, int, int, int]:
    n = submit.size
    stride = 3 * n + 1
    starts = np.full(n, -1, dtype=np.int64)
    predicted = np.zeros(n, dtype=np.int64)
    pend = np.zeros(n, dtype=np.int64)  # predicted end of a running job
    heap = np.empty(2 * n + 1, dtype=np.int64)
    heap_size = 0
    event_job = np.empty(stride, dtype=np.int64)  # counter -> job
    counter = n
    queue = np.empty(n, dtype=np.int64)
    q0 = 0
    q1 = 0
    running = np.empty(n, dtype=np.int64)
    where = np.full(n, -1, dtype=np.int64)  # position of a running job in `running`
    n_running = 0
    busy = 0
    users = user.max() + 1 if n else 1
    seen = np.zeros(users, dtype=np.int64)  # completed jobs per user
    last1 = np.zeros(users, dtype=np.int64)  # the user's last completed runtime
    last2 = np.zeros(users, dtype=np.int64)  # the one before
    started, cand, ends, nsz, fits = _scratch(n)
    keys = np.empty(n, dtype=np.int64)
    passes = backfilled = corrections = 0
    nxt = 0  # next submission
    while nxt < n or heap_size > 0:
        now = _instant(submit, nxt, heap, heap_size, stride)
        wanted = False
        # predictions that ran out: corrected to the requested time
        while heap_size > 0 and heap[0] // stride == now * 3 + _PREDICTION_OVER:
            j = event_job[heap[0] % stride]
            heap_size = _heap_pop(heap, heap_size)
            elapsed = now - starts[j]
            corrections += 1
            heap_size, counter = _corrected(j, requested[j], elapsed, runtime, predicted, starts, pend, heap,
                                            heap_size, event_job, counter, stride)
        # submissions
        while nxt < n and submit[nxt] == now:
            j = nxt
            nxt += 1
            p = requested[j]
            if mode == 1:
                p = runtime[j]
            elif mode == 2:
                u = user[j]
                if seen[u] >= 2:
                    p = min(requested[j], (last1[u] + last2[u]) // 2)
            elif mode == 3:
                p = given[j]
            predicted[j] = max(1, p)
            queue[q1] = j
            q1 += 1
            if not wanted:
                wanted = not pass_if_new_fits or size[j] <= _free_now(nodes, busy, now, running, n_running, pend,
                                                                     size)
        # terminations
        while heap_size > 0 and heap[0] // stride == now * 3 + _TERMINATION:
            j = event_job[heap[0] % stride]
            heap_size = _heap_pop(heap, heap_size)
            n_running, busy = _finish(j, running, where, n_running, busy, size)
            u = user[j]
            seen[u] += 1
            last2[u] = last1[u]
            last1[u] = runtime[j]
            wanted = True
        if not wanted:
            continue
        # the instant's one pass
        passes += 1
        q0, n_started, free, busy, n_running, m, shadow, extra = _reserve(
            nodes, now, queue, q0, q1, size, busy, predicted, starts, pend, running, where, n_running, started, cand,
            ends, nsz)
        n_heads = n_started
        if m > 0:
            if sjf:
                for k in range(m):
                    keys[k] = predicted[cand[k]]
                order = np.argsort(keys[:m], kind="mergesort")  # stable: ties in queue (index) order
            else:
                order = np.arange(m)
            for k in range(m):
                fits[k] = now + predicted[cand[k]] <= shadow
            n_started, busy, n_running, q1 = _backfill(queue, q0, q1, cand, order, fits, size, free, busy, extra,
                                                       now, predicted, starts, pend, running, where, n_running,
                                                       started, n_started)
            backfilled += n_started - n_heads
        heap_size, counter = _launch(started, n_started, now, runtime, predicted, heap, heap_size, event_job,
                                     counter, stride)
    if q1 > q0:
        raise ValueError("the simulation ended with jobs never started")
    return starts, passes, backfilled, corrections


def simulate_point(workload: Workload, requested: IntArray, user: IntArray, mode: PointMode, sjf: bool,
                   pass_if_new_fits: bool, given: IntArray | None = None) -> BackfillResult:
    """Replay the workload under EASY on point predictions (`sjf`: backfill shortest-predicted first).

    `requested`, `user` and `given` (mode GIVEN only: each job's prediction, >= 1) are aligned with workload.jobs
    (the job table's columns).
    """
    jobs = workload.jobs
    n = len(jobs)
    if requested.shape != (n,) or user.shape != (n,):
        raise ValueError(f"requested and user must have shape ({n},), got {requested.shape} and {user.shape}")
    if (mode == PointMode.GIVEN) != (given is not None):
        raise ValueError(f"mode={mode.name} takes a given prediction per job if and only if it is GIVEN")
    if given is not None and (given.shape != (n,) or (n and int(given.min()) < 1)):
        raise ValueError(f"given must have shape ({n},) and every prediction >= 1, got shape {given.shape}")
    submit = np.fromiter((j.submit for j in jobs), dtype=np.int64, count=n)
    runtime = np.fromiter((j.runtime for j in jobs), dtype=np.int64, count=n)
    size = np.fromiter((j.size for j in jobs), dtype=np.int64, count=n)
    horizon = int(submit.max() + requested.sum()) + 1 if n else 1  # every job has ended by then
    if horizon * 3 * (3 * n + 1) >= 2**62:
        raise ValueError(f"the trace spans {horizon} s over {n} jobs: event keys would overflow int64")
    _, dense = np.unique(user, return_inverse=True)  # user ids as 0..U-1
    starts, passes, backfilled, corrections = _simulate(
        submit, runtime, size, requested.astype(np.int64), dense.astype(np.int64).ravel(), workload.nodes,
        int(mode), sjf, pass_if_new_fits,
        np.zeros(1, dtype=np.int64) if given is None else given.astype(np.int64))
    return BackfillResult(tuple(starts.tolist()), int(passes), int(backfilled), int(corrections))
