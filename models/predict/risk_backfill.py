"""easy-learned compiled: the event simulator of prediction_backfill with RiskPolicy's laws in one numba loop.

`simulate_risk` gives the start times, passes, backfills and corrections that `simulate_backfill` gives with a
`RiskPolicy` (conditional corrector; no guard, recalibration or wide-head risk): the event loop of
`models/hpc/point_backfill.py`, plus, per job, the features at submission, the tree walk and the capped law on
the atoms (`capped_one`), the risk test (`z_cdf`) and the conditional correction (`z_quantile_above`, with numpy's
pairwise sum), each with the same floating-point operations in the same order. Learning stays in Python: the loop
returns at the completion on which `LearnedPredictor.observe` would refit or check drift, the predictor learns
the completions since the last return (`observe_many`), and the loop resumes on the new clusters. Tests hold the
two simulators equal.

A job's law lives in a slot of a pool of rows (support, probabilities, cumulative sums), from its submission to
its completion.

`replay_risk` is the portfolio's risk-test replay (schedulers.portfolio_choice) compiled: the same loop with each
job's law, predicted runtime and backfill key given as it got them at its live submission (nothing learned).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numba
import numpy as np

from models.arrays import FloatArray, IntArray
from models.hpc.jobs import Workload
from models.hpc.point_backfill import (
    _PREDICTION_OVER,
    _TERMINATION,
    _backfill,
    _corrected,
    _finish,
    _heap_pop,
    _instant,
    _launch,
    _reserve,
    _scratch,
)
from models.hpc.prediction_backfill import BackfillResult
from models.law import Law
from models.predict.history import RECENT
from models.predict.learned import FEATURES, LearnedPredictor

_DONE, _LEARN, _GROW = 0, 1, 2  # why the loop returned: the trace is over, the predictor learns, the pool is full
# the loop's scalar state, kept in one int64 array between calls
(_NXT, _HEAP, _COUNTER, _Q0, _Q1, _RUNNING, _BUSY, _PASSES, _BACKFILLED, _CORRECTIONS, _PHASE, _NOW, _WANTED,
 _COMPLETED, _UNTIL, _FREE, _STATE) = range(17)
_NO_CLUSTERS, _ONE_NODE, _TREE = 0, 1, 2  # the predictor's state: no fit yet, the global histogram, a tree
_SPARE = 1024  # free law slots the loop starts with at least (it returns for more when an instant needs them)


@numba.njit(cache=True, nogil=True)
def pairwise_sum(a: FloatArray, lo: int, n: int) -> float:
    """a[lo:lo + n].sum() as numpy adds a contiguous float64 slice (pairwise, eight accumulators per block)."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[lo + i]
        return res
    if n <= 128:
        r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
        r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
        i = 8
        top = n - n % 8
        while i < top:
            r0 += a[lo + i]
            r1 += a[lo + i + 1]
            r2 += a[lo + i + 2]
            r3 += a[lo + i + 3]
            r4 += a[lo + i + 4]
            r5 += a[lo + i + 5]
            r6 += a[lo + i + 6]
            r7 += a[lo + i + 7]
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            res += a[lo + i]
            i += 1
        return res
    half = n // 2
    half -= half % 8
    return pairwise_sum(a, lo, half) + pairwise_sum(a, lo + half, n - half)


