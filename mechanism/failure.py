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

import numba
import numpy as np

from mechanism.platform import Platform
from mechanism.rng import stream_key, uniform

CHUNKS = 64  # samples are processed in this many independent chunks (threads), results are exact integers
INT16_MAX = 32767
HIST_CHUNKS = 8  # fewer chunks for the histogram: each one owns an (S_m, D_m + 1) table


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

    @property
    def cdf(self) -> np.ndarray:
        c = np.cumsum(self.probability)
        c[-1] = 1.0
        return c


class MonteCarloOracle:
    """E_t(s, c, d) by sampling, for every start offset s in [0, S_m) and duration d in [1, D_m]."""

    def __init__(self, platform: Platform, samples: int | None = None) -> None:
        self.platform = platform
        self.samples = samples if samples is not None else platform.sample_count
        self.round = -1
        self._pending: list[Residual] = []
        self._paths: np.ndarray | None = None
        self._peak: np.ndarray | None = None  # per sample, the highest load of its path

    def reset(self, round_: int, residuals: list[Residual]) -> None:
        """Start round `round_` with the earlier active jobs' residuals, in birth order (paths built lazily)."""
        self.round = round_
        self._pending = list(residuals)
        self._paths = None
        self._peak = None

    def append(self, residual: Residual) -> None:
        """A job born in this round joins the earlier jobs of every later SoW of the round."""
        if self._paths is None or self._peak is None:
            self._pending.append(residual)
        else:
            _append_job(self._paths, self._peak, *self._packed([residual]), self.platform.C)

    def paths(self) -> np.ndarray:
        """L[n, tau - t]: load demanded by the earlier jobs in sample n, round tau, saturated at C + 1."""
        if self._paths is None:
            self._paths, self._peak = _build_paths(*self._packed(self._pending), self.samples,
                                                   self.platform.horizon, self.platform.C,
                                                   np.zeros(0, dtype=self._dtype()))
            self._pending = []
        return self._paths

    def _dtype(self) -> type[np.integer]:
        p = self.platform
        return np.int16 if p.C + p.C_m + 1 <= INT16_MAX else np.int32

    def estimates(self, concurrency: int) -> np.ndarray:
        """Raw E(s, c, d) as an (S_m, D_m) array, column d - 1."""
        p = self.platform
        paths = self.paths()
        hist = _survival_histogram(paths, self._peak, concurrency, p.S_m, p.D_m, p.C).sum(axis=0)
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


@numba.njit(cache=True, parallel=True)
def _append_job(paths: np.ndarray, peak: np.ndarray, keys: np.ndarray, conc: np.ndarray, ptr: np.ndarray,
                start: np.ndarray, length: np.ndarray, cdf: np.ndarray, capacity: int) -> None:  # pragma: no cover
    n_samples = paths.shape[0]
    for n in numba.prange(n_samples):
        row = paths[n]
        for k in range(keys.size):
            i = _draw(keys[k], n, cdf, ptr[k], ptr[k + 1])
            peak[n] = max(peak[n], _append_one(row, peak[n], start[i], length[i], conc[k], capacity))


@numba.njit(cache=True, parallel=True)
def _survival_histogram(paths: np.ndarray, peak: np.ndarray, c: int, n_starts: int, max_d: int,
                        capacity: int) -> np.ndarray:  # pragma: no cover
    """hist[chunk, s, g]: samples where a job starting at s survives exactly the durations 1..g (g capped at D_m)."""
    n_samples, horizon = paths.shape
    out = np.zeros((HIST_CHUNKS, n_starts, max_d + 1), dtype=np.int64)
    per_chunk = (n_samples + HIST_CHUNKS - 1) // HIST_CHUNKS
    for ch in numba.prange(HIST_CHUNKS):
        next_b = np.empty(horizon, dtype=np.int64)
        roomy = 0  # samples where the job fits in every round: it survives everything
        for n in range(ch * per_chunk, min(n_samples, (ch + 1) * per_chunk)):
            if peak[n] + c <= capacity:
                roomy += 1
                continue
            row = paths[n]
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
                g = min(next_b[s] - s, max_d)
                out[ch, s, g] += 1
        for s in range(n_starts):
            out[ch, s, max_d] += roomy
    return out
