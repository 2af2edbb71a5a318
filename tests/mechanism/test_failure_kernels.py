"""Failure oracle kernels against independent references: the bit search and the draw against brute force, every
sampled path (and its peak, first overflow and bound) against `lifo_loads`, the estimates across 64-round words and
sample counts around the 64 chunks against `fails_given_loads`."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mechanism.failure
from mechanism.failure import (
    CHUNKS,
    MonteCarloOracle,
    Residual,
    _add_newest,
    _bucket_starts,
    _draw,
    _draw_all,
    _failure_fractions,
    _histogram,
    _mark,
    _next_bit,
    _survival_histogram,
)
from mechanism.failure_literal import sampled_outcomes
from mechanism.lifo import fails_given_loads, lifo_loads
from mechanism.platform import Platform
from mechanism.rng import stream_key, uniform, uniforms
from tests.conftest import small_platform

ROUND = 3
OVERLOAD_RULES = ["newest", "newest_demanding"]  # step 3's two rules (docs/model.md 6): every kernel serves both


@pytest.fixture(params=["parallel", "one thread"])
def threads(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The parallel kernels on numba's threads, or on one (as below PARALLEL_WORK): the same rows either way."""
    monkeypatch.setattr(mechanism.failure, "PARALLEL_WORK", 0 if request.param == "parallel" else 1 << 62)
    return str(request.param)


def _residuals(rng: np.random.Generator, p: Platform, n_jobs: int, max_outcomes: int = 3,
               late: int = 0) -> list[Residual]:
    """Random earlier jobs: starts in [late, S_m) or never (-1), lengths in [1, D_m]."""
    out = []
    for k in range(n_jobs):
        m = int(rng.integers(1, max_outcomes + 1))
        prob = rng.uniform(0.1, 1.0, size=m)
        out.append(Residual(job=k, concurrency=int(rng.integers(1, p.C_m + 1)),
                            start=np.where(rng.random(m) < 0.1, -1, rng.integers(late, p.S_m, size=m)),
                            length=rng.integers(1, p.D_m + 1, size=m).astype(np.int64),
                            probability=prob / prob.sum()))
    return out


def _lifo_rows(p: Platform, residuals: list[Residual], samples: int) -> list[list[int]]:
    """Per sample, the loads LIFO plays for the sampled outcomes (drawn as the literal procedure draws them)."""
    idx = sampled_outcomes(p, ROUND, residuals, samples)
    rows = []
    for n in range(samples):
        jobs = [(int(r.start[idx[n, k]]), int(r.length[idx[n, k]]), r.concurrency) for k, r in enumerate(residuals)]
        rows.append(lifo_loads(jobs, p.horizon, p.C, p.cancels_waiting)[0])
    return rows


def _check_rows(oracle: MonteCarloOracle, expected: list[list[int]]) -> None:
    """Each path is the LIFO load saturated at C + 1; its peak, first overflow (horizon if none, or if an overflow
    does not cancel the waiting jobs) and bound match."""
    p = oracle.platform
    paths = oracle.paths()
    want = np.minimum(np.array(expected, dtype=np.int64).reshape(paths.shape), p.C + 1)
    assert np.array_equal(paths.astype(np.int64), want)
    over = want > p.C
    first = np.where(over.any(axis=1) & p.cancels_waiting, over.argmax(axis=1), p.horizon)
    assert np.array_equal(oracle._peak, want.max(axis=1, initial=0))
    assert np.array_equal(oracle._first, first)
    assert np.array_equal(oracle._bound, oracle._peak)
    assert np.all(oracle._applied == len(oracle._appended))


# ---- the bit search and the draw, against brute force ----


