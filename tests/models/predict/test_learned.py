"""The learned engine: bin edges, cluster vectors and eq. 3 by hand; causality; calibration on known laws."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.law import Law
from models.predict.bins import check_edges, discretise, quantile_edges, within_bin_atoms
from models.predict.evaluate import replay
from models.predict.learned import (
    LearnedConfig,
    LearnedPredictor,
    Submission,
    capped_one,
    drift,
    smoothed_vectors,
)
from models.predictive import Discrete
from tests.models.predict.conftest import make_table


def test_bin_edges_are_inverted_cdf_quantiles_ending_at_infinity() -> None:
    # inverted-cdf quantiles of 1..10 at 1/4, 2/4, 3/4 are 3, 5, 8; the last edge is +inf
    edges = quantile_edges(np.arange(1, 11), 4)
    assert edges.tolist() == [3.0, 5.0, 8.0, np.inf]
    assert discretise([1, 3, 4, 8, 9, 10_000], edges).tolist() == [0, 0, 1, 2, 3, 3]


def test_repeated_quantiles_merge() -> None:
    assert quantile_edges([7, 7, 7, 7, 9], 4).tolist() == [7.0, np.inf]


def test_edges_validation() -> None:
    with pytest.raises(ValueError, match="strictly increasing"):
        check_edges([10, 5])
    with pytest.raises(ValueError, match="bins=0"):
        quantile_edges([1, 2], 0)
    assert check_edges([10, 20]).tolist() == [10.0, 20.0, np.inf]


def test_a_bins_atoms_are_its_within_bin_quantiles() -> None:
    # bins (.., 4], (4, inf); bin 0 holds 1..4: its 1/2 and 2/2 quantiles are 2 and 4; bin 1 holds 5..8
    atoms, owner = within_bin_atoms(np.arange(1, 9), np.array([4.0, np.inf]), 2)
    assert atoms.tolist() == [2.0, 4.0, 6.0, np.inf] and owner.tolist() == [0, 0, 1, 1]


def _within_bin_atoms_bin_by_bin(durations: list[float], edges: np.ndarray, sub: int) -> tuple[list[float], list[int]]:
    """within_bin_atoms in its plain form: np.quantile of each bin's durations in turn."""
    d = np.sort(np.asarray(durations, dtype=np.float64))
    k_of = discretise(d, edges)
    atoms: list[float] = []
    owner: list[int] = []
    for k, edge in enumerate(edges):
        inside = d[k_of == k]
        points = np.unique(np.quantile(inside, np.arange(1, sub + 1) / sub, method="inverted_cdf")) \
            if inside.size else np.array([edge])
        if np.isinf(edge):
            points = np.append(points[:-1], np.inf)
        points = points[points > (atoms[-1] if atoms else -np.inf)]
        atoms.extend(points.tolist())
        owner.extend([k] * points.size)
    return atoms, owner


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.integers(1, 60), st.floats(0.5, 5e4)), min_size=1, max_size=300), st.integers(1, 12),
       st.integers(1, 6), st.one_of(st.none(), st.lists(st.integers(1, 80), min_size=1, max_size=6, unique=True)))
def test_within_bin_atoms_for_all_bins_at_once_is_the_bin_by_bin_quantiles(
        durations: list[float], bins: int, sub: int, explicit: list[int] | None) -> None:
    edges = quantile_edges(durations, bins) if explicit is None else check_edges(sorted(explicit))  # empty bins
    atoms, owner = within_bin_atoms(durations, edges, sub)
    assert (atoms.tolist(), owner.tolist()) == _within_bin_atoms_bin_by_bin(durations, edges, sub)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 60), st.integers(1, 40), st.integers(0, 2**31), st.floats(0.0, 50.0))
def test_smoothed_vectors_by_depth_are_the_node_by_node_arithmetic(nodes: int, bins: int, seed: int,
                                                                   smoothing: float) -> None:
    rng = np.random.default_rng(seed)
    parent = np.array([-1] + [int(rng.integers(0, v)) for v in range(1, nodes)], dtype=np.int64)
    counts = rng.random((nodes, bins)) * rng.choice([1e-3, 1.0, 1e3])
    expected = np.empty_like(counts)
    for v in range(nodes):
        if parent[v] < 0:
            expected[v] = (counts[v] + 0.5) / (counts[v].sum() + 0.5 * bins)
        else:
            expected[v] = (counts[v] + smoothing * expected[parent[v]]) / (counts[v].sum() + smoothing)
    assert np.array_equal(smoothed_vectors(counts, parent, smoothing), expected)