@numba.njit(cache=True, nogil=True)
def _features(j: int, x: FloatArray, submit: IntArray, requested: IntArray, size: IntArray, cols: IntArray,
              recent: IntArray, n_recent: IntArray, count: IntArray, u: int) -> None:
    """Row j of x: learned.features of job j, with user u's recent runtimes and completions."""
    req = float(requested[j])
    k = n_recent[u]
    if k > 0:
        last = float(recent[u, k - 1])
        two = (recent[u, k - 2] + recent[u, k - 1]) / 2 if k > 1 else recent[u, k - 1] / 1
        total = 0
        for i in range(k):
            total += recent[u, i]
        five = total / k
    else:
        last = two = five = req
    s = submit[j]
    x[j, 0] = math.log(max(req, 1.0))
    x[j, 1] = math.log(max(float(size[j]), 1.0))
    for c in range(5):  # user, group, executable, queue, partition
        x[j, 2 + c] = float(cols[c, j])
    x[j, 7] = (s % 86400) / 3600.0
    x[j, 8] = float((s // 86400) % 7)
    x[j, 9] = math.log(max(last, 1.0))
    x[j, 10] = math.log(max(two, 1.0))
    x[j, 11] = math.log(max(five, 1.0))
    x[j, 12] = min(last / req, 1.0)
    x[j, 13] = math.log1p(float(count[u]))


@numba.njit(cache=True, nogil=True)
def _leaf(xj: FloatArray, left: IntArray, right: IntArray, feature: IntArray, threshold: FloatArray) -> int:
    """The tree's leaf of one job, comparing its float32 features as scikit-learn does."""
    v = 0
    while left[v] >= 0:
        v = left[v] if np.float64(np.float32(xj[feature[v]])) <= threshold[v] else right[v]
    return v


@numba.njit(cache=True, nogil=True)
def capped_law(atoms: FloatArray, probs: FloatArray, requested: float, sup: FloatArray, prob: FloatArray,
               cum: FloatArray) -> int:
    """learned.capped_one into (sup, prob, cum): the atoms below the requested time keep their mass, the rest
    sums (left to right) onto it; returns the law's length. `cum` is the running sum, as Law.valid_atoms takes it."""
    m = atoms.size
    k = int(np.searchsorted(atoms, requested, side="left"))
    mass = 0.0
    for i in range(k, m):
        mass += probs[i]
    for i in range(k):
        sup[i] = atoms[i]
        prob[i] = probs[i]
    sup[k] = requested
    prob[k] = mass
    n = k + 1
    for i in range(k, m - 1):
        if atoms[i] > requested:
            sup[n] = atoms[i]
            prob[n] = 0.0
            n += 1
    acc = prob[0]
    cum[0] = acc
    for i in range(1, n):
        acc += prob[i]
        cum[i] = acc
    return n


@numba.njit(cache=True, nogil=True)
def law_quantile(sup: FloatArray, cum: FloatArray, n: int, q: float) -> float:
    """Law.z_quantile: the first atom whose cumulative probability reaches q - 1e-12 (the last if none does)."""
    k = int(np.searchsorted(cum[:n], q - 1e-12, side="left"))
    return float(sup[min(k, n - 1)])


@numba.njit(cache=True, nogil=True)
def law_cdf(sup: FloatArray, cum: FloatArray, n: int, x: float) -> float:
    """Law.z_cdf: P(X <= x)."""
    k = int(np.searchsorted(sup[:n], x, side="right"))
    return float(cum[k - 1]) if k else 0.0


@numba.njit(cache=True, nogil=True)
def law_quantile_above(sup: FloatArray, prob: FloatArray, n: int, x: float, q: float) -> float:
    """Law.z_quantile_above: the q-quantile given X > x; NaN when no mass is left beyond x."""
    first = int(np.searchsorted(sup[:n], x, side="right"))
    total = 0.0 + pairwise_sum(prob, first, n - first)
    if total <= 1e-12:
        return np.nan
    target = q - 1e-12
    acc = 0.0
    for i in range(first, n):
        acc = prob[i] if i == first else acc + prob[i]
        if acc / total >= target:
            return sup[i]
    return sup[n - 1]


@numba.njit(cache=True, nogil=True)
def _overrun(j: int, now: int, s: int, sup: FloatArray, prob: FloatArray, length: IntArray, reservation_q: float,
             requested: IntArray, runtime: IntArray, predicted: IntArray, starts: IntArray, pend: IntArray,
             heap: IntArray, heap_size: int, event_job: IntArray, counter: int, stride: int) -> tuple[int, int]:
    """Job j's prediction ran out at `now`: corrected to the reservation_q-quantile of its law (slot s) beyond the
    elapsed time (its requested time when no mass is left); returns the heap size and the next event counter."""
    elapsed = now - starts[j]
    tail = law_quantile_above(sup[s], prob[s], length[s], float(elapsed), reservation_q)
    new = requested[j] if np.isnan(tail) else int(min(float(requested[j]), max(tail, float(elapsed + 1))))
    return _corrected(j, new, elapsed, runtime, predicted, starts, pend, heap, heap_size, event_job, counter, stride)


@numba.njit(cache=True, nogil=True)
def _pass(nodes: int, now: int, threshold: float, queue: IntArray, q0: int, q1: int, size: IntArray, busy: int,
          predicted: IntArray, starts: IntArray, pend: IntArray, running: IntArray, where: IntArray, n_running: int,
          key: FloatArray, slot: IntArray, sup: FloatArray, cum: FloatArray, length: IntArray, started: IntArray,
          cand: IntArray, ends: IntArray, nsz: IntArray, fits: Any, keys: FloatArray
          ) -> tuple[int, int, int, int, int, int]:
    """The instant's one pass of the risk test: heads, then candidates by key, each passing when its law (slot) puts
    at least `threshold` on ending by the shadow time. Returns the queue's bounds, how many started (in `started`),
    the busy nodes, the running count and how many of the started were backfilled."""
    q0, n_started, free, busy, n_running, m, shadow, extra = _reserve(
        nodes, now, queue, q0, q1, size, busy, predicted, starts, pend, running, where, n_running, started, cand,
        ends, nsz)
    heads = n_started
    if m > 0:
        window = float(shadow - now)
        for k in range(m):
            keys[k] = key[cand[k]]
            s = slot[cand[k]]
            fits[k] = law_cdf(sup[s], cum[s], length[s], window) >= threshold  # RiskPolicy.ends_by
        order = np.argsort(keys[:m], kind="mergesort")  # stable: ties in queue order
        n_started, busy, n_running, q1 = _backfill(queue, q0, q1, cand, order, fits, size, free, busy, extra,
                                                   now, predicted, starts, pend, running, where, n_running,
                                                   started, n_started)
    return q0, q1, n_started, busy, n_running, n_started - heads


@numba.njit(cache=True, nogil=True)
def _run(st: IntArray, submit: IntArray, runtime: IntArray, size: IntArray, requested: IntArray, user: IntArray,
         cols: IntArray, nodes: int, threshold: float, reservation_q: float, order_q: float,
         stride: int, starts: IntArray, predicted: IntArray, pend: IntArray, key: FloatArray, slot: IntArray,
         heap: IntArray, event_job: IntArray, queue: IntArray, running: IntArray, where: IntArray,
         recent: IntArray, n_recent: IntArray, count: IntArray, completed: IntArray,
         free_slots: IntArray, sup: FloatArray, prob: FloatArray, cum: FloatArray, length: IntArray,
         x: FloatArray, has_x: Any, model: int, left: IntArray, right: IntArray, feature: IntArray,
         threshold_tree: FloatArray, atoms: FloatArray, rows: FloatArray) -> int:
    """Run events until the trace ends, the predictor must learn, or the law pool is short; returns which."""
    n = submit.size
    nxt, heap_size, counter = st[_NXT], st[_HEAP], st[_COUNTER]
    q0, q1, n_running, busy = st[_Q0], st[_Q1], st[_RUNNING], st[_BUSY]
    passes, backfilled, corrections = st[_PASSES], st[_BACKFILLED], st[_CORRECTIONS]
    phase, now, wanted = st[_PHASE], st[_NOW], st[_WANTED] != 0
    n_completed, until, n_free = st[_COMPLETED], st[_UNTIL], st[_FREE]
    started, cand, ends, nsz, fits = _scratch(n)
    keys = np.empty(n, dtype=np.float64)
    code = _DONE
    while True:
        if phase == 0:
            if not (nxt < n or heap_size > 0):
                break
            now = _instant(submit, nxt, heap, heap_size, stride)
            arriving = 0
            while nxt + arriving < n and submit[nxt + arriving] == now:
                arriving += 1
            if arriving > n_free or counter + 3 * n + 1 > event_job.size:  # an instant pushes at most 3n events
                code = _GROW
                break
            if counter + 3 * n + 1 > stride:
                raise ValueError("too many events for the int64 event keys")
            wanted = False
            # predictions that ran out: the conditional quantile beyond the elapsed time
            while heap_size > 0 and heap[0] // stride == now * 3 + _PREDICTION_OVER:
                j = event_job[heap[0] % stride]
                heap_size = _heap_pop(heap, heap_size)
                corrections += 1
                heap_size, counter = _overrun(j, now, slot[j], sup, prob, length, reservation_q, requested, runtime,
                                              predicted, starts, pend, heap, heap_size, event_job, counter, stride)
            # submissions: features, the job's cluster and its law
            while nxt < n and submit[nxt] == now:
                j = nxt
                nxt += 1
                u = user[j]
                _features(j, x, submit, requested, size, cols, recent, n_recent, count, u)
                has_x[j] = 1
                n_free -= 1
                s = free_slots[n_free]
                slot[j] = s
                if model == _NO_CLUSTERS:
                    sup[s, 0] = float(requested[j])
                    prob[s, 0] = 1.0
                    cum[s, 0] = 1.0
                    length[s] = 1
                else:
                    leaf = 0 if model == _ONE_NODE else _leaf(x[j], left, right, feature, threshold_tree)
                    length[s] = capped_law(atoms, rows[leaf], float(requested[j]), sup[s], prob[s], cum[s])
                key[j] = law_quantile(sup[s], cum[s], length[s], order_q)
                predicted[j] = max(1, int(law_quantile(sup[s], cum[s], length[s], reservation_q)))
                queue[q1] = j
                q1 += 1
                wanted = True
            phase = 2
        # terminations (the loop returns after the one on which the predictor learns, and resumes here)
        learn = False
        while heap_size > 0 and heap[0] // stride == now * 3 + _TERMINATION:
            j = event_job[heap[0] % stride]
            heap_size = _heap_pop(heap, heap_size)
            n_running, busy = _finish(j, running, where, n_running, busy, size)
            u = user[j]
            if n_recent[u] == RECENT:
                for i in range(RECENT - 1):
                    recent[u, i] = recent[u, i + 1]
                n_recent[u] -= 1
            recent[u, n_recent[u]] = runtime[j]
            n_recent[u] += 1
            count[u] += 1
            completed[n_completed] = j
            n_completed += 1
            free_slots[n_free] = slot[j]
            n_free += 1
            wanted = True
            until -= 1
            if until == 0:
                learn = True
                break
        if learn:
            code = _LEARN
            break
        phase = 0
        if not wanted:
            continue
        # the instant's one pass
        passes += 1
        q0, q1, n_started, busy, n_running, more = _pass(nodes, now, threshold, queue, q0, q1, size, busy, predicted,
                                                         starts, pend, running, where, n_running, key, slot, sup, cum,
                                                         length, started, cand, ends, nsz, fits, keys)
        backfilled += more
        heap_size, counter = _launch(started, n_started, now, runtime, predicted, heap, heap_size, event_job,
                                     counter, stride)
    if code == _DONE and q1 > q0:
        raise ValueError("the simulation ended with jobs never started")
    st[_NXT], st[_HEAP], st[_COUNTER] = nxt, heap_size, counter
    st[_Q0], st[_Q1], st[_RUNNING], st[_BUSY] = q0, q1, n_running, busy
    st[_PASSES], st[_BACKFILLED], st[_CORRECTIONS] = passes, backfilled, corrections
    st[_PHASE], st[_NOW], st[_WANTED] = phase, now, 1 if wanted else 0
    st[_COMPLETED], st[_UNTIL], st[_FREE] = n_completed, until, n_free
    return code


def _model(predictor: LearnedPredictor) -> tuple[int, IntArray, IntArray, IntArray, FloatArray, FloatArray,
                                                 FloatArray]:
    """The predictor's clusters as the loop reads them: state, tree (children, feature, threshold), atoms, rows."""
    c = predictor._clusters
    no_tree = np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64), np.zeros(1)
    if c is None:
        return _NO_CLUSTERS, *no_tree, np.zeros(1), np.zeros((1, 1))
    rows = np.ascontiguousarray(c.atom_probs, dtype=np.float64)
    if c.model is None:
        return _ONE_NODE, *no_tree, c.atoms, rows
    tree = c.model.tree_
    return (_TREE, tree.children_left.astype(np.int64), tree.children_right.astype(np.int64),
            tree.feature.astype(np.int64), tree.threshold.astype(np.float64), c.atoms, rows)


def _grown(arrays: tuple[Any, ...], rows: int, width: int) -> tuple[Any, ...]:
    """The pool's arrays with at least `rows` slots of `width` atoms (the laws in the old slots kept)."""
    out = []
    for a in arrays:
        shape = (rows, width) if a.ndim == 2 else (rows,)
        b = np.zeros(shape, dtype=a.dtype)
        b[tuple(slice(0, s) for s in a.shape)] = a
        out.append(b)
    return tuple(out)


def simulate_risk(workload: Workload, predictor: LearnedPredictor, risk: float, reservation_q: float,
                  order_q: float) -> BackfillResult:
    """simulate_backfill(workload, RiskPolicy(predictor, table, risk, reservation_q, order_q=order_q)) compiled;
    `predictor` is fitted to the workload's job table (`LearnedPredictor.fit`), as RiskPolicy fits it."""
    hist = predictor._hist
    table = hist.table
    n = len(table)
    if len(workload.jobs) != n:
        raise ValueError(f"the workload has {len(workload.jobs)} jobs and the predictor's table {n}")
    for name in ("submit", "runtime", "size"):  # the loop reads the table's columns: they must be the workload's
        column = getattr(table, name)
        if not np.array_equal(column, np.fromiter((getattr(j, name) for j in workload.jobs), np.int64, n)):
            raise ValueError(f"the workload's {name} differs from the predictor's table")
    if predictor.config.clustering != "tree":
        raise ValueError(f"clustering={predictor.config.clustering!r}: the compiled engine walks trees only")
    if hist.completed:
        raise ValueError("the predictor must be freshly fitted (it has observed completions)")
    submit = table.submit.astype(np.int64)
    runtime = table.runtime.astype(np.int64)
    size = table.size.astype(np.int64)
    requested = table.requested.astype(np.int64)
    horizon = int(submit.max() + requested.sum()) + 1 if n else 1
    if horizon * 3 * (8 * n + 8) >= 2**62:
        raise ValueError(f"the trace spans {horizon} s over {n} jobs: event keys would overflow int64")
    _, dense = np.unique(table.user, return_inverse=True)
    user = dense.astype(np.int64).ravel()
    users = int(user.max()) + 1 if n else 1
    cols = np.ascontiguousarray(np.stack([table.user, table.group, table.executable, table.queue,
                                          table.partition]).astype(np.int64))
    if len(FEATURES) != 14 or predictor._x.shape != (n, 14):
        raise ValueError(f"the compiled features are the 14 of learned.FEATURES, not {len(FEATURES)}")
    st = np.zeros(_STATE, dtype=np.int64)
    st[_COUNTER] = n
    starts = np.full(n, -1, dtype=np.int64)
    predicted, pend, slot = (np.zeros(n, dtype=np.int64) for _ in range(3))
    key = np.zeros(n)
    heap = np.empty(2 * n + 1, dtype=np.int64)  # a job has at most one termination and one correction pending
    event_job = np.empty(0, dtype=np.int64)  # counter -> job (corrections can follow one another: it grows)
    stride = 2**62 // (3 * horizon + 3)  # an event key: (time * 3 + kind) * stride + counter
    queue, running, completed = (np.empty(n, dtype=np.int64) for _ in range(3))
    where = np.full(n, -1, dtype=np.int64)
    recent = np.zeros((users, RECENT), dtype=np.int64)
    n_recent, count = np.zeros(users, dtype=np.int64), np.zeros(users, dtype=np.int64)
    has_x = np.frombuffer(predictor._has_x, dtype=np.uint8)
    slots, width = 0, 1
    pool: tuple[Any, ...] = (np.zeros(0, dtype=np.int64), np.zeros((0, 1)), np.zeros((0, 1)), np.zeros((0, 1)),
                             np.zeros(0, dtype=np.int64))  # free slots (a stack), support, probs, cum, length
    synced = 0
    threshold = 1.0 - risk - 1e-12  # RiskPolicy's test: P(runtime <= shadow - now) at least this
    code = _GROW
    while True:
        model, left, right, feature, thr, atoms, rows = _model(predictor)
        st[_UNTIL] = predictor.next_learning()
        short = st[_FREE] < _SPARE or (code == _GROW and st[_COUNTER] + 3 * n + 1 <= event_job.size)
        if short or atoms.size > width:
            grow = max(2 * slots, 4 * _SPARE) if short else slots
            wide = max(width, atoms.size, 2 * width if atoms.size > width else 0)  # doubling: few copies
            pool = _grown(pool, grow, wide)
            pool[0][st[_FREE]: st[_FREE] + grow - slots] = np.arange(slots, grow)
            st[_FREE] += grow - slots
            slots, width = grow, wide
        free_slots, sup, prob, cum, length = pool
        if code == _GROW and st[_COUNTER] + 3 * n + 1 > event_job.size:
            event_job = np.concatenate([event_job, np.empty(max(event_job.size, 6 * n + 6), dtype=np.int64)])
        code = _run(st, submit, runtime, size, requested, user, cols, workload.nodes, threshold, reservation_q,
                    order_q, stride, starts, predicted, pend, key, slot, heap, event_job, queue, running, where, recent,
                    n_recent, count, completed, free_slots, sup, prob, cum, length, predictor._x, has_x, model,
                    left, right, feature, thr, atoms, rows)
        done = int(st[_COMPLETED])
        if done > synced:
            predictor.observe_many(completed[synced:done].tolist())
            synced = done
        if code == _DONE:
            break
    return BackfillResult(tuple(starts.tolist()), int(st[_PASSES]), int(st[_BACKFILLED]), int(st[_CORRECTIONS]))


@numba.njit(cache=True, nogil=True)
def _replay(submit: IntArray, runtime: IntArray, size: IntArray, requested: IntArray, nodes: int, threshold: float,
            reservation_q: float, predicted: IntArray, key: FloatArray, sup: FloatArray, prob: FloatArray,
            length: IntArray, stride: int) -> tuple[IntArray, int, int, int]:
    """_run's events and passes on given laws (job j's in row j of sup and prob, length[j] atoms), predicted
    runtimes (corrected in place) and keys."""
    n = submit.size
    cum = np.empty_like(prob)
    for j in range(n):  # each law's running sum, left to right (as Law takes np.cumsum or accumulate)
        acc = prob[j, 0]
        cum[j, 0] = acc
        for i in range(1, length[j]):
            acc += prob[j, i]
            cum[j, i] = acc
    slot = np.arange(n)
    starts = np.full(n, -1, dtype=np.int64)
    pend = np.zeros(n, dtype=np.int64)
    heap = np.empty(2 * n + 1, dtype=np.int64)  # a job has at most one termination and one correction pending
    event_job = np.empty(stride, dtype=np.int64)
    heap_size = counter = 0
    queue, running = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    where = np.full(n, -1, dtype=np.int64)
    q0 = q1 = n_running = busy = 0
    started, cand, ends, nsz, fits = _scratch(n)
    keys = np.empty(n, dtype=np.float64)
    passes = backfilled = corrections = nxt = 0
    while nxt < n or heap_size > 0:
        now = _instant(submit, nxt, heap, heap_size, stride)
        wanted = False
        while heap_size > 0 and heap[0] // stride == now * 3 + _PREDICTION_OVER:  # predictions that ran out
            j = event_job[heap[0] % stride]
            heap_size = _heap_pop(heap, heap_size)
            corrections += 1
            if counter + 1 >= stride:
                raise ValueError("more events than the replay's event keys hold")
            heap_size, counter = _overrun(j, now, j, sup, prob, length, reservation_q, requested, runtime, predicted,
                                          starts, pend, heap, heap_size, event_job, counter, stride)
        while nxt < n and submit[nxt] == now:  # submissions
            queue[q1] = nxt
            q1 += 1
            nxt += 1
            wanted = True
        while heap_size > 0 and heap[0] // stride == now * 3 + _TERMINATION:  # terminations
            j = event_job[heap[0] % stride]
            heap_size = _heap_pop(heap, heap_size)
            n_running, busy = _finish(j, running, where, n_running, busy, size)
            wanted = True
        if not wanted:
            continue
        passes += 1
        q0, q1, n_started, busy, n_running, more = _pass(nodes, now, threshold, queue, q0, q1, size, busy, predicted,
                                                         starts, pend, running, where, n_running, key, slot, sup, cum,
                                                         length, started, cand, ends, nsz, fits, keys)
        backfilled += more
        if counter + 2 * n_started >= stride:
            raise ValueError("more events than the replay's event keys hold")
        heap_size, counter = _launch(started, n_started, now, runtime, predicted, heap, heap_size, event_job,
                                     counter, stride)
    if q1 > q0:
        raise ValueError("the simulation ended with jobs never started")
    return starts, passes, backfilled, corrections


def replay_risk(workload: Workload, predicted: Sequence[int], key: Sequence[float], laws: Sequence[Law],
                threshold: float, reservation_q: float) -> BackfillResult:
    """simulate_backfill(workload, schedulers._Replay(predicted, key, requested, laws, threshold, "conditional",
    reservation_q)) compiled: job k of the workload keeps predicted runtime predicted[k], backfill key key[k] and
    law laws[k] (atoms), passes the risk test when P(X <= shadow - now) >= threshold, and an overrun is
    corrected to the reservation_q-quantile of its law beyond the elapsed time."""
    jobs = workload.jobs
    n = len(jobs)
    if not len(predicted) == len(key) == len(laws) == n or not n:
        raise ValueError(f"predicted, key and laws must each have one row per job of the workload ({n} >= 1), "
                         f"got {len(predicted)}, {len(key)} and {len(laws)}")
    submit = np.fromiter((j.submit for j in jobs), dtype=np.int64, count=n)
    runtime = np.fromiter((j.runtime for j in jobs), dtype=np.int64, count=n)
    size = np.fromiter((j.size for j in jobs), dtype=np.int64, count=n)
    requested = np.fromiter((j.requested for j in jobs), dtype=np.int64, count=n)
    length = np.fromiter((law.support.size for law in laws), dtype=np.int64, count=n)
    rows = np.repeat(np.arange(n), length)  # the laws, one per row, padded on the right
    cols = np.arange(rows.size) - np.repeat(np.cumsum(length) - length, length)
    sup, prob = np.zeros((n, int(length.max()))), np.zeros((n, int(length.max())))
    sup[rows, cols] = np.concatenate([law.support for law in laws])
    prob[rows, cols] = np.concatenate([law.probs for law in laws])
    # events: a termination and a first correction per job, then at most one per atom or requested time above
    stride = 3 * n + int(length.sum()) + 1
    horizon = int(submit.max() + requested.sum()) + 1
    if horizon * 3 * stride >= 2**62:
        raise ValueError(f"the replay spans {horizon} s over {n} jobs: event keys would overflow int64")
    starts, passes, backfilled, corrections = _replay(
        submit, runtime, size, requested, workload.nodes, threshold, reservation_q,
        np.array(predicted, dtype=np.int64), np.array(key, dtype=np.float64), sup, prob, length, stride)
    return BackfillResult(tuple(starts.tolist()), int(passes), int(backfilled), int(corrections))
