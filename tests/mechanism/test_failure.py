"""Failure oracle: sampled paths vs the literal App. F procedure, vs exact enumeration, and Lemma 3.1."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mechanism.failure
from mechanism.engine import Engine
from mechanism.failure import MonteCarloOracle, Residual
from mechanism.failure_exact import ExactOracle, OracleTooLarge, failure_table
from mechanism.failure_literal import literal_failure
from mechanism.lifo import lifo_loads
from mechanism.platform import Platform, hoeffding_radius
from mechanism.sow import SoW
from tests.conftest import random_sow, small_platform


def random_residuals(rng: np.random.Generator, p: Platform, n_jobs: int, max_outcomes: int = 3) -> list[Residual]:
    out = []
    for k in range(n_jobs):
        m = int(rng.integers(1, max_outcomes + 1))
        start = rng.integers(-1, p.S_m, size=m)
        length = rng.integers(1, p.D_m + 1, size=m)
        prob = rng.uniform(0.1, 1.0, size=m)
        out.append(Residual(job=k, concurrency=int(rng.integers(1, p.C_m + 1)), start=start.astype(np.int64),
                            length=length.astype(np.int64), probability=prob / prob.sum()))
    return out


def mc(p: Platform, residuals: list[Residual], round_: int = 3) -> MonteCarloOracle:
    o = MonteCarloOracle(p)
    o.reset(round_, residuals)
    return o


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 6))
def test_appending_a_newer_job_equals_rebuilding_with_it(seed: int, n_jobs: int) -> None:
    p = small_platform(C=4, samples=300, seed=seed % 97)
    rs = random_residuals(np.random.default_rng(seed), p, n_jobs)
    built = mc(p, rs).paths()
    appended = mc(p, rs[:-1])
    appended.paths()
    appended.append(rs[-1])
    assert np.array_equal(built, appended.paths())


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 7), st.sampled_from([6, 9, 60]))
def test_estimates_after_lazy_appends_equal_a_rebuilt_oracle(seed: int, n_jobs: int, capacity: int) -> None:
    # Queries interleaved with appends. C = 6: rows crowd, appended jobs are applied to every row at once;
    # C = 60: rows stay roomy and appended jobs stay pending; C = 9: both happen.
    p = small_platform(C=capacity, samples=300, seed=seed % 97, C_m=3)
    rng = np.random.default_rng(seed)
    rs = random_residuals(rng, p, n_jobs)
    lazy = mc(p, rs[:1])
    for m in range(1, n_jobs + 1):
        c = int(rng.integers(1, 4))
        if rng.random() < 0.5:
            lazy.settle()  # work moved ahead of the query changes nothing
        assert np.array_equal(lazy.estimates(c), mc(p, rs[:m]).estimates(c))
        if m < n_jobs:
            lazy.append(rs[m])


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 5), st.integers(1, 3), st.sampled_from([4, 40_000]),
       st.sampled_from(["newest", "newest_demanding"]))
def test_sampled_estimates_equal_the_literal_procedure_on_the_same_draws(seed: int, n_jobs: int, c: int,
                                                                         capacity: int, overload: str) -> None:
    # C = 4 stores saturated loads in int16; C = 40,000 (C_m = C) needs int32.
    scale = capacity // 4
    p = small_platform(C=capacity, samples=400, seed=seed % 89, C_m=3 * scale, overload=overload)
    rs = random_residuals(np.random.default_rng(seed), p, n_jobs)
    c *= scale
    oracle = mc(p, rs)
    est = oracle.estimates(c)
    assert oracle.paths().dtype == (np.int8 if capacity == 4 else np.int32)
    rng = np.random.default_rng(seed + 1)
    for _ in range(4):
        s, d = int(rng.integers(0, p.S_m)), int(rng.integers(1, p.D_m + 1))
        assert est[s, d - 1] == literal_failure(p, 3, rs, c, s, d, p.sample_count)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("overload", ["newest", "newest_demanding"])
def test_sampled_estimates_are_within_the_hoeffding_bound_of_exact(seed: int, overload: str) -> None:
    p = small_platform(C=4, samples=6000, seed=seed, overload=overload)
    rs = random_residuals(np.random.default_rng(100 + seed), p, n_jobs=4)
    exact = ExactOracle(p)
    exact.reset(3, rs)
    radius = hoeffding_radius(p.sample_count, p.D_m, p.S_m, p.delta0)
    for c in (1, 2, 3):
        diff = np.abs(mc(p, rs).estimates(c) - exact.estimates(c))
        assert diff.max() <= radius, (c, diff.max(), radius)


def test_the_exact_oracle_fails_a_job_exactly_when_an_earlier_job_may_overlap_it() -> None:
    # C = 2. Earlier job A (c=2) runs round 1 w.p. 0.5, else never. A new job (c=1) at s=0, d=2 fails iff A runs.
    p = small_platform(C=2, samples=100)
    a = Residual(
        job=0, concurrency=2, start=np.array([1, -1]), length=np.array([1, 1]), probability=np.array([0.5, 0.5])
    )
    exact = ExactOracle(p)
    exact.reset(0, [a])
    e = exact.estimates(1)
    assert e[0, 0] == 0.0  # s=0, d=1: only round 0, A never there
    assert e[0, 1] == 0.5  # s=0, d=2: round 1 overlaps A w.p. 0.5
    assert e[2, 0] == 0.0  # s=2: waits through round 1 where A alone fits (load 2 <= C)


def test_waiting_job_fails_when_earlier_jobs_overflow_before_it_starts() -> None:
    loads = np.array([1, 5, 0, 0, 0, 0, 0, 0])
    table = failure_table(loads, 1, 6, 3, 4)
    assert table[1, 0] == 0.0 or loads[1] + 1 > 4  # starting at 1 collides with the overflow itself
    assert table[2, 0] == 1.0  # waiting through round 1 (load 5 > 4): cancelled
    assert table[0, 0] == 0.0


def test_lifo_evicts_newest_first_even_when_it_does_not_contribute() -> None:
    # Jobs oldest first: A runs rounds 0-1 (c=3), B runs 0-1 (c=2), C starts at 3 (c=1). C = 4.
    loads, removed = lifo_loads([(0, 2, 3), (0, 2, 2), (3, 1, 1)], horizon=4, capacity=4)
    assert loads[0] == 5
    assert removed == [None, 0, 0]  # C goes first (Remark 2), load still 5 -> B goes too
    loads, removed = lifo_loads([(0, 2, 3), (0, 2, 2)], horizon=3, capacity=4)
    assert removed == [None, 0]


@pytest.mark.parametrize(("overload", "fails"), [("newest", 1.0), ("newest_demanding", 0.0)])
def test_an_overflow_while_a_job_waits_fails_it_under_remark_2_and_not_under_newest_demanding(
        overload: str, fails: float) -> None:
    # C = 3: A and B (c = 2 each) both run round 1, which overflows. A new job (c = 1) that starts at round 2 is
    # cancelled while it waits under Remark 2 ("newest"); under "newest_demanding" B goes and round 2 is free.
    # Starting at round 1 it fails under both (it demands the overflowing round).
    p = small_platform(C=3, samples=100, overload=overload)
    a, b = (Residual(job=k, concurrency=2, start=np.array([1]), length=np.array([1]), probability=np.array([1.0]))
            for k in range(2))
    exact = ExactOracle(p)
    exact.reset(0, [a, b])
    for est in (exact.estimates(1), mc(p, [a, b], round_=0).estimates(1)):
        assert est[2, 0] == fails and est[1, 0] == 1.0 and est[0, 0] == 0.0
    assert literal_failure(p, 0, [a, b], 1, 2, 1, p.sample_count) == fails
    assert failure_table(np.array([0, 4, 0, 0, 0, 0, 0, 0]), 1, 6, 3, 3, overload == "newest")[2, 0] == fails


def test_exact_oracle_refuses_clearly_above_its_bound_and_changes_nothing() -> None:
    p = small_platform(C=4, samples=100)
    rs = random_residuals(np.random.default_rng(1), p, n_jobs=6, max_outcomes=3)
    big = [Residual(r.job, r.concurrency, np.array([0, 1, 2]), np.array([1, 1, 1]), np.full(3, 1 / 3)) for r in rs]
    oracle = ExactOracle(p, max_combinations=100)
    oracle.reset(0, big)
    with pytest.raises(
        OracleTooLarge, match=r"729 joint outcomes of 6 earlier jobs, above the bound max_combinations=100"
    ):
        oracle.estimates(1)
    engine = Engine(p, oracle="exact", max_exact_combinations=2)
    two = SoW.parse({"concurrency": 1, "value_steps": [[6, 10.0]], "outcomes": [[0, 1, 0.5], [0, 2, 0.5]]}, p)
    engine.submit("a", two)  # 1 combination of earlier outcomes (none)
    engine.submit("b", two)  # 2 combinations
    digest = engine.digest()
    with pytest.raises(OracleTooLarge, match="4 joint outcomes of 2 earlier jobs, above the bound max_combinations=2"):
        engine.submit("c", two)
    assert engine.digest() == digest and "c" not in engine.jobs


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_lemma_3_1_estimates_do_not_change_when_later_sows_are_added(seed: int) -> None:
    p = small_platform(C=4, samples=500, seed=seed % 101)
    rng = np.random.default_rng(seed)
    sows = [random_sow(rng, p) for _ in range(8)]
    cut = int(rng.integers(1, 7))

    def quotes(n: int) -> list[tuple[float | None, ...]]:
        e = Engine(p)
        out = []
        for i in range(n):
            q = e.submit(f"j{i}", sows[i])
            out.append(tuple(o.failure_raw for o in q.plan.outcomes))
            if i % 3 == 2:
                e.advance()
        return out

    assert quotes(8)[:cut] == quotes(cut)


def test_oracle_conditions_running_jobs_on_their_elapsed_duration() -> None:
    # A job running since round 0 with durations {1, 2, 3}: at round 2 only d=3 is left, one round to go.
    p = small_platform(C=4, samples=100)
    sow = SoW.parse({"concurrency": 1, "value_steps": [[6, 10.0]],
                     "outcomes": [[0, 1, 0.2], [0, 2, 0.3], [0, 3, 0.5]]}, p)
    e = Engine(p)
    e.submit("r", sow)
    e.report_arrival("r", None)
    e.advance()
    e.advance()
    (residual,) = e.residuals()
    assert residual.start.tolist() == [0]
    assert residual.length.tolist() == [1]
    assert residual.probability.tolist() == [1.0]


def test_oracle_conditions_unarrived_jobs_on_arrivals_not_yet_passed() -> None:
    p = small_platform(C=4, samples=100)
    sow = SoW.parse({"concurrency": 1, "value_steps": [[6, 10.0]],
                     "outcomes": [[0, 1, 0.5], [1, 1, 0.25], [2, 1, 0.25]]}, p)
    e = Engine(p)
    e.submit("u", sow)
    e.advance()
    (residual,) = e.residuals()
    assert residual.probability.tolist() == [0.5, 0.5]  # arrival >= 1, renormalised


@pytest.mark.parametrize("outcomes", [1, 16, 64, 65, 200])
def test_draws_for_small_and_large_supports_match_the_literal_procedure(outcomes: int) -> None:
    # Supports up to 64 outcomes are drawn by a branch-free count, larger ones by binary search.
    p = small_platform(C=4, samples=500, seed=3, S_m=8, D_m=4)
    rng = np.random.default_rng(outcomes)
    rs = [Residual(job=k, concurrency=2, start=rng.integers(-1, p.S_m, outcomes).astype(np.int64),
                   length=rng.integers(1, p.D_m + 1, outcomes).astype(np.int64),
                   probability=(w := rng.uniform(0.1, 1.0, outcomes)) / w.sum()) for k in range(3)]
    est = mc(p, rs).estimates(2)
    for s, d in ((0, 1), (2, 3), (5, 4)):
        assert est[s, d - 1] == literal_failure(p, 3, rs, 2, s, d, p.sample_count)


def one_outcome(job: int, c: int, start: int, length: int) -> Residual:
    return Residual(job=job, concurrency=c, start=np.array([start]), length=np.array([length]),
                    probability=np.array([1.0]))


def test_settle_applies_pending_jobs_once_on_crowded_rows_and_reports_whether_it_worked() -> None:
    # C = 4, C_m = 3: a row is crowded when its bound exceeds C - C_m = 1. The earlier job puts 2 on every row.
    p = small_platform(C=4, samples=50)
    oracle = mc(p, [one_outcome(0, 2, 0, 1)], round_=0)
    assert oracle.settle() is False  # no paths yet
    before = oracle.estimates(1)
    assert oracle.settle() is False  # built, nothing appended
    oracle.append(one_outcome(1, 1, 0, 1))  # bound 3 > 1 on every row: crowded
    assert oracle.settle() is True
    assert oracle.settle() is False  # nothing left pending
    assert oracle.estimates(1)[0, 0] == 0.0 and before[0, 0] == 0.0  # 2 + 1 + 1 = 4 still fits round 0
    assert oracle.estimates(2)[0, 0] == 1.0  # 2 + 1 + 2 = 5 does not


def test_settle_leaves_roomy_rows_pending() -> None:
    p = small_platform(C=40, samples=50, C_m=3)
    oracle = mc(p, [one_outcome(0, 2, 0, 1)], round_=0)
    oracle.estimates(1)
    oracle.append(one_outcome(1, 1, 0, 1))  # bound 3 <= C - C_m = 37: nothing could matter yet
    assert oracle.settle() is False
    assert oracle.estimates(3)[0, 0] == 0.0


def test_settling_after_a_query_materialised_only_some_rows_equals_a_rebuilt_oracle() -> None:
    # The earlier job (c = 2) runs in round 0 in about a tenth of the samples. After appending A (c = 1), those
    # rows alone are crowded (bound 3 > C - C_m = 1), too few to settle, so asking for c = 2 materialises A on
    # them only (bound 3 > room 2); the others keep A pending. Appending B (c = 1) crowds every row, so settle
    # must apply what each row lacks: only B, or A and B.
    p = small_platform(C=4, samples=200)
    earlier = Residual(job=0, concurrency=2, start=np.array([0, -1]), length=np.array([1, 1]),
                       probability=np.array([0.1, 0.9]))
    a, b = one_outcome(1, 1, 0, 1), one_outcome(2, 1, 0, 1)
    oracle = mc(p, [earlier], round_=0)
    oracle.estimates(1)
    oracle.append(a)
    oracle.estimates(2)
    assert 0 < int((oracle._applied == 1).sum()) < p.sample_count  # a mixed state: some rows have A, some not
    oracle.append(b)
    assert oracle.settle() is True
    rebuilt = mc(p, [earlier, a, b], round_=0)
    for c in (1, 2, 3):
        assert np.array_equal(oracle.estimates(c), rebuilt.estimates(c))
    assert oracle.estimates(3)[0, 0] == 1.0  # 1 + 1 + 3 > 4 in every sample


def test_a_row_whose_bound_leaves_room_for_the_widest_job_is_not_crowded() -> None:
    # Bound C - C_m = 1: even a job of concurrency C_m = 3 fits (1 + 3 = 4), so no query can need the row.
    p = small_platform(C=4, samples=50)
    oracle = mc(p, [], round_=0)
    oracle.estimates(1)
    oracle.append(one_outcome(0, 1, 0, 1))
    assert oracle.settle() is False
    assert oracle.estimates(3)[0, 0] == 0.0 and oracle.estimates(3)[0, 1] == 0.0


@pytest.mark.parametrize("pickled", [False, True])
def test_jobs_appended_before_the_paths_exist_are_pending_on_every_row(pickled: bool) -> None:
    # A (c = 2) is appended before any query (or the paths are dropped by pickling, as a snapshot does); it runs
    # at offset 0 in every sample, so a job of concurrency 3 starting there fails: 2 + 3 > 4.
    p = small_platform(C=4, samples=50)
    oracle = mc(p, [], round_=0)
    if pickled:
        oracle.estimates(1)
    oracle.append(one_outcome(0, 2, 0, 1))
    if pickled:
        oracle = pickle.loads(pickle.dumps(oracle))
    est = oracle.estimates(3)
    assert est[0, 0] == 1.0 and est[1, 0] == 0.0  # round 0 is full, round 1 is free
    assert np.array_equal(est, mc(p, [one_outcome(0, 2, 0, 1)], round_=0).estimates(3))


@pytest.mark.parametrize("seed", range(4))
def test_an_oracle_reset_for_a_new_round_equals_a_fresh_one(seed: int) -> None:
    # One oracle serves every round (the engine keeps it): after a round with queries, appends and settling,
    # reset must forget that round's paths and appended jobs entirely.
    p = small_platform(C=4, samples=300, seed=seed)
    rng = np.random.default_rng(seed)
    reused = mc(p, random_residuals(rng, p, 3), round_=3)
    for c in (1, 3, 2):
        reused.estimates(c)
        reused.append(random_residuals(rng, p, 1)[0])
    reused.settle()
    later = random_residuals(rng, p, 3)
    reused.reset(4, later)
    fresh = mc(p, later, round_=4)
    for c in (1, 2, 3):
        assert np.array_equal(reused.estimates(c), fresh.estimates(c))
    extra = random_residuals(rng, p, 1)[0]
    reused.append(extra)
    fresh.append(extra)
    reused.settle()
    for c in (3, 1):
        assert np.array_equal(reused.estimates(c), fresh.estimates(c))


def test_a_load_saturated_at_c_plus_1_reads_as_an_overflow_at_the_int8_boundary() -> None:
    # C = 127, C_m = 1: 128 earlier jobs of one node in round 0 saturate the load at C + 1 = 128, one more than
    # int8 holds, so the rows need a wider type; every start in round 0 or after fails (cancelled while waiting).
    p = small_platform(C=127, samples=10, C_m=1)
    est = mc(p, [one_outcome(k, 1, 0, 1) for k in range(128)], round_=0).estimates(1)
    assert est[0, 0] == 1.0 and est[1, 0] == 1.0
    assert mc(p, [one_outcome(k, 1, 0, 1) for k in range(126)], round_=0).estimates(1)[0, 0] == 0.0  # 127 fits


@pytest.mark.parametrize(("C", "C_m", "paths"), [(125, 1, np.int8), (126, 1, np.int16), (32766, 1, np.int32)])
def test_per_row_arrays_take_the_narrow_types_their_bounds_allow_and_hold_their_largest_values(
        C: int, C_m: int, paths: type[np.integer]) -> None:
    # A saturated peak (<= C + 1) fits the paths' type (int8 while C + C_m + 1 <= 127, then int16, int32); the first
    # overflow (<= horizon) fits int16 even at the platform's largest horizon (S_m, D_m <= 10,000); the applied
    # counts are int32. One job of C + 1 nodes in round 0 gives every row the largest peak and first overflow 0; no
    # job gives first overflow = horizon.
    p = small_platform(C=C, samples=4, C_m=C_m)
    full = mc(p, [one_outcome(0, C + 1, 0, 1)], round_=0)
    assert full.paths().dtype == paths and full._peak.dtype == paths and full._first.dtype == np.int16
    assert full._applied.dtype == np.int32 and full._bound.dtype == np.int64
    assert full._peak.tolist() == [C + 1] * 4 and full._first.tolist() == [0] * 4
    empty = mc(p, [], round_=0)
    empty.paths()
    assert empty._first.tolist() == [p.horizon] * 4
    widest = Platform(C=1, C_m=1, D_m=10_000, S_m=10_000, H=1.0)
    assert widest.horizon <= mechanism.failure.INT16_MAX == np.iinfo(np.int16).max


def test_an_append_beyond_the_int32_applied_count_is_refused_and_changes_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mechanism.failure, "INT32_MAX", 2)
    oracle = mc(small_platform(C=4, samples=4), [], round_=0)
    oracle.append(one_outcome(0, 1, 0, 1))
    oracle.append(one_outcome(1, 1, 0, 1))
    with pytest.raises(ValueError, match=r"appended jobs in round 0: 3 exceeds the bound 2"):
        oracle.append(one_outcome(2, 1, 0, 1))
    assert len(oracle._appended) == 2 and oracle._app.keys.size == 2


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), ops=st.lists(st.sampled_from(["append", "estimates", "settle", "paths",
                                                                  "pickle", "reset"]), min_size=1, max_size=14))
def test_the_kept_count_of_jobs_every_row_applied_is_the_least_applied_count_or_unknown(seed: int,
                                                                                     ops: list[str]) -> None:
    # settle reads the least applied count from `_applied_floor`, kept between calls: after any sequence of
    # appends, queries (which may apply jobs to some rows only), settles, full materialisations, pickling and
    # resets it is either forgotten (None) or exactly the least of `_applied`, and settle reports work exactly
    # when it changed some row's applied count.
    p = small_platform(C=4, samples=60, seed=seed)
    rng = np.random.default_rng(seed)
    jobs = iter(range(1, 100))

    def job() -> Residual:
        m = int(rng.integers(1, 4))
        prob = rng.uniform(0.1, 1.0, size=m)
        return Residual(job=next(jobs), concurrency=int(rng.integers(1, p.C_m + 1)),
                        start=np.where(rng.random(m) < 0.3, -1, rng.integers(0, p.S_m, size=m)),
                        length=rng.integers(1, p.D_m + 1, size=m).astype(np.int64), probability=prob / prob.sum())

    oracle = mc(p, [job()], round_=0)
    for op in ops:
        before = oracle._applied.copy()
        if op == "append":
            oracle.append(job())
        elif op == "estimates":
            oracle.estimates(int(rng.integers(1, p.C_m + 1)))
        elif op == "settle":
            worked = oracle.settle()
            assert worked == (not np.array_equal(before, oracle._applied))
        elif op == "paths":
            oracle.paths()
        elif op == "pickle":
            oracle = pickle.loads(pickle.dumps(oracle))
        else:
            oracle.reset(1, [job()])
        if oracle._paths is not None:
            assert oracle._floor is None or oracle._floor == int(oracle._applied.min())
            assert oracle._applied_floor() == int(oracle._applied.min())