def test_a_clusters_vector_is_smoothed_toward_its_parents() -> None:
    counts = np.array([[2.0, 2.0], [2.0, 0.0], [0.0, 2.0]])  # root, left leaf, right leaf
    vectors = smoothed_vectors(counts, np.array([-1, 0, 0]), smoothing=2.0)
    assert vectors[0].tolist() == [0.5, 0.5]  # (2 + 1/2) / (4 + 1)
    assert vectors[1].tolist() == [0.75, 0.25]  # (2 + 2 * 0.5) / (2 + 2), (0 + 2 * 0.5) / 4


def test_drift_is_eq3_and_its_noise_floor() -> None:
    statistic, noise = drift(np.array([[0.5, 0.5]]), np.array([[3.0, 1.0]]))
    assert statistic == pytest.approx((0.25**2 + 0.25**2) / 2)  # T_1/T = 1, q = (3/4, 1/4)
    assert noise == pytest.approx((0.25 + 0.25) / 2 / 4)  # sum_j p(1-p) / m / T


def test_leaf_vector_of_a_two_cluster_trace() -> None:
    # jobs with requested 100 run 10 or 20 s (3:1); jobs with requested 10^4 run 5000 s: a tree splits them
    rng = np.random.default_rng(0)
    n = 400
    short = rng.random(n) < 0.5
    runtime = np.where(short, np.where(rng.random(n) < 0.75, 10, 20), 5000)
    requested = np.where(short, 100, 10_000)
    table = make_table([10_000 * i for i in range(n)], runtime.tolist(), requested.tolist())
    config = LearnedConfig(edges=(15.0, 25.0, 6000.0), sub_atoms=1, min_leaf=20, max_leaves=2, smoothing=0.0,
                           min_train=50, refit_every=10_000, drift_every=10_000)
    predictor = LearnedPredictor(config).fit(table)
    laws: dict[int, Discrete] = {}
    replay(table, predictor, lambda batch, law: laws.update({batch[0]: law}))
    last_short = int(np.flatnonzero(short)[-1])
    law = laws[last_short]
    seen = [i for i in predictor._train if short[i]]  # the training jobs of that cluster
    p10 = np.mean(runtime[seen] == 10)
    assert law.cdf(15)[0] == pytest.approx(p10) and law.cdf(25)[0] == pytest.approx(1.0)


def test_a_submission_outside_the_table_gets_the_law_of_the_same_fields_inside_it_and_changes_nothing() -> None:
    rng = np.random.default_rng(3)
    n = 300
    runtime = rng.integers(1, 500, n)
    table = make_table(list(range(0, 100 * n, 100)), runtime.tolist(), (runtime + 100).tolist(),
                       rng.integers(0, 4, n).tolist())
    predictor = LearnedPredictor(LearnedConfig(min_train=20, refit_every=50, min_leaf=5)).fit(table)
    for i in range(250):
        predictor.observe(i)
    assert predictor.fitted
    c = predictor._hist.columns
    j = 280  # not observed
    outside = Submission(submit=c.submit[j], requested=c.requested[j], size=c.size[j], user=c.user[j],
                         group=c.group[j], executable=c.executable[j], queue=c.queue[j], partition=c.partition[j])
    law = predictor.predict_submission(outside)
    assert not predictor._has_x[j]  # the query stored nothing
    inside = predictor.predict_one(j)
    assert law.support.tolist() == inside.support.tolist() and law.probs.tolist() == inside.probs.tolist()


def test_an_unfitted_predictor_answers_the_requested_time_as_a_point() -> None:
    predictor = LearnedPredictor().fit(make_table([0, 1], [5, 6]))
    assert not predictor.fitted
    law = predictor.predict_submission(Submission(submit=2, requested=70, size=1, user=1))
    assert law.support.tolist() == [70.0] and law.probs.tolist() == [1.0]
    predictor.observe(0)
    predictor.refit()
    assert predictor.fitted


def _laws(table: object, predictor: LearnedPredictor | None = None) -> list[tuple[float, ...]]:
    out: list[tuple[float, ...]] = []
    p = predictor or LearnedPredictor(LearnedConfig(min_train=20, refit_every=30, drift_every=15, min_leaf=5))

    def keep(batch: list[int], law: Discrete) -> None:
        for row in range(len(batch)):
            out.append(tuple(law.support.tolist()) + tuple(law.probs[row].tolist()))
    replay(table, p, keep)  # type: ignore[arg-type]
    return out


