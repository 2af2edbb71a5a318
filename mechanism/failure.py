"""Monte Carlo failure oracle (Lemma 3.1, App. F): sampled LIFO load paths of the earlier jobs serve every (s, d).

For round t the oracle draws N samples of every earlier active job's residual outcome and plays LIFO among
them, giving per sample the load L(tau) those jobs demand in each round tau in [t, t + S_m + D_m - 1) before that
round's evictions. A newer job j with concurrency c that starts at s and runs d rounds fails in a sample iff
L(tau) > C for some tau in [t, s) or L(tau) + c > C for some tau in [s, s + d) (docs/model.md section 5; under the
`newest_demanding` overload rule only the second: an overflow removes the jobs that demand its round). So one set of
paths answers every (s, d) at once, and a job born later in the same round only appends itself to the paths:
being the newest, it is evicted first and never changes what the older jobs do.

With a capacity model (mechanism/capacity.py) each sample also draws a capacity path C_tau, and the job fails iff
L(tau) > C_tau before its start or L(tau) + c > C_tau while it runs. A row then holds L(tau) + (top - C_tau), top
being the model's greatest capacity: the shortfall is a load older than every job that LIFO can never remove, so
every comparison with C_tau becomes one with the constant top and the kernels below run unchanged.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

import numba
import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros

from mechanism.platform import Platform
from mechanism.prefetch import prefetch
from mechanism.rng import capacity_key, stream_key, uniform

CHUNKS = 64  # the path build runs in this many independent chunks (threads); results are exact integers
# Below this many sample-rounds of work (samples x (jobs + horizon)) the parallel kernels run on one thread: on a busy
# machine, waking numba's idle worker threads costs more than such a build (docs/performance.md, the core).
PARALLEL_WORK = 8_000_000
INT8_MAX = 127
EAGER_SHARE = 0.25  # apply appended jobs at once when more rows than this could need them
SMALL_SUPPORT = 64  # up to this many outcomes a draw counts cdf entries; beyond, it bisects
BUILD_BLOCK = 64  # samples the round's build draws together, job by job (`_build_paths`)
INT16_MAX = 32767
INT32_MAX = 2**31 - 1
MARKED_C = 63  # concurrencies up to this have a dirty bit per row, so their survival counts can be kept and updated
COUNTS_BYTES = 64 << 20  # kept survival counts (one per concurrency queried this round, least recently used dropped)
DRAW_BUCKET_BITS = 10  # a job's draw for every row starts from one of 2**10 buckets of [0, 1) (`_draw_all`)
DRAW_MAX_STEPS = 4  # beyond this many cdf entries in one bucket, rows draw one by one
PREFETCH_AHEAD = 8  # rows a query's recount of marked rows fetches ahead of the one it counts
APPEND_AHEAD = 16  # rows the appending pass fetches ahead of the one it updates (both ends of its rounds, its marks)
# The per-row passes index with np.uint32(i) where i >= 0 is known (rows, outcomes, rounds, buckets: all below 2**31):
# numba wraps a negative signed index around, an unsigned one needs no check (a quarter of the appending pass).


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
    def runs(self) -> bool:
        """Whether some outcome runs the job (start >= 0)."""
        return bool((self.start >= 0).any())

    @cached_property
    def cdf(self) -> np.ndarray:
        c = self.probability.cumsum()
        c[-1] = 1.0
        return c


@dataclass(frozen=True)
class Packed:
    """Residuals as flat arrays for the compiled kernels: job k's outcomes are [ptr[k], ptr[k + 1])."""

    keys: np.ndarray  # uint64 random stream per job
    conc: np.ndarray
    ptr: np.ndarray
    start: np.ndarray
    length: np.ndarray
    cdf: np.ndarray

    @staticmethod
    def of(platform: Platform, round_: int, residuals: list[Residual]) -> Packed:
        keys = np.array([stream_key(platform.seed, round_, r.job) for r in residuals], dtype=np.uint64)
        conc = np.array([r.concurrency for r in residuals], dtype=np.int64)
        ptr = np.zeros(len(residuals) + 1, dtype=np.int64)
        np.cumsum([r.start.size for r in residuals], out=ptr[1:])
        if not residuals:
            empty = np.zeros(0, np.int64)
            return Packed(keys, conc, ptr, empty, empty, np.zeros(0, np.float64))
        cat = np.concatenate
        return Packed(keys, conc, ptr, cat([r.start for r in residuals]).astype(np.int64),
                      cat([r.length for r in residuals]).astype(np.int64), cat([r.cdf for r in residuals]))

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return self.keys, self.conc, self.ptr, self.start, self.length, self.cdf


class PackedGrowth:
    """Packed jobs with room for more: appending one job writes its entries after the others (amortised O(its
    outcomes), not a copy of all of them) and gives the Packed of every job so far as views."""

    def __init__(self, packed: Packed) -> None:
        self._jobs = packed.keys.size
        self._outcomes = packed.start.size
        self._per_job = [np.array(a) for a in (packed.keys, packed.conc, packed.ptr)]  # ptr has jobs + 1 entries
        self._per_outcome = [np.array(a) for a in (packed.start, packed.length, packed.cdf)]

    def add(self, key: int, residual: Residual) -> Packed:
        """Append one job with stream key `key`; the Packed of every job so far."""
        n, m, size = self._jobs, self._outcomes, residual.start.size
        if n + 2 > self._per_job[2].size:
            self._per_job = [_grown(a, n + 2) for a in self._per_job]
        if m + size > self._per_outcome[0].size:
            self._per_outcome = [_grown(a, m + size) for a in self._per_outcome]
        keys, conc, ptr = self._per_job
        start, length, cdf = self._per_outcome
        keys[n], conc[n], ptr[n + 1] = key, residual.concurrency, m + size
        start[m: m + size], length[m: m + size], cdf[m: m + size] = residual.start, residual.length, residual.cdf
        self._jobs, self._outcomes = n + 1, m + size
        return Packed(keys[: n + 1], conc[: n + 1], ptr[: n + 2], start[: m + size], length[: m + size],
                      cdf[: m + size])


def _grown(a: np.ndarray, need: int) -> np.ndarray:
    """A copy of `a` with room for at least `need` entries (at least double), zeros after its own."""
    out = np.zeros(max(need, 2 * a.size, 8), dtype=a.dtype)
    out[: a.size] = a
    return out


