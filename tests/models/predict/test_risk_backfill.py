"""The compiled easy-learned simulator equals the policy-driven one, job for job, and its law kernels equal Law's."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.data import KTH_SP2, PWA_TRACES
from models.hpc.jobs import Job, Workload
from models.hpc.metrics import bsld
from models.hpc.point_backfill import PointMode, simulate_point
from models.hpc.prediction_backfill import BackfillResult, simulate_backfill
from models.law import Law
from models.predict.jobs import JobTable, load_trace
from models.predict.learned import LearnedConfig, LearnedPredictor, capped_one
from models.predict.risk_backfill import (
    capped_law,
    law_cdf,
    law_quantile,
    law_quantile_above,
    pairwise_sum,
    replay_risk,
    simulate_risk,
)
from models.predict.schedulers import (
    RiskPolicy,
    _Replay,
    make_policy,
    portfolio_choice,
    portfolio_replays,
    run_predictive,
)
from tests.models.predict.conftest import make_table

SMALL = LearnedConfig(bins=4, sub_atoms=2, min_leaf=2, max_leaves=4, window=12, min_train=4, refit_every=9,
                      drift_every=4, drift_factor=0.1)  # a tree after 4 completions, refits and drift updates often


def _both(workload: Workload, table: JobTable, **options: object) -> tuple[BackfillResult, BackfillResult,
                                                                           RiskPolicy, RiskPolicy]:
    reference, _ = make_policy("easy-learned", table, **options)  # type: ignore[arg-type]
    compiled, _ = make_policy("easy-learned", table, **options)  # type: ignore[arg-type]
    assert compiled.compiles
    ref = simulate_backfill(workload, reference, pass_if_new_fits=False)
    fast = simulate_risk(workload, compiled.predictor, compiled.risk, compiled.reservation_q, compiled.order_q)
    return ref, fast, reference, compiled


def _stats(policy: RiskPolicy) -> dict[str, float]:
    return {k: v for k, v in policy.predictor.stats.items() if k != "fit_s"}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.0, 1e3), min_size=0, max_size=300), st.integers(0, 300))
def test_pairwise_sum_is_numpys_sum_of_a_slice(values: list[float], first: int) -> None:
    a = np.array([values], dtype=np.float64)  # a law's probabilities: one row, summed from an index on
    first = min(first, len(values))
    assert 0.0 + pairwise_sum(a[0], first, len(values) - first) == float(a[0][first:].sum())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 400), min_size=1, max_size=40, unique=True),
       st.lists(st.floats(0.0, 1.0), min_size=41, max_size=41), st.integers(1, 700), st.integers(-5, 700),
       st.floats(0.01, 0.99))
def test_the_compiled_law_answers_as_the_list_law_bit_for_bit(steps: list[int], raw: list[float], requested: int,
                                                              x: int, q: float) -> None:
    atoms = np.append(np.sort(np.asarray(steps, dtype=np.float64)) * 1.5, np.inf)
    weights = np.asarray(raw[:atoms.size]) + 1e-3
    probs = weights / weights.sum()
    law = capped_one(atoms.tolist(), probs.tolist(), float(requested))
    sup, prob, cum = np.zeros(atoms.size), np.zeros(atoms.size), np.zeros(atoms.size)
    n = capped_law(atoms, probs, float(requested), sup, prob, cum)
    assert sup[:n].tolist() == law._support and prob[:n].tolist() == law.probs.tolist() and cum[:n].tolist() == law._cum
    assert law_quantile(sup, cum, n, q) == law.z_quantile(q)
    assert law_cdf(sup, cum, n, float(x)) == law.z_cdf(x)
    above = law.z_quantile_above(x, q)
    got = law_quantile_above(sup, prob, n, float(x), q)
    assert (np.isnan(got) and above is None) or got == above


rows = st.lists(st.tuples(st.integers(0, 60), st.integers(1, 40), st.integers(0, 40), st.integers(1, 4),
                          st.integers(1, 3)), min_size=1, max_size=40)


@settings(max_examples=200, deadline=None)
@given(rows, st.sampled_from([0.5, 0.9]), st.sampled_from([0.4, 0.7]), st.sampled_from([0.5, 0.8]),
       st.sampled_from([SMALL, replace(SMALL, edges=(4.0, 15.0, 30.0), refit_growth=1.5)]))
def test_compiled_easy_learned_equals_the_policy_simulator(data: list[tuple[int, int, int, int, int]],
                                                           risk: float, reservation_q: float, order_q: float,
                                                           config: LearnedConfig) -> None:
    # small integer times: many events share an instant and many predicted ends share the shadow time; the
    # small configuration fits trees, checks drift and updates the vectors within a few dozen completions
    data = sorted(data, key=lambda r: r[0])
    jobs = tuple(Job(id=i, submit=s, runtime=d, size=r, requested=d + extra)
                 for i, (s, d, extra, r, _) in enumerate(data))
    table = make_table([r[0] for r in data], [r[1] for r in data], [r[1] + r[2] for r in data],
                       [r[4] for r in data], size=[r[3] for r in data])
    ref, fast, reference, compiled = _both(Workload(jobs, 4), table, risk=risk, reservation_q=reservation_q,
                                           order_q=order_q, config=config)
    assert fast == ref
    assert _stats(compiled) == _stats(reference)
    assert compiled.predictor.history is not None and reference.predictor.history is not None
    ours, theirs = compiled.predictor.history, reference.predictor.history
    assert ours.completed == theirs.completed and ours.user_count == theirs.user_count
    assert {u: list(d) for u, d in ours.recent.items()} == {u: list(d) for u, d in theirs.recent.items()}


@pytest.mark.parametrize("trace,jobs", [(KTH_SP2, 3000), *((t, 6000) for t in PWA_TRACES)])
def test_compiled_easy_learned_equals_the_policy_simulator_on_real_traces(trace: Path, jobs: int) -> None:
    if not Path(trace).exists():
        pytest.skip(f"the shared trace {trace} is not present")
    workload, table = load_trace(trace, jobs)
    ref, fast, reference, compiled = _both(workload, table)
    assert fast == ref
    assert _stats(compiled) == _stats(reference) and _stats(reference)["drift_updates"] > 0


@settings(max_examples=100, deadline=None)
@given(st.integers(2, 30), st.integers(1, 12), st.integers(1, 12), st.sampled_from([None, 1.5, 2.0]),
       st.lists(st.integers(1, 200), min_size=80, max_size=80))
def test_next_learning_counts_the_completions_until_observe_refits_or_checks_drift(
        min_train: int, refit_every: int, drift_every: int, growth: float | None, runtimes: list[int]) -> None:
    # (no drift check before the first fit, at min_train or the 10th completion, whatever drift_every)
    config = LearnedConfig(bins=3, sub_atoms=1, min_leaf=1, window=10, min_train=min_train, refit_every=refit_every,
                           drift_every=drift_every, refit_growth=growth)
    n = len(runtimes)
    predictor = LearnedPredictor(config).fit(make_table(list(range(n)), runtimes, user=[i % 3 for i in range(n)]))
    expected = predictor.next_learning()
    for i in range(n):
        before = predictor.stats["refits"] + predictor.stats["drift_checks"]
        predictor.predict_one(i)
        predictor.observe(i)
        learned = predictor.stats["refits"] + predictor.stats["drift_checks"] > before
        expected -= 1
        assert learned == (expected == 0)
        if learned:
            expected = predictor.next_learning()


def test_observe_many_refuses_completions_past_the_next_learning() -> None:
    table = make_table(list(range(30)), [5 + i for i in range(30)])
    predictor = LearnedPredictor(SMALL).fit(table)
    for i in range(30):
        predictor.predict_one(i)
    with pytest.raises(ValueError, match=r"5 completions: observe learns after 4"):
        predictor.observe_many([0, 1, 2, 3, 4])
    fresh = LearnedPredictor(SMALL).fit(table)
    with pytest.raises(ValueError, match="features at submission stored"):
        fresh.observe_many([0, 1])


def test_run_predictive_compiles_only_the_policies_it_can() -> None:
    table = make_table([0, 0, 1], [10, 20, 5])
    assert make_policy("easy-learned", table)[0].compiles
    for options in ({"guard": 0.5}, {"calibrate": 10}, {"wide_risk": 0.5}, {"corrector": "reqtime"},
                    {"config": LearnedConfig(clustering="gmm")}):
        assert not make_policy("easy-learned", table, **options)[0].compiles, options
    jobs = tuple(Job(id=i, submit=s, runtime=d, size=1, requested=d * 10) for i, (s, d) in
                 enumerate([(0, 10), (0, 20), (1, 5)]))
    run = run_predictive(Workload(jobs, 1), table, "easy-learned")
    assert run.starts == simulate_backfill(Workload(jobs, 1), make_policy("easy-learned", table)[0]).starts


def test_simulate_risk_refuses_a_predictor_it_cannot_run() -> None:
    table = make_table([0, 1], [10, 20])
    jobs = tuple(Job(id=i, submit=i, runtime=d, size=1, requested=d * 10) for i, d in enumerate([10, 20]))
    gmm = LearnedPredictor(LearnedConfig(clustering="gmm")).fit(table)
    with pytest.raises(ValueError, match="clustering='gmm'"):
        simulate_risk(Workload(jobs, 1), gmm, 0.9, 0.4, 0.5)
    with pytest.raises(ValueError, match="the workload has 1 jobs and the predictor's table 2"):
        simulate_risk(Workload(jobs[:1], 1), LearnedPredictor().fit(table), 0.9, 0.4, 0.5)
    later = Workload(tuple(Job(id=j.id, submit=j.submit + 1, runtime=j.runtime, size=1, requested=j.requested)
                           for j in jobs), 1)
    with pytest.raises(ValueError, match="the workload's submit differs from the predictor's table"):
        simulate_risk(later, LearnedPredictor().fit(table), 0.9, 0.4, 0.5)
    used = LearnedPredictor().fit(table)
    used.predict_one(0)
    used.observe(0)
    with pytest.raises(ValueError, match="freshly fitted"):
        simulate_risk(Workload(jobs, 1), used, 0.9, 0.4, 0.5)


replays = st.lists(st.tuples(st.integers(0, 60), st.integers(1, 40), st.integers(0, 40), st.integers(1, 4),
                             st.lists(st.integers(1, 60), min_size=1, max_size=5, unique=True),
                             st.lists(st.floats(0.0, 1.0), min_size=6, max_size=6), st.integers(1, 80),
                             st.floats(1.0, 80.0)), min_size=1, max_size=40)


@settings(max_examples=300, deadline=None)
@given(replays, st.sampled_from([0.5, 0.9, 1.0]), st.sampled_from([0.4, 0.7]))
def test_the_compiled_portfolio_replays_equal_the_policy_simulator_start_for_start(
        data: list[tuple[int, int, int, int, list[int], list[float], int, float]], risk: float,
        reservation_q: float) -> None:
    # small integer times (shared instants and shadow times), laws as the predictor caps them (atoms below the
    # requested time, its mass above onto it, zero-mass atoms beyond), predictions and keys free of the laws
    data = sorted(data, key=lambda r: r[0])
    jobs = [Job(id=i, submit=s, runtime=d, size=r, requested=d + extra)
            for i, (s, d, extra, r, *_) in enumerate(data)]
    laws = []
    for (_, d, extra, _, steps, raw, _, _) in data:
        atoms = np.append(np.sort(np.asarray(steps, dtype=np.float64)) * 1.5, np.inf)
        weights = np.asarray(raw[:atoms.size]) + 1e-3
        laws.append(capped_one(atoms.tolist(), (weights / weights.sum()).tolist(), float(d + extra)))
    point = [min(r[6], j.requested) if r[6] % 3 else r[6] for r, j in zip(data, jobs, strict=True)]
    key, predicted = [r[7] for r in data], [r[6] for r in data]
    workload, requested = Workload(tuple(jobs), 4), [j.requested for j in jobs]
    threshold = 1.0 - risk - 1e-12
    ref_pp = simulate_backfill(workload, _Replay(list(point), [float(p) for p in point], requested, None,
                                                 threshold, "conditional", reservation_q))
    ref_learned = simulate_backfill(workload, _Replay(list(predicted), list(key), requested, laws, threshold,
                                                      "conditional", reservation_q))
    pp = simulate_point(workload, np.array(requested), np.zeros(len(jobs), dtype=np.int64), PointMode.GIVEN, True,
                        False, np.array(point))
    learned = replay_risk(workload, predicted, key, laws, threshold, reservation_q)
    assert pp == ref_pp and learned == ref_learned
    fast = portfolio_choice(jobs, 4, point, laws, key, predicted, risk, reservation_q)
    slow = portfolio_choice(jobs, 4, point, laws, key, predicted, risk, reservation_q, compiled=False)
    assert repr(fast) == repr(slow) == repr((*slow[:1], bsld(jobs, pp.starts), bsld(jobs, learned.starts)))


@pytest.mark.parametrize(("risks", "learned"), [(None, "easy-learned"), ((0.8, 0.95), "risk=0.95")])
def test_the_portfolio_on_compiled_replays_makes_every_choice_and_start_of_the_reference(
        monkeypatch: pytest.MonkeyPatch, risks: tuple[float, ...] | None, learned: str) -> None:
    if not Path(KTH_SP2).exists():
        pytest.skip(f"the shared trace {KTH_SP2} is not present")
    import models.predict.schedulers as schedulers

    workload, table = load_trace(KTH_SP2, 3000)
    fast = run_predictive(workload, table, "easy-learned", portfolio=24, portfolio_risks=risks)
    # both portfolios replay through portfolio_replays: its first nine arguments, then compiled=False
    monkeypatch.setattr(schedulers, "portfolio_replays",
                        lambda *args: portfolio_replays(*args[:9], compiled=False))  # type: ignore[misc]
    slow = run_predictive(workload, table, "easy-learned", portfolio=24, portfolio_risks=risks)
    for run in (fast, slow):
        run.details.pop("seconds")
        run.details["portfolio"].pop("replay_s")
        run.details["engine"].pop("fit_s")
    assert fast == slow and fast.details["portfolio"]["chosen"][learned] > 0


def test_replay_risk_and_the_given_point_mode_refuse_rows_that_do_not_match_the_jobs() -> None:
    jobs = (Job(id=0, submit=0, runtime=5, size=1, requested=10),)
    law = Law.atoms(np.array([10.0]), np.array([1.0]))
    with pytest.raises(ValueError, match=r"one row per job of the workload \(1 >= 1\), got 2, 1 and 1"):
        replay_risk(Workload(jobs, 1), [5, 5], [5.0], [law], 0.1, 0.4)
    one = np.array([10])
    with pytest.raises(ValueError, match=r"mode=GIVEN takes a given prediction per job if and only if it is GIVEN"):
        simulate_point(Workload(jobs, 1), one, one, PointMode.GIVEN, True, False)
    with pytest.raises(ValueError, match=r"mode=TSAFRIR takes a given prediction per job"):
        simulate_point(Workload(jobs, 1), one, one, PointMode.TSAFRIR, True, False, one)
    with pytest.raises(ValueError, match=r"given must have shape \(1,\) and every prediction >= 1, got shape \(1,\)"):
        simulate_point(Workload(jobs, 1), one, one, PointMode.GIVEN, True, False, np.array([0]))