@settings(max_examples=8, deadline=None)
@given(st.integers(min_value=20, max_value=110), st.integers(min_value=0, max_value=2**31))
def test_later_jobs_never_change_a_prediction(cut: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 120
    submit = np.cumsum(rng.integers(0, 50, n))
    runtime = rng.integers(1, 200, n)
    requested = runtime + rng.integers(0, 300, n)
    user = rng.integers(0, 5, n)
    wait = rng.integers(0, 100, n)
    base = make_table(submit.tolist(), runtime.tolist(), requested.tolist(), user.tolist(), wait.tolist())
    # jobs from `cut` on get other runtimes, requests, users and waits (same submission times)
    runtime2, requested2, user2, wait2 = runtime.copy(), requested.copy(), user.copy(), wait.copy()
    runtime2[cut:] = rng.integers(1, 200, n - cut)
    requested2[cut:] = runtime2[cut:] + rng.integers(0, 300, n - cut)
    user2[cut:] = rng.integers(0, 5, n - cut)
    wait2[cut:] = rng.integers(0, 100, n - cut)
    other = make_table(submit.tolist(), runtime2.tolist(), requested2.tolist(), user2.tolist(), wait2.tolist())
    first = int(np.searchsorted(submit, submit[cut]))  # jobs submitted strictly before the cut's instant
    assert _laws(base)[:first] == _laws(other)[:first]


def test_calibrated_on_known_laws() -> None:
    # two users with log-normal runtimes of different medians; coverage of each quantile within 3 standard errors
    rng = np.random.default_rng(1)
    n = 3000
    user = rng.integers(0, 2, n)
    runtime = np.maximum(1, np.round(np.exp(rng.normal(np.where(user == 0, 4.0, 7.0), 0.8)))).astype(int)
    table = make_table(list(range(0, 100 * n, 100)), runtime.tolist(), [10**6] * n, user.tolist())
    predictor = LearnedPredictor(LearnedConfig(min_train=200))
    hits = {0.5: 0, 0.9: 0, 0.95: 0}
    counted = 0

    def score(batch: list[int], law: Discrete) -> None:
        nonlocal counted
        if batch[0] < 500:  # burn-in: the model has seen few jobs
            return
        y = table.runtime[batch]
        for q in hits:
            hits[q] += int(np.sum(y <= law.quantile(q)))
        counted += len(batch)
    replay(table, predictor, score)
    for q, h in hits.items():
        se = np.sqrt(q * (1 - q) / counted)
        assert abs(h / counted - q) <= 3 * se + 0.01, (q, h / counted)


def test_config_validation() -> None:
    with pytest.raises(ValueError, match="bins=0 must be >= 1"):
        LearnedConfig(bins=0)
    with pytest.raises(ValueError, match="clustering='forest'"):
        LearnedConfig(clustering="forest")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="smoothing=-1"):
        LearnedConfig(smoothing=-1)


def test_a_drift_check_before_the_first_fit_is_skipped() -> None:
    # drift every 3 completions, the first fit at the 10th (below min_train=30): checks 3, 6 and 9 have no model
    # to compare with; the reference learns the first 9 without observe (no drift check can fall) and then
    # observes as usual, so from the first fit on both must check drift, update and predict alike
    n = 120
    runtime = [20 + i % 7 if i < 60 else 400 + 13 * (i % 5) for i in range(n)]  # the law moves: drift updates
    table = make_table(list(range(n)), runtime, user=[i % 3 for i in range(n)])
    config = LearnedConfig(bins=4, sub_atoms=2, min_leaf=2, min_train=30, refit_every=1000, drift_every=3,
                           drift_factor=0.1)
    predictor = LearnedPredictor(config).fit(table)
    reference = LearnedPredictor(config).fit(table)
    assert reference.history is not None
    laws: list[tuple[list[float], list[float]]] = []
    expected: list[tuple[list[float], list[float]]] = []
    for i in range(n):
        law, ref = predictor.predict_one(i), reference.predict_one(i)
        laws.append((law.support.tolist(), law.probs.tolist()))
        expected.append((ref.support.tolist(), ref.probs.tolist()))
        predictor.observe(i)
        if i < 9:
            reference.history.observe(i)  # its features at submission are stored by predict_one
        else:
            reference.observe(i)
    assert laws == expected
    assert predictor.stats == {**reference.stats, "fit_s": predictor.stats["fit_s"]}
    assert predictor.stats["drift_checks"] == reference.stats["drift_checks"] > 0
    assert predictor.stats["drift_updates"] > 0


def test_gmm_clustering_predicts_a_distribution() -> None:
    rng = np.random.default_rng(2)
    n = 300
    runtime = rng.integers(1, 1000, n)
    table = make_table(list(range(0, 10 * n, 10)), runtime.tolist(), [2000] * n, rng.integers(0, 3, n).tolist())
    predictor = LearnedPredictor(LearnedConfig(clustering="gmm", min_train=100, max_components=3), name="g")
    laws: list[Discrete] = []
    replay(table, predictor, lambda batch, law: laws.append(law))
    assert predictor.stats["refits"] >= 1
    assert np.allclose(laws[-1].probs.sum(axis=1), 1.0) and laws[-1].support.max() <= 2000


