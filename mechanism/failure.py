"""Monte Carlo failure oracle (Lemma 3.1, App. F): sampled LIFO load paths of the earlier jobs serve every (s, d).

For round t the oracle draws N samples of every earlier active job's residual outcome and plays LIFO among
them, giving per sample the load L(tau) those jobs demand in each round tau in [t, t + S_m + D_m - 1) before that
round's evictions. A newer job j with concurrency c that starts at s and runs d rounds fails in a sample iff
L(tau) > C for some tau in [t, s) or L(tau) + c > C for some tau in [s, s + d) (MODEL.md section 5). So one set of
paths answers every (s, d) at once, and a job born later in the same round only appends itself to the paths:
being the newest, it is evicted first and never changes what the older jobs do.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numba
import numpy as np

from mechanism.platform import Platform
from mechanism.rng import stream_key, uniform

CHUNKS = 64  # samples are processed in this many independent chunks (threads), results are exact integers
INT16_MAX = 32767


@dataclass(frozen=True)
class Residual:
    """What is still random about one active job at round t, relative to t.

    Outcome i happens with probability `probability[i]`; the job then occupies rounds
    [start[i], start[i] + length[i]) of the window (start -1: it never runs).
    """

    job: int  # the job's sequence number (its birth order), keys its random stream
    concurrency: int
    start: np.ndarray  # int64
    length: np.ndarray  # int64
    probability: np.ndarray  # float64, sums to 1

    @cached_property
    def cdf(self) -> np.ndarray:
        c = np.cumsum(self.probability)
        c[-1] = 1.0
        return c


class MonteCarloOracle:
    """E_t(s, c, d) by sampling, for every start offset s in [0, S_m) and duration d in [1, D_m].

    Jobs appended during a round are applied to a sample's path lazily: `_bound[n]` is the exact peak of the
    materialised row plus the concurrency of the appended jobs not yet applied to it, an upper bound on the
    sample's true peak. A query for concurrency c needs the row only where bound + c > C; elsewhere the job fits
    in every round whatever the pending jobs do. So under normal load a quote costs O(N), not O(N * D_m).
    """

    def __init__(self, platform: Platform, samples: int | None = None) -> None:
        self.platform = platform
        self.samples = samples if samples is not None else platform.sample_count
        self.round = -1
        self._earlier: list[Residual] = []  # the jobs of the round's start, built into the paths
        self._appended: list[Residual] = []  # jobs born this round, oldest first
        self._app_packed: tuple[np.ndarray, ...] = self._packed([])
        self._paths: np.ndarray | None = None
        self._peak = np.zeros(0, dtype=np.int64)  # exact (saturated) peak of each materialised row
        self._bound = np.zeros(0, dtype=np.int64)  # peak + concurrency of the appended jobs not applied yet
        self._applied = np.zeros(0, dtype=np.int64)  # how many appended jobs each row has applied

    def reset(self, round_: int, residuals: list[Residual]) -> None:
        """Start round `round_` with the earlier active jobs' residuals, in birth order (paths built lazily)."""
        self.round = round_
        self._earlier = list(residuals)
        self._appended = []
        self._app_packed = self._packed([])
        self._paths = None

    def append(self, residual: Residual) -> None:
        """A job born in this round joins the earlier jobs of every later SoW of the round."""
        self._appended.append(residual)
        keys, conc, ptr, start, length, cdf = self._app_packed
        one = self._packed([residual])
        self._app_packed = (np.concatenate([keys, one[0]]), np.concatenate([conc, one[1]]),
                            np.concatenate([ptr, ptr[-1] + one[2][1:]]), np.concatenate([start, one[3]]),
                            np.concatenate([length, one[4]]), np.concatenate([cdf, one[5]]))
        if self._paths is not None and bool(np.any(residual.start >= 0)):
            self._bound += residual.concurrency

    def _built(self) -> np.ndarray:
        if self._paths is None:
            self._paths, self._peak = _build_paths(*self._packed(self._earlier), self.samples,
                                                   self.platform.horizon, self.platform.C,
                                                   np.zeros(0, dtype=self._dtype()))
            self._applied = np.zeros(self.samples, dtype=np.int64)
            self._bound = self._peak.copy()
            for r in self._appended:  # appended before the paths existed: pending on every row
                if bool(np.any(r.start >= 0)):
                    self._bound += r.concurrency
        return self._paths

    def paths(self) -> np.ndarray:
        """L[n, tau - t]: load demanded by the earlier jobs in sample n, round tau, saturated at C + 1."""
        paths = self._built()
        _materialise_all(paths, self._peak, self._bound, self._applied, *self._app_packed, self.platform.C)
        return paths

    def _dtype(self) -> type[np.integer]:
        p = self.platform
        return np.int16 if p.C + p.C_m + 1 <= INT16_MAX else np.int32

    def estimates(self, concurrency: int) -> np.ndarray:
        """Raw E(s, c, d) as an (S_m, D_m) array, column d - 1."""
        p = self.platform
        paths = self._built()
        hist = _survival_histogram(paths, self._peak, self._bound, self._applied, *self._app_packed,
                                   concurrency, p.S_m, p.D_m, p.C)
        survive = np.cumsum(hist[:, ::-1], axis=1)[:, ::-1]  # survive[s, d] = #samples with g >= d
        return (self.samples - survive[:, 1:]) / float(self.samples)  # failures / N, exactly as counted

    def _packed(self, residuals: list[Residual]) -> tuple[np.ndarray, ...]:
        p = self.platform
        keys = np.array([stream_key(p.seed, self.round, r.job) for r in residuals], dtype=np.uint64)
        conc = np.array([r.concurrency for r in residuals], dtype=np.int64)
        sizes = np.array([r.start.size for r in residuals], dtype=np.int64)
        ptr = np.zeros(len(residuals) + 1, dtype=np.int64)
        np.cumsum(sizes, out=ptr[1:])
        cat = np.concatenate
        empty_i, empty_f = np.zeros(0, np.int64), np.zeros(0, np.float64)
        start = cat([r.start for r in residuals]) if residuals else empty_i
        length = cat([r.length for r in residuals]) if residuals else empty_i
        cdf = cat([r.cdf for r in residuals]) if residuals else empty_f
        return keys, conc, ptr, start.astype(np.int64), length.astype(np.int64), cdf