@dataclass(frozen=True)
class CapacityStreams:
    """The capacity process of one round for the compiled kernels: no keys = fixed capacity (no shortfall)."""

    keys: np.ndarray  # uint64 stream of round t + i's error, i in the window (empty: fixed capacity)
    errors: np.ndarray  # float64 error support
    cdf: np.ndarray
    mean: float
    phi: float
    low: int
    last: int  # C_{t-1}, clamped to [low, high]
    current: int  # C_t if reported before the round's first quote, clamped; else -1 (drawn)

    @staticmethod
    def of(platform: Platform, round_: int, last_capacity: int | None,
           current_capacity: int | None = None, level: float | None = None) -> CapacityStreams:
        model = platform.capacity
        if model is not None:
            model = model.at_level(level)  # mean mu_t when the level tracks the feed
        if model is None:
            return CapacityStreams(np.zeros(0, np.uint64), np.zeros(1, np.float64), np.ones(1, np.float64), 0.0, 0.0,
                                   0, 0, -1)
        keys = np.array([capacity_key(platform.seed, round_, i) for i in range(platform.horizon)], dtype=np.uint64)
        last = model.clamp(platform.C if last_capacity is None else last_capacity)
        current = -1 if current_capacity is None else model.clamp(current_capacity)
        return CapacityStreams(keys, model.error_array, model.cdf.copy(), model.mean, model.phi, model.low, last,
                               current)

    def arrays(self) -> tuple[np.ndarray | float | int, ...]:
        return self.keys, self.errors, self.cdf, self.mean, self.phi, self.low, self.last, self.current


@dataclass
class Marks:
    """Which rows changed for which kept counts since they last read them: bit c of dirty[n] for each live
    concurrency c (one whose counts are kept)."""

    dirty: np.ndarray  # uint64 per row
    listed: np.ndarray  # int32: rows marked since they were last listed clean, count[0] of them (`_mark`)
    count: np.ndarray  # int64 [rows listed, 1 if some marked row did not fit in the list]
    live: int = 0  # bit c: concurrency c's counts are kept

    @staticmethod
    def none(samples: int) -> Marks:
        return Marks(np.zeros(samples, dtype=np.uint64), np.zeros(samples, dtype=np.int32), np.zeros(2, np.int64))

    def arrays(self) -> tuple[np.ndarray | np.uint64 | int, ...]:
        """For the kernels: dirty, listed, count, the live bits and the highest live concurrency (0: none)."""
        return self.dirty, self.listed, self.count, np.uint64(self.live), max(self.live.bit_length() - 1, 0)

    def drop(self, c: int) -> None:
        """Concurrency c's counts are no longer kept: its bits are cleared."""
        self.live &= ~(1 << c)
        self.dirty &= np.uint64(~(1 << c) & ((1 << 64) - 1))