def _drift_updates(shift: bool) -> float:
    rng = np.random.default_rng(4)
    n = 2400
    mean = np.where((np.arange(n) >= 1200) & shift, 7.0, 4.0)  # the runtimes' log-mean jumps half-way
    runtime = np.maximum(1, np.round(np.exp(rng.normal(mean, 0.5)))).astype(int)
    table = make_table(list(range(0, 10_000 * n, 10_000)), runtime.tolist(), [10**6] * n)
    predictor = LearnedPredictor(LearnedConfig(min_train=200, refit_every=5000, drift_every=200))
    replay(table, predictor, lambda batch, law: None)
    return predictor.stats["drift_updates"]


def test_drift_triggers_the_update_policy_only_when_the_law_moves() -> None:
    assert _drift_updates(shift=False) == 0
    assert _drift_updates(shift=True) >= 1


def test_bic_picks_several_components_for_two_kinds_of_jobs() -> None:
    rng = np.random.default_rng(5)
    n = 400
    kind = rng.random(n) < 0.5
    runtime = np.where(kind, 50, 20_000) + rng.integers(0, 20, n)
    table = make_table(list(range(0, 100_000 * n, 100_000)), runtime.tolist(),
                       np.where(kind, 100, 10**6).tolist(), size=np.where(kind, 1, 64).tolist())
    predictor = LearnedPredictor(LearnedConfig(clustering="gmm", min_train=200, max_components=4))
    replay(table, predictor, lambda batch, law: None)
    assert predictor._clusters is not None
    assert predictor._clusters.model[2].n_components >= 2


def _refit_points(growth: float | None, n: int = 400) -> list[int]:
    """The completion counts at which the predictor fitted, observing n jobs one by one."""
    table = make_table(list(range(n)), [1 + i % 50 for i in range(n)], [100] * n)
    predictor = LearnedPredictor(LearnedConfig(min_train=20, refit_every=300, drift_every=10_000, min_leaf=5,
                                               refit_growth=growth)).fit(table)
    points = []
    for i in range(n):
        before = predictor.stats["refits"]
        predictor.observe(i)
        if predictor.stats["refits"] > before:
            points.append(i + 1)
    return points


def test_refit_growth_also_regrows_the_clusters_each_time_the_completions_double() -> None:
    # below min_train the global histogram every 10 completions; the tree at 20; then every 300, or at each doubling
    assert _refit_points(None) == [10, 20, 320]
    assert _refit_points(2.0) == [10, 20, 40, 80, 160, 320]


def test_a_refit_growth_of_one_or_less_is_refused() -> None:
    with pytest.raises(ValueError, match=r"refit_growth=1.0 must be > 1 \(or None\)"):
        LearnedConfig(refit_growth=1.0)


def test_learned_doubling_is_the_learned_predictor_regrown_at_each_doubling() -> None:
    from models.predict.evaluate import make_predictor

    model = make_predictor("learned-doubling")
    assert isinstance(model, LearnedPredictor)
    assert (model.name, model.config.refit_growth) == ("learned-doubling", 2.0)
    assert model.config == LearnedConfig(refit_growth=2.0)  # every other setting the default's


def _capped_one_in_numpy(atoms: np.ndarray, probs: np.ndarray, requested: float) -> Law:
    """The reference `capped_one`: the same law built with numpy arrays and checked by `Law.atoms`."""
    finite = atoms[:-1]
    k = int(np.searchsorted(atoms, requested, side="left"))
    above = finite[k:][finite[k:] > requested]
    support = np.concatenate([finite[:k], [requested], above])
    row = np.zeros(support.size)
    row[:k] = probs[:k]
    row[k] = np.cumsum(probs[k:])[-1]
    return Law.atoms(support, row)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 400), min_size=1, max_size=30, unique=True),
       st.lists(st.floats(0.0, 1.0), min_size=31, max_size=31), st.integers(1, 500))
def test_capped_one_in_lists_is_the_numpy_law_bit_for_bit(steps: list[int], raw: list[float], requested: int) -> None:
    atoms = np.append(np.sort(np.asarray(steps, dtype=np.float64)) * 1.5, np.inf)
    weights = np.asarray(raw[:atoms.size]) + 1e-3
    probs = weights / weights.sum()
    fast = capped_one(atoms.tolist(), probs.tolist(), float(requested))
    slow = _capped_one_in_numpy(atoms, probs, float(requested))
    assert np.array_equal(fast.support, slow.support) and np.array_equal(fast.probs, slow.probs)
    assert fast._cum == slow._cum and fast._support == slow._support