@numba.njit(cache=True, inline="always")
def _draw(key: np.uint64, sample: int, cdf: np.ndarray, lo: int, hi: int) -> int:  # pragma: no cover
    """Index in [lo, hi) of the outcome drawn for `sample` by inverse CDF: the first with cdf > u."""
    u = uniform(key, sample)
    if hi - lo <= 16:  # small support: count the entries <= u without branches (cdf[hi - 1] = 1 > u)
        i = lo
        for j in range(lo, hi - 1):
            i += cdf[j] <= u
        return i
    a, b = lo, hi - 1
    while a < b:
        m = (a + b) >> 1
        if cdf[m] <= u:
            a = m + 1
        else:
            b = m
    return a


@numba.njit(cache=True, inline="always")
def _append_one(row: np.ndarray, peak: int, s: int, d: int, c: int, capacity: int) -> int:  # pragma: no cover
    """Add a job newer than all of `row`'s jobs: it demands c over [s, s+d) until the first overflow removes it.

    `peak` bounds the row from above. Returns the highest (saturated) load among the rounds it raised.
    """
    top = 0
    if s < 0:
        return top
    end = min(s + d, row.size)
    cap = capacity + 1
    if peak + c <= capacity:  # nothing overflows anywhere: it simply adds its demand
        for tau in range(s, end):
            v = row[tau] + c
            row[tau] = v
            if v > top:
                top = v
        return top
    for tau in range(s):  # cancelled while waiting: it never contributes
        if row[tau] > capacity:
            return top
    for tau in range(s, end):
        v = min(row[tau] + c, cap)  # its demand counts in the round it is evicted
        row[tau] = v
        if v > top:
            top = v
        if v > capacity:
            return top
    return top