def test_next_bit_finds_the_first_set_or_clear_bit_at_or_after_pos_in_every_word() -> None:
    rng = np.random.default_rng(5)
    for n_words in (1, 2, 3):
        for pattern in ("random", "sparse", "zeros", "ones"):
            if pattern == "random":
                words = rng.integers(0, 2**63, size=n_words, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
            elif pattern == "sparse":
                words = np.zeros(n_words, dtype=np.uint64)
                words[-1] = np.uint64(1) << np.uint64(63)
            else:
                words = np.full(n_words, 0 if pattern == "zeros" else 2**64 - 1, dtype=np.uint64)
            bits = [(int(words[i // 64]) >> (i % 64)) & 1 for i in range(64 * n_words)]
            for pos in range(64 * n_words):
                for want in (True, False):
                    expect = next((i for i in range(pos, 64 * n_words) if bits[i] == want), 64 * n_words)
                    assert _next_bit(words, pos, want) == expect, (pattern, n_words, pos, want)


@pytest.mark.parametrize("outcomes", [1, 2, 63, 64, 65, 66, 200])
def test_a_draw_is_the_first_outcome_whose_cdf_exceeds_the_uniform_inside_its_slice(outcomes: int) -> None:
    rng = np.random.default_rng(outcomes)
    w = rng.uniform(0.0, 1.0, size=outcomes)
    w[rng.random(outcomes) < 0.2] = 0.0  # repeated cdf values: zero-probability outcomes are never drawn
    w[-1] += 0.1
    cdf = np.cumsum(w / w.sum())
    cdf[-1] = 1.0
    lo = 7  # the job's outcomes sit after another job's, as in the packed arrays
    packed = np.concatenate([np.linspace(0.1, 1.0, lo), cdf, np.linspace(0.5, 1.0, 5)])
    key = stream_key(11, 2, outcomes)
    u = uniforms(key, 300)
    for n in range(300):
        expect = lo + int(np.searchsorted(cdf, u[n], side="right"))
        assert _draw(np.uint64(key), n, packed, lo, lo + outcomes) == expect


def _key_drawing(u: float) -> int:
    """The stream key whose sample 0 is exactly u (a multiple of 2**-53): splitmix64's output step inverted."""
    mask = 2**64 - 1

    def unxorshift(z: int, k: int) -> int:
        x = z
        for _ in range(64 // k + 1):
            x = z ^ (x >> k)
        return x & mask

    z = int(u * 2**53) << 11
    z = (unxorshift(z, 31) * pow(0x94D049BB133111EB, -1, 2**64)) & mask
    z = (unxorshift(z, 27) * pow(0xBF58476D1CE4E5B9, -1, 2**64)) & mask
    return (unxorshift(z, 30) - 0x9E3779B97F4A7C15) & mask


@pytest.mark.parametrize("outcomes", [4, 100])
def test_a_uniform_equal_to_a_cdf_entry_draws_the_next_outcome(outcomes: int) -> None:
    # Inverse CDF takes the first outcome with cdf > u, as the literal procedure's searchsorted(side="right"):
    # on an exact tie (u = cdf[j] = 0.5) outcome j + 1 is drawn, by the count and by the binary search alike.
    key = _key_drawing(0.5)
    assert uniform(np.uint64(key), 0) == 0.5
    cdf = np.linspace(1.0 / outcomes, 1.0, outcomes)
    j = outcomes // 2 - 1
    assert cdf[j] == 0.5
    assert _draw(np.uint64(key), 0, cdf, 0, outcomes) == j + 1 == int(np.searchsorted(cdf, 0.5, side="right"))


# ---- sampled paths against the literal LIFO play ----


@pytest.mark.parametrize("samples", [1, CHUNKS - 1, CHUNKS + 1, 2 * CHUNKS + 1, 3 * CHUNKS - 1])
@pytest.mark.parametrize("capacity", [3, 5])
@pytest.mark.parametrize("overload", OVERLOAD_RULES)
def test_every_sampled_path_is_the_lifo_load_saturated_at_c_plus_1(samples: int, capacity: int, overload: str,
                                                                   threads: str) -> None:
    # Sample counts around the 64 chunks of the path build: every row is built, once, whatever the count.
    p = small_platform(C=capacity, samples=samples, seed=samples, C_m=3, overload=overload)
    rs = _residuals(np.random.default_rng(samples * 10 + capacity), p, 7)
    oracle = MonteCarloOracle(p)
    oracle.reset(ROUND, rs)
    _check_rows(oracle, _lifo_rows(p, rs, samples))


@pytest.mark.parametrize("settle", [False, True])
@pytest.mark.parametrize("overload", OVERLOAD_RULES)
def test_appended_jobs_reach_every_path_lazily_or_all_at_once_as_lifo_plays_them(settle: bool, overload: str,
                                                                                 threads: str) -> None:
    p = small_platform(C=4, samples=130, seed=2, C_m=3, overload=overload)
    rng = np.random.default_rng(8)
    rs = _residuals(rng, p, 9)
    oracle = MonteCarloOracle(p)
    oracle.reset(ROUND, rs[:3])
    for m in range(3, len(rs) + 1):
        rows = _lifo_rows(p, rs[:m], p.sample_count)
        for c in (3, 2, 1):
            assert np.array_equal(oracle.estimates(c), _definition(p, rows, c)), (m, c)
        if m < len(rs):
            oracle.append(rs[m])
            if settle:
                oracle.settle()
            assert np.all(oracle._bound >= oracle._peak)
    _check_rows(oracle, _lifo_rows(p, rs, p.sample_count))


def test_a_row_that_turns_out_roomy_once_its_pending_job_is_applied_survives_every_duration() -> None:
    # C = 8, C_m = 4. E (c = 3) runs round 0 in about a sixth of the samples; A (c = 2, appended) adds 2 to every
    # bound: 5 there, 2 elsewhere. Too few rows are crowded (bound > C - C_m = 4) to settle, so a query for c = 4
    # (room 4) applies A to those rows alone, and each is roomy after all (3 and 2 never share a round).
    p = small_platform(C=8, samples=100, seed=4, C_m=4)
    e = Residual(job=0, concurrency=3, start=np.array([0, -1]), length=np.array([1, 1]),
                 probability=np.array([0.15, 0.85]))
    a = Residual(job=1, concurrency=2, start=np.array([1, -1]), length=np.array([1, 1]),
                 probability=np.array([0.5, 0.5]))
    oracle = MonteCarloOracle(p)
    oracle.reset(ROUND, [e])
    oracle.estimates(1)
    oracle.append(a)
    crowded = int(np.count_nonzero(oracle._bound > 4))
    assert 0 < crowded < p.sample_count / 4 and oracle.settle() is False
    est = oracle.estimates(4)
    applied = oracle._applied == 1
    assert int(np.count_nonzero(applied)) == crowded  # applied to the crowded rows only, whose bound is now exact
    assert np.array_equal(oracle._bound[applied], oracle._peak[applied]) and np.all(oracle._bound[~applied] == 2)
    assert np.array_equal(est, _definition(p, _lifo_rows(p, [e, a], p.sample_count), 4))
    assert not est.any()  # every row has room for 4 nodes in every round


def _definition(p: Platform, rows: list[list[int]], c: int) -> np.ndarray:
    """E(s, c, d) as docs/model.md section 5 defines it, from each sample's LIFO loads."""
    return np.array([[np.mean([fails_given_loads(r, s, d, c, p.C, p.cancels_waiting) for r in rows])
                      for d in range(1, p.D_m + 1)]
                     for s in range(p.S_m)])


# ---- estimates against fails_given_loads, across 64-round words ----


def _window_case(s_m: int, seed: int, late_jobs: int, overload: str = "newest") -> tuple[Platform, list[Residual]]:
    """Three early jobs of one node that never overflow C = 4, and later ones from round 58 on."""
    p = small_platform(C=4, samples=40, seed=s_m, S_m=s_m, C_m=3, overload=overload)
    rng = np.random.default_rng(seed)
    early = [Residual(job=k, concurrency=1, start=rng.integers(-1, p.S_m, size=2).astype(np.int64),
                      length=np.array([p.D_m, 1]), probability=np.array([0.5, 0.5])) for k in range(3)]
    late = _residuals(rng, p, late_jobs, late=min(58, s_m - 1))
    return p, early + [Residual(3 + k, r.concurrency, r.start, r.length, r.probability) for k, r in enumerate(late)]


def _rows_and_oracle(p: Platform, rs: list[Residual]) -> tuple[list[list[int]], MonteCarloOracle]:
    """The LIFO load rows of every sample (the reference) and an oracle reset to the same residuals."""
    oracle = MonteCarloOracle(p)
    oracle.reset(ROUND, rs)
    return _lifo_rows(p, rs, p.sample_count), oracle


WINDOWS = [(5, 0, 6), (61, 1, 6), (62, 1, 6), (63, 1, 6), (64, 1, 6), (65, 1, 3), (70, 3, 6), (127, 0, 23)]


@pytest.mark.parametrize(("s_m", "seed", "late_jobs"), WINDOWS)
@pytest.mark.parametrize("overload", OVERLOAD_RULES)
def test_estimates_equal_the_lifo_definition_for_every_start_and_duration_across_64_round_words(
        s_m: int, seed: int, late_jobs: int, overload: str) -> None:
    # horizon = S_m + 2 straddles the 64-bit words of the full-round bitmap (63, 64, 65, ... 129 rounds), and
    # first overflows fall before, at and after round 64.
    p, rs = _window_case(s_m, seed, late_jobs, overload)
    rows, oracle = _rows_and_oracle(p, rs)
    firsts = {next((t for t, load in enumerate(r) if load > p.C), p.horizon) for r in rows}
    if s_m > 64:  # overflows first in the first word, in a later one, and not at all
        assert min(firsts) < 64 <= max(firsts - {p.horizon}) and p.horizon in firsts, sorted(firsts)
    for c in (1, 2, 3):
        assert np.array_equal(oracle.estimates(c), _definition(p, rows, c)), c


@pytest.mark.parametrize("first", [57, 63, 64, 65, 128])
def test_a_first_overflow_on_a_word_boundary_fails_only_the_starts_from_it_on(first: int) -> None:
    # A (c = 3) and, in half the samples, B (c = 2) demand round `first`: 5 > C = 4 there. Starts before it are
    # free for durations that end before it; the first-overflow mask must not spill into the word before. With
    # first = 57 the horizon is 63 rounds: the search for the next full round must stop at the horizon's bit.
    p = small_platform(C=4, samples=40, seed=first, S_m=first + 4, C_m=3)
    a = Residual(job=0, concurrency=3, start=np.array([first]), length=np.array([1]), probability=np.array([1.0]))
    b = Residual(job=1, concurrency=2, start=np.array([first, -1]), length=np.array([1, 1]),
                 probability=np.array([0.5, 0.5]))
    rows, oracle = _rows_and_oracle(p, [a, b])
    assert 0 < sum(r[first] > p.C for r in rows) < p.sample_count
    for c in (1, 2, 3):
        assert np.array_equal(oracle.estimates(c), _definition(p, rows, c)), c


@pytest.mark.parametrize(("s_m", "seed", "late_jobs"), [WINDOWS[0], WINDOWS[5], WINDOWS[7]])
@pytest.mark.parametrize("overload", OVERLOAD_RULES)
def test_the_survival_histogram_counts_each_sample_once_per_start_at_the_durations_it_survives(
        s_m: int, seed: int, late_jobs: int, overload: str) -> None:
    # hist[s, g]: samples where a job starting at s survives exactly durations 1..g (g = D_m: all of them), g = 0
    # included (the estimates read only g >= 1, so that column is checked here).
    p, rs = _window_case(s_m, seed, late_jobs, overload)
    rows, oracle = _rows_and_oracle(p, rs)
    paths = oracle.paths()
    for c in (1, 3):
        hist = _survival_histogram(paths, oracle._peak, oracle._first, oracle._bound, oracle._applied,
                                   *oracle._app.arrays(), c, p.S_m, p.D_m, p.C, p.cancels_waiting)
        want = np.zeros((p.S_m, p.D_m + 1), dtype=np.int64)
        for r in rows:
            for s in range(p.S_m):
                want[s, sum(not fails_given_loads(r, s, d, c, p.C, p.cancels_waiting)
                            for d in range(1, p.D_m + 1))] += 1
        assert np.array_equal(hist, want), c


@settings(max_examples=100, deadline=None)
@given(n_starts=st.integers(1, 8), horizon=st.integers(1, 12), max_d=st.integers(1, 10), samples=st.integers(1, 10**6),
       seed=st.integers(0, 2**32 - 1))
def test_the_compiled_failure_fractions_equal_numpys_cumsum_and_division_of_the_histogram(
        n_starts: int, horizon: int, max_d: int, samples: int, seed: int) -> None:
    # The plain form the estimates were computed with: survival counts summed from the longest duration down, then
    # (N - survive) / N, bit for bit.
    rng = np.random.default_rng(seed)
    diff = rng.integers(-50, 50, size=(n_starts + 1, horizon + 1)).astype(np.int64)
    zero = rng.integers(0, 50, size=n_starts + 1).astype(np.int64)
    roomy = int(rng.integers(0, samples + 1))
    hist = _histogram(diff, zero, roomy, n_starts, max_d)
    survive = np.cumsum(hist[:, ::-1], axis=1)[:, ::-1]
    want = (samples - survive[:, 1:]) / float(samples)
    got = _failure_fractions(diff, zero, roomy, n_starts, max_d, samples)
    assert got.shape == want.shape and got.tobytes() == want.tobytes()


# ---- the appending pass, against the row-by-row draw and LIFO addition and the counts from scratch ----


@st.composite
def _cdfs(draw: st.DrawFn) -> np.ndarray:
    """Cumulative outcome probabilities as a Residual builds them: some tiny (several in one draw bucket), some
    exact multiples of a bucket's width, one outcome or hundreds."""
    n = draw(st.integers(1, 200))
    kind = st.sampled_from([1.0, 1e-7, 0.25, 0.5, 3.0])
    w = np.array(draw(st.lists(st.tuples(kind, st.floats(0.01, 1.0)), min_size=n, max_size=n)))
    return Residual(0, 1, np.zeros(n, np.int64), np.ones(n, np.int64), (p := w[:, 0] * w[:, 1]) / p.sum()).cdf


@settings(max_examples=150, deadline=None)
@given(cdf=_cdfs(), key=st.integers(0, 2**64 - 1), rows=st.integers(1, 700))
def test_the_vectorised_draw_of_every_row_is_the_row_by_row_draw(cdf: np.ndarray, key: int, rows: int) -> None:
    idx = np.full(rows, -1, dtype=np.int32)
    _draw_all(np.uint64(key), cdf, idx, np.empty(rows))
    assert idx.tolist() == [_draw(np.uint64(key), n, cdf, 0, cdf.size) for n in range(rows)]


@pytest.mark.parametrize(("cdf", "single"), [
    (np.linspace(1 / 18, 1.0, 18), True),  # 17 entries, at most one strictly inside any of the 1,024 buckets
    (np.array([0.25, 0.5, 0.5, 0.5, 0.75, 1.0]), True),  # duplicates on a bucket's edge: counted by its start
    (np.array([0.1, 0.1 + 2**-30, 0.6, 1.0]), False),  # two entries inside one bucket: stepped over
    (np.concatenate([0.3 + np.arange(6) * 2**-40, [1.0]]), False),  # six inside one bucket: drawn row by row
])
def test_the_draw_finishes_with_a_buckets_inner_entry_or_by_steps_and_both_equal_the_row_by_row_draw(
        cdf: np.ndarray, single: bool) -> None:
    assert bool(_bucket_starts(cdf)[3]) == single
    rows = 5000
    for key in (1, 2**63 + 12345):
        idx = np.full(rows, -1, dtype=np.int32)
        _draw_all(np.uint64(key), cdf, idx, np.empty(rows))
        assert idx.tolist() == [_draw(np.uint64(key), n, cdf, 0, cdf.size) for n in range(rows)]
        assert idx.tolist() == np.searchsorted(cdf, uniforms(key, rows), side="right").tolist()


@pytest.mark.parametrize("u", [0.5, int(0.3 * 2**53) / 2**53])
def test_the_vectorised_draw_takes_the_next_outcome_on_a_uniform_equal_to_a_cdf_entry(u: float) -> None:
    # u equal to a cdf entry at a draw bucket's lower edge (0.5) and inside a bucket (0.3 in 53 bits): the first
    # outcome with cdf > u is drawn, as by `_draw`.
    key = np.uint64(_key_drawing(u))
    for cdf in (np.linspace(0.25, 1.0, 4), np.linspace(0.01, 1.0, 100), np.array([0.1, u, u + 2**-40, 1.0])):
        if u not in cdf:
            continue
        idx = np.zeros(1, dtype=np.int32)
        _draw_all(key, cdf, idx, np.empty(1))
        assert int(idx[0]) == int(np.searchsorted(cdf, u, side="right")) == _draw(key, 0, cdf, 0, cdf.size)


def _append_row_by_row(oracle: MonteCarloOracle, k: int) -> None:
    """The reference for the appending pass: each row that lacks job k draws it and adds it as the newest job."""
    r = oracle._appended[k]
    key = np.uint64(stream_key(oracle.platform.seed, oracle.round, r.job))
    marks = oracle._marks
    live, c_top = np.uint64(marks.live), max(marks.live.bit_length() - 1, 0)
    assert oracle._paths is not None
    for n in range(oracle.samples):
        if oracle._applied[n] == k:
            i = _draw(key, n, r.cdf, 0, r.cdf.size)
            peak, first, bits = _add_newest(oracle._paths[n], oracle._peak[n], oracle._first[n], r.start[i],
                                            r.length[i], r.concurrency, oracle.platform.capacity_top, c_top,
                                            oracle.platform.cancels_waiting)
            oracle._peak[n], oracle._first[n] = peak, first
            if bits & live:
                _mark(marks.dirty, marks.listed, marks.count, n, bits & live)
            oracle._applied[n] = k + 1
    oracle._bound[:] = oracle._peak
    oracle._behind = False


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), capacity=st.integers(2, 9), samples=st.integers(1, 260), jobs=st.integers(0, 8),
       appended=st.integers(1, 5), outcomes=st.integers(1, 70), full_list=st.booleans(),
       overload=st.sampled_from(OVERLOAD_RULES))
def test_the_appending_pass_equals_row_by_row_lifo_and_keeps_the_counts_equal_to_counts_from_scratch(
        seed: int, capacity: int, samples: int, jobs: int, appended: int, outcomes: int, full_list: bool,
        overload: str) -> None:
    # Rows, peaks, first overflows, applied counts and marks equal the row-by-row reference, every marked row is
    # listed; the kept survival counts of every live concurrency, recounted on the listed rows (or on every row,
    # as after the list overflowed: full_list), equal a count of every row from scratch.
    p = small_platform(C=capacity, samples=samples, seed=seed, C_m=min(capacity, 4), S_m=9, D_m=5, overload=overload)
    rng = np.random.default_rng(seed)
    rs = _residuals(rng, p, jobs + appended, max_outcomes=outcomes)
    fast, slow = MonteCarloOracle(p), MonteCarloOracle(p)
    for oracle in (fast, slow):
        oracle.reset(ROUND, rs[:jobs])
        for c in range(1, p.C_m + 1, 2):  # some concurrencies live (kept counts, marked rows), some not
            oracle.estimates(c)
    for m in range(jobs, jobs + appended):
        for oracle in (fast, slow):
            oracle.append(rs[m])
        fast._apply_pending()
        _append_row_by_row(slow, m - jobs)
        for name in ("_paths", "_peak", "_first", "_applied", "_bound"):
            assert np.array_equal(getattr(fast, name), getattr(slow, name)), name
        assert np.array_equal(fast._marks.dirty, slow._marks.dirty)
        for marks in (fast._marks, slow._marks):  # every marked row is listed, unless the list overflowed
            assert marks.count[1] or set(np.flatnonzero(marks.dirty)) <= set(marks.listed[: marks.count[0]].tolist())
        if full_list:
            fast._marks.count[1] = 1
        for c in range(1, p.C_m + 1):
            assert np.array_equal(fast.estimates(c), slow.estimates(c)), c
            counts = fast._counts[c]
            kept = _histogram(counts.diff, counts.zero, counts.roomy, p.S_m, p.D_m)
            scratch = _survival_histogram(fast._built(), fast._peak, fast._first, fast._bound, fast._applied,
                                          *fast._app.arrays(), c, p.S_m, p.D_m, p.capacity_top,
                                          p.cancels_waiting)
            assert np.array_equal(kept, scratch), c
    _check_rows(fast, _lifo_rows(p, rs, samples))