@dataclass
class SurvivalCounts:
    """One concurrency's survival counts, kept between queries of a round: each row's full-round bits as last counted
    (all zero: counted as roomy) and the histogram's difference arrays they add up to (`_survival_counts`)."""

    masks: np.ndarray  # uint64 (samples, words)
    diff: np.ndarray  # int64 (S_m + 1, horizon + 1)
    zero: np.ndarray  # int64 (S_m + 1)
    roomy: int

    @staticmethod
    def empty(samples: int, n_starts: int, horizon: int) -> SurvivalCounts:
        """Every row counted as roomy (none yet): the first update counts each row that is not."""
        return SurvivalCounts(np.zeros((samples, horizon // 64 + 1), dtype=np.uint64),
                              np.zeros((n_starts + 1, horizon + 1), dtype=np.int64),
                              np.zeros(n_starts + 1, dtype=np.int64), samples)

    @property
    def nbytes(self) -> int:
        return self.masks.nbytes + self.diff.nbytes + self.zero.nbytes

    def arrays(self) -> tuple[np.ndarray | int, ...]:
        return self.masks, self.diff, self.zero, self.roomy


class MonteCarloOracle:
    """E_t(s, c, d) by sampling, for every start offset s in [0, S_m) and duration d in [1, D_m].

    Per sample it keeps the load row, its (saturated) peak and its first overflowing round. Jobs appended
    during a round reach a row lazily: `_bound[n]` is the row's peak plus the concurrency of the appended jobs
    it has not applied yet, an upper bound on its true peak. A query for concurrency c skips every sample whose
    bound leaves room for c (the job fits in every round there, whatever the pending jobs do), applies the
    pending jobs to the others, and in those reads only the rounds up to the last start. Once more than a quarter
    of the rows could matter to some query (bound > C - C_m), appended jobs are applied to every row at once, in
    one tight pass per job.

    Within a round the survival counts of each concurrency queried are kept (`SurvivalCounts`). Applying a job to a
    row sets the row's dirty bit of every concurrency whose full rounds it may have changed (a round's load crossing
    C - c, or an earlier first overflow), so a query recounts only the rows whose bits for its concurrency changed:
    a few percent of the rows on a crowded platform, where a count from scratch visits every row that could matter.
    """

    def __init__(self, platform: Platform, samples: int | None = None) -> None:
        self.platform = platform
        self.samples = samples if samples is not None else platform.sample_count
        self.round = -1
        self._last_capacity: int | None = None  # C_{round-1}, which a capacity model conditions on
        self._current_capacity: int | None = None  # C_round, when reported before the round's first quote
        self._level: float | None = None  # mu_round, the capacity model's mean when it tracks the feed
        self._earlier: list[Residual] = []  # the jobs of the round's start, built into the paths
        self._appended: list[Residual] = []  # jobs born this round, oldest first
        self._app = Packed.of(platform, self.round, [])
        self._paths: np.ndarray | None = None
        # Per row, in the narrowest type that holds it (`_built` states the bounds), as the passes over every row are
        # bound by memory: the highest (saturated) load of each materialised row (the paths' type), its first round
        # whose load exceeds C (horizon if none; int16), peak + concurrency of the appended jobs not applied yet
        # (int64: the appended jobs are unbounded; `_bound`), how many appended jobs each row has applied (int32).
        self._peak = np.zeros(0, dtype=np.int64)
        self._first = np.zeros(0, dtype=np.int16)
        self._bound_rows = np.zeros(0, dtype=np.int64)
        # Not None: every row's bound is its peak plus this (after a pass applied every job to every row, and the
        # jobs appended since), and `_bound_rows` is stale; a settled round then pays no pass over the bounds per job.
        self._bound_lag: int | None = None
        self._applied = np.zeros(0, dtype=np.int32)
        self._marks = Marks.none(0)  # rows changed since the kept counts read them
        self._counts: dict[int, SurvivalCounts] = {}  # by concurrency, least recently used first
        self._behind = False  # some row may lack an appended job
        self._floor: int | None = 0  # appended jobs every row has applied (the least of `_applied`); None: not known
        self._scratch: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # one entry per row for _append_job
        self._crowded = False  # more than EAGER_SHARE of the rows' exact peaks are crowded: settle needs no count
        self._growth: PackedGrowth | None = None  # _app with room to append (rebuilt from _app when None)

    def __getstate__(self) -> dict[str, object]:
        """Pickle without the sampled paths: they are a pure function of the residuals and are rebuilt lazily."""
        state = self.__dict__.copy()
        state["_paths"] = None
        for name in ("_peak", "_first", "_bound_rows", "_applied"):
            state[name] = np.zeros(0, dtype=getattr(self, name).dtype)
        state["_bound_lag"] = None
        state["_marks"] = Marks.none(0)
        state["_counts"] = {}
        state["_scratch"] = None
        state["_crowded"] = False
        state["_growth"] = None
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        state.setdefault("_marks", Marks.none(0))  # pickled by a build without kept counts
        state.setdefault("_counts", {})
        state.setdefault("_behind", False)
        state.setdefault("_floor", None)
        state.setdefault("_scratch", None)
        state.setdefault("_crowded", False)
        if "_bound" in state:  # pickled by a build that kept every bound in the array
            state["_bound_rows"] = state.pop("_bound")
        state.setdefault("_bound_lag", None)
        state["_growth"] = None
        self.__dict__.update(state)

    @property
    def _bound(self) -> np.ndarray:
        """Per row, its peak plus the concurrency of the appended jobs it has not applied yet (`_bound_lag`)."""
        if self._bound_lag is not None:
            np.add(self._peak, np.int64(self._bound_lag), out=self._bound_rows, dtype=np.int64)
            self._bound_lag = None
        return self._bound_rows

    def reset(self, round_: int, residuals: list[Residual], last_capacity: int | None = None,
              current_capacity: int | None = None, level: float | None = None) -> None:
        """Start round `round_` with the earlier active jobs' residuals, in birth order (paths built lazily);
        `last_capacity` is the capacity realized in round `round_ - 1` and `current_capacity` that of round `round_`
        if already reported (a capacity model conditions on them); `level` is the model's mean mu_round when it
        tracks the feed (ignored at level_weight = 0)."""
        self.round = round_
        self._last_capacity = last_capacity
        self._current_capacity = current_capacity
        self._level = level
        self._earlier = list(residuals)
        self._appended = []
        self._app = Packed.of(self.platform, round_, [])
        self._growth = None
        self._paths = None
        self._crowded = False

    def append(self, residual: Residual) -> None:
        """A job born in this round joins the earlier jobs of every later SoW of the round."""
        if len(self._appended) >= INT32_MAX:  # `_applied` counts them in int32
            raise ValueError(f"appended jobs in round {self.round}: {len(self._appended) + 1} exceeds the bound "
                             f"{INT32_MAX}")
        self._appended.append(residual)
        if self._growth is None:
            self._growth = PackedGrowth(self._app)
        self._app = self._growth.add(stream_key(self.platform.seed, self.round, residual.job), residual)
        if self._paths is not None:
            self._behind = True
            if residual.runs:
                if self._bound_lag is not None:
                    self._bound_lag += residual.concurrency
                else:
                    self._bound_rows += residual.concurrency

    def settle(self) -> bool:
        """Apply the appended jobs to every row now if rows are crowded; a no-op for the estimates' values.

        Crowded means more than a quarter of the rows could matter to some query (bound > C - C_m): the next query
        would then materialise most rows one by one, and one tight pass per job is cheaper. `estimates` settles
        first, so calling this early (e.g. while a reply is on the wire) only moves work, never changes a result.
        True if it did work.
        """
        if self._paths is not None and self._behind \
                and len(self._appended) > self._applied_floor() \
                and (self._crowded or self._count_crowded(self._bound) > EAGER_SHARE * self.samples):
            self._apply_pending()
            return True
        return False

    def _applied_floor(self) -> int:
        """The appended jobs every row has applied, kept between calls: it changes only where the rows apply jobs
        (`_apply_pending`, `paths` and `_built` set it; a query that may apply them to some rows forgets it)."""
        if self._floor is None:
            self._floor = int(self._applied.min(initial=len(self._appended)))
        return self._floor

    def _count_crowded(self, loads: np.ndarray) -> int:
        """The rows whose `loads` (peaks or bounds) could leave no room for some job (above C - C_m)."""
        p = self.platform
        return int(np.count_nonzero(loads > p.capacity_top - p.C_m))

    def _apply_pending(self) -> None:
        """Apply every appended job to every row that lacks it, one job at a time, oldest first."""
        assert self._paths is not None
        if self._scratch is None or self._scratch[0].size != self.samples:
            self._scratch = (np.empty(self.samples, dtype=np.int32), np.empty(self.samples, dtype=np.int32),
                             np.empty(self.samples, dtype=np.float64))
        for k in range(self._applied_floor(), len(self._appended)):
            r = self._appended[k]
            if not r.runs:  # it never runs: nothing to add anywhere (every row has applied k jobs or more)
                np.maximum(self._applied, k + 1, out=self._applied)
                continue
            app = self._app
            lo, hi = int(app.ptr[k]), int(app.ptr[k + 1])
            _append_job(self._paths, self._peak, self._first, self._applied, *self._marks.arrays(), k, app.keys[k],
                        r.concurrency, app.start[lo:hi], app.length[lo:hi], app.cdf[lo:hi],
                        self.platform.capacity_top, *self._scratch, self.platform.cancels_waiting)
        self._bound_lag = 0  # every row's bound is its peak
        self._behind = False
        self._floor = len(self._appended)
        # Peaks only grow within a round: once crowded by its exact peaks, the round stays crowded.
        self._crowded = self._crowded or self._count_crowded(self._peak) > EAGER_SHARE * self.samples

    def _built(self) -> np.ndarray:
        if self._paths is None:
            p = self.platform
            # A job that never runs in any outcome adds nothing to any row, and each job draws from its own stream:
            # leaving it out skips its draws and changes no other job's.
            packed = Packed.of(p, self.round, [r for r in self._earlier if r.runs])
            streams = CapacityStreams.of(p, self.round, self._last_capacity, self._current_capacity,
                                         self._level)
            # first <= horizon = S_m + D_m - 1 < 2 * 10,000 (the platform's bounds) fits int16, and a saturated peak
            # (<= top + 1) fits the paths' type.
            assert p.horizon <= INT16_MAX, p.horizon
            with _threads_for(self.samples * (packed.keys.size + p.horizon)):
                self._paths, self._peak, self._first = _build_paths(*packed.arrays(), self.samples, p.horizon,
                                                                    p.capacity_top, np.zeros(0, dtype=self._dtype()),
                                                                    *streams.arrays(), p.cancels_waiting)
            self._applied = np.zeros(self.samples, dtype=np.int32)
            self._floor = 0
            self._marks = Marks.none(self.samples)
            self._counts = {}
            self._behind = bool(self._appended)
            # appended before the paths existed: pending on every row (int64: the peaks' type is narrower)
            self._bound_rows = np.empty(self.samples, dtype=np.int64)
            self._bound_lag = sum(r.concurrency for r in self._appended if r.runs)
        return self._paths

    def paths(self) -> np.ndarray:
        """L[n, tau - t]: load demanded by the earlier jobs in sample n, round tau, saturated at C + 1 (with a
        capacity model: plus the sample's shortfall top - C_tau, saturated at top + 1)."""
        paths = self._built()
        if self._counts:  # applied to every row in parallel, unmarked: counts kept from here on start afresh
            self._counts, self._marks = {}, Marks.none(self.samples)
        with _threads_for(self.samples * (self._app.keys.size + self.platform.horizon)):
            _materialise_all(paths, self._peak, self._first, self._bound, self._applied, *self._app.arrays(),
                             self.platform.capacity_top, self.platform.cancels_waiting)
        self._behind = False
        self._floor = len(self._appended)
        return paths

    def _dtype(self) -> type[np.integer]:
        top = self.platform.capacity_top + self.platform.C_m + 1
        return np.int8 if top <= INT8_MAX else np.int16 if top <= INT16_MAX else np.int32

    def estimates(self, concurrency: int) -> np.ndarray:
        """Raw E(s, c, d) as an (S_m, D_m) array, column d - 1."""
        p = self.platform
        paths = self._built()
        self.settle()
        counts, fresh = self._survival_counts(concurrency)
        marks = self._marks
        if fresh or self._behind:  # every row that could matter: applies pending jobs, recounts the dirty rows
            if self._behind:  # it may apply some pending jobs to some rows
                self._floor = None
            counts.roomy = _survival_counts(paths, self._peak, self._first, self._bound, self._applied,
                                            *self._app.arrays(), *marks.arrays(), *counts.arrays(), concurrency,
                                            p.S_m, p.capacity_top, p.cancels_waiting)
        else:  # every row holds every job: only the rows marked for c can have changed
            counts.roomy = _recount_marked(paths, self._first, marks.dirty, marks.listed, marks.count,
                                           *counts.arrays(), concurrency, p.S_m, p.capacity_top)
        return _failure_fractions(counts.diff, counts.zero, counts.roomy, p.S_m, p.D_m, self.samples)

    def _survival_counts(self, c: int) -> tuple[SurvivalCounts, bool]:
        """The kept counts of concurrency c, most recently used last, and whether they are new (then c is live
        from now on); new ones every time for a c above MARKED_C (no dirty bit)."""
        p = self.platform
        counts = self._counts.pop(c, None)
        if counts is not None:
            self._counts[c] = counts
            return counts, False
        counts = SurvivalCounts.empty(self.samples, p.S_m, p.horizon)
        if c <= MARKED_C:
            self._counts[c] = counts
            self._marks.live |= 1 << c
            while len(self._counts) > 1 and sum(k.nbytes for k in self._counts.values()) > COUNTS_BYTES:
                oldest = next(iter(self._counts))
                del self._counts[oldest]
                self._marks.drop(oldest)
        return counts, True


@numba.njit(cache=True, inline="always", nogil=True)
def _draw(key: np.uint64, sample: int, cdf: np.ndarray, lo: int, hi: int) -> int:  # pragma: no cover
    """Index in [lo, hi) of the outcome drawn for `sample` by inverse CDF: the first with cdf > u."""
    if hi - lo == 1:  # one outcome: no number to draw (each stream is its own, so skipping it shifts no other)
        return lo
    u = uniform(key, sample)
    if hi - lo <= SMALL_SUPPORT:  # count the entries <= u without branches (vectorised; cdf[hi - 1] = 1 > u)
        i = lo
        for j in range(lo, hi - 1):
            i += cdf[np.uint32(j)] <= u
        return i
    a, b = lo, hi - 1
    while a < b:
        m = (a + b) >> 1
        if cdf[np.uint32(m)] <= u:
            a = m + 1
        else:
            b = m
    return a


@numba.njit(cache=True, inline="always", nogil=True)
def _crossed(old: int, new: int, capacity: int, c_marked: int) -> np.uint64:  # pragma: no cover
    """Bit c' (1 <= c' <= c_marked) for each concurrency whose full-round test, load > capacity - c', flips when a
    round's load goes from `old` to `new` >= old: c' in [capacity - new + 1, capacity - old]."""
    lo = max(capacity - new + 1, 1)
    hi = min(capacity - old, c_marked)
    if lo > hi:
        return np.uint64(0)
    return ((np.uint64(1) << np.uint64(hi - lo + 1)) - np.uint64(1)) << np.uint64(lo)


@numba.njit(cache=True, inline="always", nogil=True)
def _add_newest(row: np.ndarray, peak: int, first: int, s: int, d: int, c: int, capacity: int,
                c_marked: int, cancels_waiting: bool) -> tuple[int, int, np.uint64]:  # pragma: no cover
    """Add a job newer than all of `row`'s jobs: it demands c over [s, s+d) until the first overflow removes it.

    `peak` and `first` are the row's highest load and first overflowing round; returns them updated, and the dirty
    bits of the concurrencies 1..c_marked whose full rounds may have changed (all when the first overflow moved).
    Without `cancels_waiting` (the `newest_demanding` rule) an overflow removes only the jobs that demand its round,
    so `first` stays at the horizon: the row's later rounds keep counting.
    """
    if s < 0 or s > first:  # never runs, or cancelled while waiting by an earlier overflow
        return peak, first, np.uint64(0)
    end = min(s + d, row.size)
    bits = np.uint64(0)
    if peak + c <= capacity:  # nothing overflows anywhere: it simply adds its demand
        high = 0
        for tau in range(s, end):
            v = row[np.uint32(tau)] + c
            row[np.uint32(tau)] = v
            high = max(high, v)
        if high > capacity - c_marked:  # only a load above C - c' can have crossed it: look again for which
            for tau in range(s, end):
                bits |= _crossed(row[np.uint32(tau)] - c, row[np.uint32(tau)], capacity, c_marked)
        return max(peak, high), first, bits
    cap = capacity + 1
    for tau in range(s, end):
        old = row[np.uint32(tau)]
        v = min(old + c, cap)  # its demand counts in the round it is evicted
        row[np.uint32(tau)] = v
        peak = max(peak, v)
        bits |= _crossed(old, v, capacity, c_marked)
        if v > capacity:
            if not cancels_waiting:
                return peak, first, bits
            if tau < first:  # every later round becomes full for every concurrency
                bits = ~np.uint64(0)
            return peak, min(first, tau), bits
    return peak, first, bits


@contextlib.contextmanager
def _threads_for(work: int) -> Iterator[None]:
    """Run the parallel kernel called inside on one thread when `work` is below PARALLEL_WORK. The kernels' results
    are exact integers from fixed chunks, the same on any number of threads; numba's count is per calling thread."""
    if work >= PARALLEL_WORK:
        yield
        return
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(before)


@numba.njit(cache=True, inline="always", nogil=True)
def _draw_block(key: np.uint64, b0: int, bs: int, cdf: np.ndarray, lo: int, hi: int, u: np.ndarray,
                drawn: np.ndarray) -> None:  # pragma: no cover
    """drawn[s] = _draw(key, b0 + s, cdf, lo, hi) for s in [0, bs): the count of cdf entries <= u for every sample at
    once (loops over the samples the compiler vectorises), bisecting sample by sample above SMALL_SUPPORT."""
    if hi - lo == 1:
        for s in range(bs):
            drawn[s] = lo
    elif hi - lo <= SMALL_SUPPORT:
        for s in range(bs):
            u[s] = uniform(key, b0 + s)
            drawn[s] = lo
        for j in range(lo, hi - 1):
            cj = cdf[np.uint32(j)]
            for s in range(bs):
                drawn[s] += cj <= u[s]
    else:
        for s in range(bs):
            drawn[s] = _draw(key, b0 + s, cdf, lo, hi)


@numba.njit(cache=True, parallel=True)  # holds the GIL: the workqueue threading layer is not re-entrant
def _build_paths(keys: np.ndarray, conc: np.ndarray, ptr: np.ndarray, start: np.ndarray, length: np.ndarray,
                 cdf: np.ndarray, n_samples: int, horizon: int, capacity: int, like: np.ndarray,
                 cap_keys: np.ndarray, cap_errors: np.ndarray, cap_cdf: np.ndarray, cap_mean: float, cap_phi: float,
                 cap_low: int, cap_last: int, cap_now: int,
                 cancels_waiting: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover
    """The rows of the earlier jobs; with capacity streams (cap_keys not empty) `capacity` is the process's top
    and each row starts from the sample's shortfall top - C_tau (the module docstring).

    Each chunk runs over blocks of BUILD_BLOCK samples job by job: a job's uniforms, draws (`_draw_block`; so are
    the capacity errors, round by round) and demand updates for the block's samples are loops over the samples the
    compiler vectorises, and the block's difference arrays (round-major) are summed for all its samples at once. A
    sample that overflows draws its jobs again (the same numbers: a pure function of key and sample) and replays LIFO
    oldest first."""
    paths = np.zeros((n_samples, horizon), dtype=like.dtype)
    peak = np.zeros(n_samples, dtype=like.dtype)  # <= capacity + 1, which the paths' type holds
    first = np.full(n_samples, horizon, dtype=np.int16)  # <= horizon (MonteCarloOracle._built checks it)
    n_jobs = keys.size
    cap = capacity + 1
    stochastic = cap_keys.size > 0
    n_err = cap_cdf.size
    width = BUILD_BLOCK
    # Each outcome's first round and end in the window, times the block width (the difference arrays' row); one
    # that never runs adds and removes its demand in round horizon, which the running sum never reads: the update
    # per drawn outcome needs no branch.
    lo_at = np.full(start.size, horizon * width, dtype=np.uint32)
    hi_at = np.full(start.size, horizon * width, dtype=np.uint32)
    for j in range(start.size):
        if start[j] >= 0:
            lo_at[j] = start[j] * width
            hi_at[j] = min(start[j] + length[j], horizon) * width
    per_chunk = (n_samples + CHUNKS - 1) // CHUNKS
    for ch in numba.prange(CHUNKS):
        diff = np.empty((horizon + 1) * width, dtype=np.int64)  # diff[tau * width + s]: sample s of the block
        short = np.zeros(horizon * width, dtype=np.int64)  # the same layout
        u = np.empty(width, dtype=np.float64)
        drawn = np.empty(width, dtype=np.int64)
        x = np.empty(width, dtype=np.float64)  # each sample's capacity process X_tau
        acc = np.empty(width, dtype=np.int64)
        top = np.empty(width, dtype=np.int64)
        end = min(n_samples, (ch + 1) * per_chunk)
        for b0 in range(ch * per_chunk, end, width):
            bs = min(width, end - b0)
            diff[:] = 0
            if stochastic:  # X_tau = mean + phi (X_{tau-1} - mean) + e_tau; C_tau = clamp(floor(X_tau + 1/2))
                known = 0
                for s in range(bs):
                    x[s] = float(cap_last)
                if cap_now >= 0:  # round t's capacity was reported: known, not drawn
                    known = 1
                    for s in range(bs):
                        x[s] = float(cap_now)
                        short[s] = capacity - cap_now
                for tau in range(known, horizon):
                    _draw_block(cap_keys[tau], b0, bs, cap_cdf, 0, n_err, u, drawn)
                    at = np.uint32(tau * width)
                    for s in range(bs):
                        xs = cap_mean + cap_phi * (x[s] - cap_mean) + cap_errors[np.uint32(drawn[s])]
                        x[s] = xs
                        short[at + np.uint32(s)] = capacity - min(max(int(np.floor(xs + 0.5)), cap_low), capacity)
            for k in range(n_jobs):
                lo = ptr[k]
                hi = ptr[k + 1]
                c = conc[k]
                if hi - lo == 1:  # one outcome: no number to draw (as in `_draw`)
                    lo_k, hi_k = lo_at[lo], hi_at[lo]
                    for s in range(bs):
                        diff[lo_k + np.uint32(s)] += c
                        diff[hi_k + np.uint32(s)] -= c
                    continue
                _draw_block(keys[k], b0, bs, cdf, lo, hi, u, drawn)
                for s in range(bs):
                    i = np.uint32(drawn[s])
                    diff[lo_at[i] + np.uint32(s)] += c
                    diff[hi_at[i] + np.uint32(s)] -= c
            acc[:] = 0
            top[:] = 0
            for tau in range(horizon):
                at = np.uint32(tau * width)
                for s in range(bs):
                    a = acc[s] + diff[at + np.uint32(s)]
                    acc[s] = a
                    v = a + short[at + np.uint32(s)]
                    paths[b0 + s, tau] = min(v, cap)
                    top[s] = max(top[s], v)
            for s in range(bs):
                n = b0 + s
                high = top[s]
                if high > capacity:  # evictions happen: replay LIFO exactly, oldest job first
                    row = paths[n]
                    high, fa = 0, horizon
                    for tau in range(horizon):  # the shortfall: older than every job, never removed
                        row[tau] = short[np.uint32(tau * width + s)]
                        high = max(high, short[np.uint32(tau * width + s)])
                    for k in range(n_jobs):
                        i = _draw(keys[k], n, cdf, ptr[k], ptr[k + 1])
                        high, fa, _ = _add_newest(row, high, fa, start[i], length[i], conc[k], capacity, 0,
                                                  cancels_waiting)
                    first[n] = fa
                peak[n] = min(high, cap)
    return paths, peak, first


@numba.njit(cache=True, inline="always", nogil=True)
def _materialise(row: np.ndarray, n: int, peak: np.ndarray, first: np.ndarray, bound: np.ndarray,
                 applied: np.ndarray, keys: np.ndarray, conc: np.ndarray, ptr: np.ndarray, start: np.ndarray,
                 length: np.ndarray, cdf: np.ndarray, dirty: np.ndarray, listed: np.ndarray, count: np.ndarray,
                 live: np.uint64, c_top: int, capacity: int, cancels_waiting: bool) -> None:  # pragma: no cover
    """Apply to row n the appended jobs it has not applied yet, oldest first; its bound becomes exact. Marks the row
    for the live concurrencies (up to c_top) whose full rounds it may have changed (`Marks`)."""
    bits = np.uint64(0)
    for k in range(applied[n], keys.size):
        i = _draw(keys[k], n, cdf, ptr[k], ptr[k + 1])
        peak[n], first[n], b = _add_newest(row, int(peak[n]), int(first[n]), start[i], length[i], conc[k], capacity,
                                           c_top, cancels_waiting)
        bits |= b
    if bits & live:
        _mark(dirty, listed, count, n, bits & live)
    applied[n] = keys.size
    bound[n] = peak[n]


@numba.njit(cache=True, parallel=True)  # holds the GIL: the workqueue threading layer is not re-entrant
def _materialise_all(paths: np.ndarray, peak: np.ndarray, first: np.ndarray, bound: np.ndarray,
                     applied: np.ndarray, keys: np.ndarray, conc: np.ndarray, ptr: np.ndarray, start: np.ndarray,
                     length: np.ndarray, cdf: np.ndarray, capacity: int,
                     cancels_waiting: bool) -> None:  # pragma: no cover
    """Apply every pending job to every row, marking none (the caller drops any kept counts)."""
    dirty = np.zeros(0, dtype=np.uint64)
    listed = np.zeros(0, dtype=np.int32)
    count = np.zeros(2, dtype=np.int64)
    for n in numba.prange(paths.shape[0]):
        _materialise(paths[n], n, peak, first, bound, applied, keys, conc, ptr, start, length, cdf, dirty, listed,
                     count, np.uint64(0), 0, capacity, cancels_waiting)


@numba.njit(cache=True, nogil=True)
def _bucket_starts(cdf: np.ndarray) -> tuple[np.ndarray, np.ndarray, int, bool]:  # pragma: no cover
    """For the 2**DRAW_BUCKET_BITS equal buckets of [0, 1): starts[b] = #{j < last: cdf[j] <= b / B}, the count a
    uniform in bucket b draws at least; inner[b], the cdf entry strictly inside bucket b if it holds one (2.0, above
    every uniform, if none); the most cdf entries any bucket's (b / B, (b + 1) / B] holds (the steps from there); and
    whether every bucket holds at most one entry strictly inside (then inner alone finishes every draw)."""
    n_buckets = 1 << DRAW_BUCKET_BITS
    starts = np.zeros(n_buckets + 1, dtype=np.int32)
    inner = np.full(n_buckets, 2.0)
    held = np.zeros(n_buckets, dtype=np.int32)
    for j in range(cdf.size - 1):
        x = cdf[j] * n_buckets  # exact: a power-of-two scale
        b = int(np.ceil(x))
        if b <= n_buckets:
            starts[b] += 1
        lo = int(np.floor(x))
        if lo < x and lo < n_buckets:  # strictly inside bucket lo
            held[lo] += 1
            inner[lo] = cdf[j]
    steps = 0
    for b in range(n_buckets):
        starts[b + 1] += starts[b]
        steps = max(steps, starts[b + 1] - starts[b])
    return starts, inner, steps, held.max() <= 1


@numba.njit(cache=True, nogil=True)
def _draw_all(key: np.uint64, cdf: np.ndarray, idx: np.ndarray, u: np.ndarray) -> None:  # pragma: no cover
    """idx[n] = _draw(key, n, cdf, 0, cdf.size) for every row n, in passes the compiler vectorises (u: scratch).

    A uniform's bucket gives the cdf entries below it. If no bucket holds two entries strictly inside, one compare
    with the bucket's inner entry finishes the draw (two table reads indexed by the bucket alone); otherwise the few
    entries inside the bucket are stepped over (cdf is non-decreasing, and its last entry 1 exceeds every uniform).
    Either way each row's index is the count `_draw` takes."""
    n_rows = idx.size
    if cdf.size == 1:
        idx[:] = 0
        return
    starts, inner, steps, single = _bucket_starts(cdf)
    if steps > DRAW_MAX_STEPS and not single:  # many outcomes in a bucket: the per-row draw (bisection) is cheaper
        for n in range(n_rows):
            idx[n] = _draw(key, n, cdf, 0, cdf.size)
        return
    for n in range(n_rows):
        u[n] = uniform(key, n)
    scale = float(1 << DRAW_BUCKET_BITS)
    if single:
        for n in range(n_rows):
            b = np.uint32(u[n] * scale)  # exact: u has 53 bits
            idx[n] = starts[b] + np.int32(inner[b] <= u[n])
        return
    for n in range(n_rows):
        idx[n] = starts[np.uint32(u[n] * scale)]  # exact: u has 53 bits
    for _ in range(steps):
        for n in range(n_rows):
            idx[n] += np.int32(cdf[np.uint32(idx[n])] <= u[n])


@numba.njit(cache=True, nogil=True)
def _crossed_table(c: int, capacity: int, live: np.uint64, c_top: int) -> tuple[np.ndarray, int]:  # pragma: no cover
    """The live bits `_add_newest` sets when a round's load goes from `old` to min(old + c, C + 1): table[old + shift]
    for old >= -shift, and table[0] = 0 for every lower load (no concurrency up to c_top can cross there)."""
    low = max(capacity - c_top - c + 1, 0)
    cap = capacity + 1
    table = np.zeros(cap - low + 2, dtype=np.uint64)
    for old in range(low, cap + 1):
        table[1 + old - low] = _crossed(old, min(old + c, cap), capacity, c_top) & live
    return table, 1 - low


@numba.njit(cache=True, nogil=True)  # serial: one pass, no threads to wake (the query kernels are serial too)
def _append_job(paths: np.ndarray, peak: np.ndarray, first: np.ndarray, applied: np.ndarray, dirty: np.ndarray,
                listed: np.ndarray, count: np.ndarray, live: np.uint64, c_top: int, k: int, key: np.uint64, c: int,
                start: np.ndarray, length: np.ndarray, cdf: np.ndarray, capacity: int, idx: np.ndarray,
                work: np.ndarray, u: np.ndarray, cancels_waiting: bool) -> None:  # pragma: no cover
    """Apply appended job k (concurrency c, outcomes start/length/cdf) to every row that has applied jobs < k,
    marking each for the live concurrencies whose full rounds it may have changed (`_add_newest`, row by row, gives
    the same rows, peaks, first overflows and marks: tests/mechanism/test_failure_kernels.py).

    In passes: every row's draw (vectorised); the rows where the job runs, listed; then those rows alone, each
    row's cache line fetched a few rows ahead (the pass is bound by memory, not arithmetic). idx, work, u: scratch
    of one entry per row."""
    n_rows = paths.shape[0]
    horizon = paths.shape[1]
    _draw_all(key, cdf, idx, u)
    m = 0
    k32 = np.int32(k)
    for j in range(n_rows):
        a = applied[j]
        same = a == k32
        work[m] = np.int32(j)
        m += same & (start[np.uint32(idx[j])] >= 0)
        applied[j] = a + np.int32(same)
    table, shift = _crossed_table(c, capacity, live, c_top)
    cap = capacity + 1
    for p in range(m):
        if p + APPEND_AHEAD < m:
            q = np.uint32(work[p + APPEND_AHEAD])
            iq = np.uint32(idx[q])
            prefetch(paths, q * horizon + start[iq])
            prefetch(paths, q * horizon + min(start[iq] + length[iq], horizon) - 1)  # a row's rounds span 2 lines
            prefetch(peak, q)
            prefetch(first, q)
            prefetch(dirty, q)
        n = np.uint32(work[p])
        i = np.uint32(idx[n])
        s = start[i]
        fa = int(first[n])
        if s > fa:  # cancelled while waiting by an earlier overflow
            continue
        end = min(s + length[i], horizon)
        row = paths[n]
        pk = int(peak[n])
        bits = np.uint64(0)
        if pk + c <= capacity:  # nothing overflows anywhere: it simply adds its demand
            high = 0
            for tau in range(s, end):
                old = row[np.uint32(tau)]
                bits |= table[np.uint32(max(old + shift, 0))]
                v = old + c
                row[np.uint32(tau)] = v
                high = max(high, v)
            peak[n] = max(pk, high)
        else:
            for tau in range(s, end):
                old = row[np.uint32(tau)]
                bits |= table[np.uint32(max(old + shift, 0))]
                v = min(old + c, cap)  # its demand counts in the round it is evicted
                row[np.uint32(tau)] = v
                pk = max(pk, v)
                if v > capacity:
                    if cancels_waiting and tau < fa:  # every later round becomes full for every concurrency
                        bits = live
                        first[n] = tau
                    break
            peak[n] = pk
        if bits:
            _mark(dirty, listed, count, n, bits)


@numba.njit(cache=True, inline="always", nogil=True)
def _next_bit(words: np.ndarray, pos: int, want: bool) -> int:  # pragma: no cover
    """The first position >= pos whose bit is set (want) or clear (not want); 64 * len(words) if none."""
    w = pos >> 6
    x = words[np.uint32(w)] if want else ~words[np.uint32(w)]
    x &= ~np.uint64(0) << np.uint64(pos & 63)
    while x == 0:
        w += 1
        if w == words.size:
            return w << 6
        x = words[np.uint32(w)] if want else ~words[np.uint32(w)]
    return (w << 6) + int(trailing_zeros(x))


@numba.njit(cache=True, inline="always", nogil=True)
def _full_rounds(row: np.ndarray, fa: int, room: int, words: np.ndarray) -> None:  # pragma: no cover
    """words <- full[b] as bits: L(b) > room, or b after the first overflow fa, or b >= horizon."""
    horizon = row.size
    ones = ~np.uint64(0)
    for w in range(words.size):
        base = w << 6
        top = min(64, horizon - base)
        x = np.uint64(0)
        for k in range(top):  # a plain compare-and-pack loop: the compiler vectorises it
            x |= np.uint64(row[np.uint32(base + k)] > room) << np.uint64(k)
        if top < 64:
            x |= ones << np.uint64(top)
        if fa < base:
            x = ones
        elif fa < base + 64:
            x |= (ones << np.uint64(fa - base)) << np.uint64(1)
        words[w] = x


@numba.njit(cache=True, inline="always", nogil=True)
def _count(words: np.ndarray, diff: np.ndarray, zero: np.ndarray, last_s: int, sign: int) -> None:  # pragma: no cover
    """Add (sign 1) or remove (sign -1) one row's survivals, its full rounds given as bits (`_survival_counts`)."""
    s = 0  # first start not yet assigned
    while s <= last_s:
        b = _next_bit(words, s, True)
        if b > s:  # starts [s, b) are free until b
            hi = min(b - 1, last_s)
            diff[np.uint32(s), np.uint32(b)] += sign
            diff[np.uint32(hi + 1), np.uint32(b)] -= sign
        if b > last_s:
            break
        e = _next_bit(words, b, False)  # rounds [b, e) are full: those starts fail at once
        zero[np.uint32(b)] += sign
        zero[np.uint32(min(e, last_s + 1))] -= sign
        s = e


@numba.njit(cache=True, nogil=True)  # serial: under normal load most samples are skipped after one comparison
def _survival_counts(paths: np.ndarray, peak: np.ndarray, first: np.ndarray, bound: np.ndarray, applied: np.ndarray,
                     keys: np.ndarray, conc: np.ndarray, ptr: np.ndarray, start: np.ndarray, length: np.ndarray,
                     cdf: np.ndarray, dirty: np.ndarray, listed: np.ndarray, count: np.ndarray, live: np.uint64,
                     c_top: int, masks: np.ndarray,
                     diff: np.ndarray, zero: np.ndarray, roomy: int, c: int, n_starts: int,
                     capacity: int, cancels_waiting: bool) -> int:  # pragma: no cover
    """Update concurrency c's survival counts (masks, diff, zero, roomy: `SurvivalCounts`) to the rows; the new roomy.

    Per sample, round b is full when the job does not fit there (L(b) + c > C) or b comes after the first
    overflow (a start there is cancelled, which fails like a full round). A start s survives exactly until
    the next full round b >= s, so each maximal run of free rounds (p, b) gives its starts g = b - s, recorded
    as differences along s in diff[s, b], and each run of full rounds gives its starts g = 0 (zero). Bits beyond
    the horizon count as full, so the last run ends there (g >= D_m: survives every duration). A sample where the
    job fits in every round survives everything and is only counted (roomy).

    A row counted before is recounted only if its dirty bit of c is set (c must be live, or the counts empty),
    and then only if its full rounds differ: its old survivals are removed and the new ones added.
    """
    n_samples = paths.shape[0]
    n_words = masks.shape[1]
    last_s = n_starts - 1
    words = np.zeros(n_words, dtype=np.uint64)
    room = capacity - c
    bit = (np.uint64(1) << np.uint64(c)) & live if c <= MARKED_C else np.uint64(0)
    for n in range(n_samples):
        counted = masks[n, n_words - 1] != 0  # a row's last word always has bits set; all zero: counted roomy
        if bound[n] <= room:
            fits = True
        else:
            if applied[n] < keys.size:
                _materialise(paths[n], n, peak, first, bound, applied, keys, conc, ptr, start, length, cdf, dirty,
                             listed, count, live, c_top, capacity, cancels_waiting)
            fits = peak[n] <= room
        if fits:
            if counted:  # loads only grow within a round, so this does not happen; kept exact all the same
                _count(masks[n], diff, zero, last_s, -1)
                masks[n, :] = 0
                roomy += 1
            continue
        if counted and (dirty[n] & bit) == 0:
            continue
        dirty[n] &= ~bit
        roomy = _recount(paths[n], int(first[n]), room, words, masks[n], counted, diff, zero, last_s, roomy)
    return roomy


@numba.njit(cache=True, inline="always", nogil=True)
def _recount(row: np.ndarray, fa: int, room: int, words: np.ndarray, mask: np.ndarray, counted: bool,
             diff: np.ndarray, zero: np.ndarray, last_s: int, roomy: int) -> int:  # pragma: no cover
    """Count a row that does not fit the job in place of its last count (`mask`: counted; else it counted as
    roomy); the new roomy."""
    _full_rounds(row, fa, room, words)
    if counted:
        same = True
        for w in range(words.size):
            same &= words[w] == mask[w]
        if same:
            return roomy
        _count(mask, diff, zero, last_s, -1)
    else:
        roomy -= 1
    _count(words, diff, zero, last_s, 1)
    mask[:] = words
    return roomy


@numba.njit(cache=True, inline="always", nogil=True)
def _mark(dirty: np.ndarray, listed: np.ndarray, count: np.ndarray, n: int,
          bits: np.uint64) -> None:  # pragma: no cover
    """Set row n's dirty `bits` (not 0); a row clean until now is listed, so a recount visits only listed rows (a list
    that is full says so in count[1], and the next recount visits every row)."""
    if dirty[n] == 0:
        m = count[0]
        if m < listed.size:
            listed[m] = n
            count[0] = m + 1
        else:
            count[1] = 1
    dirty[n] |= bits


@numba.njit(cache=True, nogil=True)
def _recount_marked(paths: np.ndarray, first: np.ndarray, dirty: np.ndarray, listed: np.ndarray, count: np.ndarray,
                    masks: np.ndarray, diff: np.ndarray, zero: np.ndarray, roomy: int, c: int, n_starts: int,
                    capacity: int) -> int:  # pragma: no cover
    """`_survival_counts` when every row holds every appended job and c is live: only the rows with c's dirty bit
    can differ from their count, and each is listed (`_mark`; after an overflow of the list, every row is visited
    and the list rebuilt). Such a row does not fit the job: a round crossed C - c, or an overflow came (and a row
    with no full round counts as roomy does, surviving every duration). Rows no longer marked for any concurrency
    leave the list. The new roomy."""
    words = np.zeros(masks.shape[1], dtype=np.uint64)
    bit = np.uint64(1) << np.uint64(c)
    every = count[1] != 0
    todo = dirty.size if every else count[0]
    horizon, n_words = paths.shape[1], masks.shape[1]
    m = 0
    for p in range(todo):
        if not every:  # the listed rows lie scattered: fetch a row's dirty word, then what a marked row reads
            if p + 2 * PREFETCH_AHEAD < todo:
                prefetch(dirty, listed[p + 2 * PREFETCH_AHEAD])
            if p + PREFETCH_AHEAD < todo:
                q = np.uint32(listed[p + PREFETCH_AHEAD])
                if dirty[q] & bit:
                    prefetch(paths, q * horizon)
                    prefetch(paths, q * horizon + horizon - 1)
                    prefetch(masks, q * n_words)
                    prefetch(first, q)
        n = np.uint32(p if every else listed[p])
        if dirty[n] & bit:
            dirty[n] &= ~bit
            counted = masks[n, masks.shape[1] - 1] != 0
            roomy = _recount(paths[n], int(first[n]), capacity - c, words, masks[n], counted, diff, zero, n_starts - 1,
                             roomy)
        if dirty[n]:  # still marked for another concurrency: stays listed (m <= p: in place)
            listed[m] = n
            m += 1
    count[0] = m
    count[1] = 0
    return roomy


@numba.njit(cache=True, nogil=True)
def _histogram(diff: np.ndarray, zero: np.ndarray, roomy: int, n_starts: int,
               max_d: int) -> np.ndarray:  # pragma: no cover
    """hist[s, g] from the counts' difference arrays (`_survival_counts`), g capped at D_m."""
    horizon = diff.shape[1] - 1
    out = np.zeros((n_starts, max_d + 1), dtype=np.int64)
    at = np.zeros(horizon + 1, dtype=np.int64)
    failed = 0
    for s in range(n_starts):
        at += diff[s]
        failed += zero[s]
        row = out[s]
        row[0] += failed
        near = min(s + max_d, horizon + 1)
        for b in range(s + 1, near):  # g = b - s < max_d: one entry each (a loop the compiler vectorises)
            row[np.uint32(b - s)] += at[np.uint32(b)]
        far = 0
        for b in range(near, horizon + 1):  # g capped at max_d: one sum (integers: any order)
            far += at[np.uint32(b)]
        row[max_d] += far
    out[:, max_d] += roomy
    return out


@numba.njit(cache=True, nogil=True)
def _failure_fractions(diff: np.ndarray, zero: np.ndarray, roomy: int, n_starts: int, max_d: int,
                       samples: int) -> np.ndarray:  # pragma: no cover (compiled)
    """E[s, d - 1] = (samples - survive[s, d]) / samples, survive[s, d] the samples whose g >= d in the histogram
    (`_histogram`): failures / N, exactly as counted (integer sums, then one division, as numpy divides)."""
    hist = _histogram(diff, zero, roomy, n_starts, max_d)
    out = np.empty((n_starts, max_d))
    n = np.float64(samples)
    for s in range(n_starts):
        survive = 0
        for d in range(max_d, 0, -1):
            survive += hist[s, d]
            out[s, d - 1] = np.float64(samples - survive) / n
    return out


def _survival_histogram(paths: np.ndarray, peak: np.ndarray, first: np.ndarray, bound: np.ndarray,
                        applied: np.ndarray, keys: np.ndarray, conc: np.ndarray, ptr: np.ndarray, start: np.ndarray,
                        length: np.ndarray, cdf: np.ndarray, c: int, n_starts: int, max_d: int,
                        capacity: int, cancels_waiting: bool = True) -> np.ndarray:
    """hist[s, g]: samples where a job starting at s survives exactly the durations 1..g (g capped at D_m), counted
    from scratch; kept counts must always equal it (`_survival_counts` says how a row is counted)."""
    n_samples, horizon = paths.shape
    counts = SurvivalCounts.empty(n_samples, n_starts, horizon)
    roomy = _survival_counts(paths, peak, first, bound, applied, keys, conc, ptr, start, length, cdf,
                             *Marks.none(n_samples).arrays(), *counts.arrays(), c, n_starts, capacity,
                             cancels_waiting)
    return _histogram(counts.diff, counts.zero, roomy, n_starts, max_d)