@numba.njit(cache=True, parallel=True)
def _build_paths(keys: np.ndarray, conc: np.ndarray, ptr: np.ndarray, start: np.ndarray, length: np.ndarray,
                 cdf: np.ndarray, n_samples: int, horizon: int, capacity: int,
                 like: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover
    paths = np.zeros((n_samples, horizon), dtype=like.dtype)
    peak = np.zeros(n_samples, dtype=np.int64)
    n_jobs = keys.size
    cap = capacity + 1
    per_chunk = (n_samples + CHUNKS - 1) // CHUNKS
    for ch in numba.prange(CHUNKS):
        chosen = np.empty(n_jobs, dtype=np.int64)
        diff = np.empty(horizon + 1, dtype=np.int64)
        for n in range(ch * per_chunk, min(n_samples, (ch + 1) * per_chunk)):
            diff[:] = 0
            for k in range(n_jobs):
                i = _draw(keys[k], n, cdf, ptr[k], ptr[k + 1])
                chosen[k] = i
                s = start[i]
                if s >= 0:
                    diff[s] += conc[k]
                    diff[min(s + length[i], horizon)] -= conc[k]
            row = paths[n]
            acc = 0
            top = 0
            for tau in range(horizon):
                acc += diff[tau]
                row[tau] = min(acc, cap)
                top = max(top, acc)
            if top > capacity:  # evictions happen: replay LIFO exactly, oldest job first
                row[:] = 0
                top = 0
                for k in range(n_jobs):
                    i = chosen[k]
                    top = max(top, _append_one(row, cap, start[i], length[i], conc[k], capacity))
            peak[n] = min(top, cap)
    return paths, peak


@numba.njit(cache=True, inline="always")
def _materialise(row: np.ndarray, n: int, peak: np.ndarray, bound: np.ndarray, applied: np.ndarray,
                 keys: np.ndarray, conc: np.ndarray, ptr: np.ndarray, start: np.ndarray, length: np.ndarray,
                 cdf: np.ndarray, capacity: int) -> None:  # pragma: no cover
    """Apply to row n the appended jobs it has not applied yet, oldest first; its bound becomes exact."""
    for k in range(applied[n], keys.size):
        i = _draw(keys[k], n, cdf, ptr[k], ptr[k + 1])
        peak[n] = max(peak[n], _append_one(row, peak[n], start[i], length[i], conc[k], capacity))
    applied[n] = keys.size
    bound[n] = peak[n]


@numba.njit(cache=True, parallel=True)
def _materialise_all(paths: np.ndarray, peak: np.ndarray, bound: np.ndarray, applied: np.ndarray,
                     keys: np.ndarray, conc: np.ndarray, ptr: np.ndarray, start: np.ndarray, length: np.ndarray,
                     cdf: np.ndarray, capacity: int) -> None:  # pragma: no cover
    for n in numba.prange(paths.shape[0]):
        _materialise(paths[n], n, peak, bound, applied, keys, conc, ptr, start, length, cdf, capacity)


@numba.njit(cache=True)  # serial: under normal load a query is O(N) cheap work; waking threads costs more
def _survival_histogram(paths: np.ndarray, peak: np.ndarray, bound: np.ndarray, applied: np.ndarray,
                        keys: np.ndarray, conc: np.ndarray, ptr: np.ndarray, start: np.ndarray, length: np.ndarray,
                        cdf: np.ndarray, c: int, n_starts: int, max_d: int,
                        capacity: int) -> np.ndarray:  # pragma: no cover
    """hist[s, g]: samples where a job starting at s survives exactly the durations 1..g (g capped at D_m)."""
    n_samples, horizon = paths.shape
    out = np.zeros((n_starts, max_d + 1), dtype=np.int64)
    next_b = np.empty(horizon, dtype=np.int64)
    roomy = 0  # samples where the job fits in every round: it survives everything
    for n in range(n_samples):
        if bound[n] + c <= capacity:
            roomy += 1
            continue
        row = paths[n]
        if applied[n] < keys.size:
            _materialise(row, n, peak, bound, applied, keys, conc, ptr, start, length, cdf, capacity)
            if peak[n] + c <= capacity:
                roomy += 1
                continue
        first_a = horizon  # first round the earlier jobs alone overflow: a waiting job is cancelled
        for tau in range(horizon):
            if row[tau] > capacity:
                first_a = tau
                break
        nb = horizon  # next round at or after tau where the job itself would not fit
        for tau in range(horizon - 1, -1, -1):
            if row[tau] + c > capacity:
                nb = tau
            next_b[tau] = nb
        for s in range(min(n_starts, first_a + 1)):
            out[s, min(next_b[s] - s, max_d)] += 1
    out[:, max_d] += roomy
    return out
