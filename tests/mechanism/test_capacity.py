"""Capacity uncertainty: the AR(1) capacity model, the oracle against exact enumeration and the literal procedure,
Lemma 3.1 with capacity, and step 3 against the literal LIFO play under a capacity drop."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from mechanism.capacity import CapacityModel
from mechanism.engine import Engine, EngineError, InvalidReport
from mechanism.failure import MonteCarloOracle
from mechanism.failure_exact import ExactOracle, OracleTooLarge
from mechanism.failure_literal import capacity_paths, literal_failure
from mechanism.launch_plan import FailureEstimates, LaunchPlan, choose_plan
from mechanism.lifo import fails_given_loads, lifo_loads
from mechanism.platform import Platform, hoeffding_radius
from mechanism.sow import SoW
from tests.conftest import random_sow, small_platform
from tests.mechanism.test_failure import random_residuals
from tests.mechanism.test_truthfulness import true_utility


def model(mean: float = 4.0, phi: float = 0.5, errors: tuple[float, ...] = (-1.0, 0.0, 1.0),
          weights: tuple[float, ...] = (0.25, 0.5, 0.25), high: int = 6, **kw: object) -> CapacityModel:
    return CapacityModel(mean=mean, phi=phi, errors=errors, weights=weights, high=high, **kw)


def capped(C: int = 4, samples: int | None = 4000, seed: int = 7, cap: CapacityModel | None = None,
           **kw: object) -> Platform:
    return small_platform(C=C, samples=samples, seed=seed, capacity=cap or model(mean=float(C)), **kw)


# ---- the model ----

def test_one_step_reverts_by_phi_toward_the_mean_and_rounds_half_up_into_bounds() -> None:
    m = model(mean=4.0, phi=0.5, high=6)
    assert m.step(6, 0.0) == 5.0 and m.nodes(5.0) == 5  # 4 + 0.5 * 2 = 5
    assert m.step(5, 0.0) == 4.5 and m.nodes(4.5) == 5  # 4.5 rounds half up
    assert m.step(4.5, 0.0) == 4.25 and m.nodes(4.25) == 4  # the state stays real: no sticking at 5
    assert m.step(2, -1.0) == 2.0
    assert m.nodes(15.0) == 6 and m.nodes(-9.0) == 0  # clamped to [low, high]


def test_path_probabilities_are_products_of_error_weights_and_sum_to_one() -> None:
    m = model(mean=4.0, phi=0.0, errors=(-2.0, 0.0), weights=(0.25, 0.75), high=4)
    d = m.path_distribution(last=4, horizon=2)
    assert d == {(2, 2): 0.0625, (2, 4): 0.1875, (4, 2): 0.1875, (4, 4): 0.5625}
    d3 = model().path_distribution(last=6, horizon=3)
    assert abs(sum(d3.values()) - 1.0) < 1e-12


def test_sampled_paths_follow_the_step_of_each_draw() -> None:
    m = model(mean=10.0, phi=0.8, errors=(-2.5, -0.5, 0.5, 3.0), weights=(0.1, 0.4, 0.4, 0.1), high=14, low=3)
    k = m.paths(seed=5, round_=2, last=12, horizon=6, samples=300)
    assert k.min() >= 3 and k.max() <= 14
    errs = set(m.errors)
    for n in range(0, 300, 37):  # each round follows from the last with one of the errors
        states = {12.0}
        for i in range(6):
            states = {m.step(x, e) for x in states for e in errs if m.nodes(m.step(x, e)) == k[n, i]}
            assert states


def test_sampled_paths_match_the_exact_path_law() -> None:
    m = model(mean=4.0, phi=0.5, high=6)
    exact = m.path_distribution(last=6, horizon=2)
    k = m.paths(seed=1, round_=0, last=6, horizon=2, samples=20_000)
    for path, p in exact.items():
        share = float(np.mean((k[:, 0] == path[0]) & (k[:, 1] == path[1])))
        assert abs(share - p) < 0.02, (path, share, p)


@pytest.mark.parametrize(("kw", "match"), [
    ({"weights": (0.5, 0.5)}, "errors has 3 entries but weights has 2"),
    ({"weights": (0.2, 0.5, 0.2)}, "weights sum to 0.9"),
    ({"weights": (0.0, 0.5, 0.5)}, "weights must be positive"),
    ({"errors": (float("nan"), 0.0, 1.0)}, "errors must be finite"),
    ({"low": 7}, "low=7 exceeds high=6"),
    ({"mean": 9.0}, r"mean=9.0 lies outside \[low, high\] = \[0, 6\]"),
    ({"phi": 1.0}, "less than 1"),
    ({"quantile": 0.0}, "greater than 0"),
    ({"high": "6"}, "text, not a number"),
])
def test_bad_models_are_refused_naming_the_field(kw: dict[str, object], match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        model(**kw)  # type: ignore[arg-type]


def test_a_fixed_capacity_platform_serialises_as_before_and_a_model_round_trips() -> None:
    p = small_platform()
    assert "capacity" not in p.model_dump() and "capacity" not in json.loads(p.model_dump_json())
    q = capped()
    again = Platform.model_validate(json.loads(q.model_dump_json()))
    assert again == q and again.capacity == q.capacity


def test_prices_use_the_quantile_of_the_stationary_capacity() -> None:
    m = model(mean=40.0, phi=0.0, errors=(-10.0, 0.0, 10.0), weights=(0.2, 0.6, 0.2), high=60)
    assert m.model_copy(update={"quantile": 0.1}).price_capacity() == 30.0
    assert m.price_capacity() == 40.0
    assert m.model_copy(update={"quantile": 0.9}).price_capacity() == 50.0
    p = capped(C=40, cap=m.model_copy(update={"quantile": 0.1}), C_m=3)
    assert p.sim_capacity == pytest.approx(30.0 * (1 - p.epsilon / 10))


def exact_quantiles(m: CapacityModel, last: int, horizon: int, current: int | None = None) -> list[float]:
    """The `quantile` of each round's capacity from the exact path law: the least c with P(C <= c) >= q."""
    paths = m.path_distribution(last, horizon, current)
    out = []
    for i in range(horizon):
        law: dict[int, float] = {}
        for path, pr in paths.items():
            law[path[i]] = law.get(path[i], 0.0) + pr
        acc = 0.0
        for c in sorted(law):
            acc += law[c]
            if acc >= m.quantile:
                out.append(float(c))
                break
    return out


@pytest.mark.parametrize(("last", "current", "q"), [(9, None, 0.3), (3, None, 0.3), (3, None, 0.7), (0, 9, 0.5),
                                                    (6, 2, 0.3)])
def test_per_round_price_capacities_are_the_exact_conditional_quantiles(last: int, current: int | None,
                                                                         q: float) -> None:
    # Weights chosen so that no round's CDF comes within 0.02 of q in these cases (7 sampling standard errors).
    m = model(mean=6.0, phi=0.7, errors=(-2.0, 0.0, 1.0), weights=(0.24, 0.52, 0.24), high=10, quantile=q)
    got = m.price_capacities(last, 6, current)
    assert got.tolist() == exact_quantiles(m, last, 6, current)
    if current is not None:
        assert got[0] == current
    assert not got.flags.writeable


def test_price_capacities_reach_the_stationary_quantile_and_stay() -> None:
    m = model(mean=40.0, phi=0.5, errors=(-6.0, 0.0, 6.0), weights=(0.2, 0.6, 0.2), high=60)
    far = m.price_capacities(last=60, horizon=80)  # mixing after 20 rounds: the rest repeat round 20's quantile
    assert far[0] > far[-1] and np.all(far[20:] == far[19]) and far[-1] == m.price_capacity()
    assert m.price_capacities(last=60, horizon=0).size == 0 and m.price_capacities(1, 1, current=50).tolist() == [50]


def test_menus_price_each_round_at_its_conditional_capacity_and_fixed_c_at_c() -> None:
    m = model(mean=6.0, phi=0.7, errors=(-2.0, 0.0, 1.0), weights=(0.24, 0.52, 0.24), high=10)
    p = capped(C=6, cap=m, C_m=2, samples=200)
    e = Engine(p)
    e.report_capacity(0, 3)  # a drop reported now: the near rounds are priced at a lower C'
    y = np.linspace(0.5, 3.0, p.horizon)
    e.prices.commit(0, y)
    cq = np.array(exact_quantiles(m, 0, p.horizon, current=3)) * (1 - p.epsilon / 10)
    by_hand = (4 * p.H * p.D_m) ** (y / cq) / (2 * p.D_m)
    assert np.allclose(e.current_menu().unit, by_hand, rtol=1e-12)  # type: ignore[attr-defined]
    assert np.allclose(e.price_menu(0, p.horizon)[1], by_hand, rtol=1e-12)
    fixed = Engine(small_platform(C=6, C_m=2, samples=200))
    fixed.prices.commit(0, y)
    c_prime = 6 * (1 - p.epsilon / 10)
    assert fixed.price_capacities(0, 4) is None
    assert np.allclose(fixed.current_menu().unit, (4 * p.H * p.D_m) ** (y / c_prime) / (2 * p.D_m),  # type: ignore[attr-defined]
                       rtol=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 6))
def test_truthful_plan_is_never_beaten_by_a_misreport_under_per_round_capacity_prices(seed: int, drop: int) -> None:
    # The menu depends on the feed only (exogenous), so the truthfulness check of test_truthfulness holds with it.
    p = capped(C=4, samples=300, seed=seed % 1000)
    rng = np.random.default_rng(seed)
    e = busy_engine(p, rng)
    e.report_capacity(e.now, drop)
    assert_no_misreport_wins(e, p, rng)


def busy_engine(p: Platform, rng: np.random.Generator) -> Engine:
    """An engine with 0-4 random SoWs submitted, some rounds played between them."""
    e = Engine(p)
    for i in range(int(rng.integers(0, 5))):
        e.submit(f"bg{i}", random_sow(rng, p))
        if rng.random() < 0.3:
            e.advance()
    return e


def assert_no_misreport_wins(e: Engine, p: Platform, rng: np.random.Generator) -> None:
    """A random true SoW's plan earns, at its true law, at least what a random misreport's plan earns."""
    truth = random_sow(rng, p, max_outcomes=4)
    lie = random_sow(rng, p, max_outcomes=4, concurrency=int(rng.integers(1, truth.concurrency + 1)))
    menu = e.current_menu()

    def plan_for(sow: SoW) -> LaunchPlan:
        est = FailureEstimates.from_raw(e._current_oracle().estimates(sow.concurrency), p.failure_threshold)
        return choose_plan(sow, e.now, menu, est)

    honest = true_utility(plan_for(truth), truth, truth, e, menu)
    assert honest >= true_utility(plan_for(lie), lie, truth, e, menu) - 1e-9 * max(1.0, abs(honest))


# ---- the oracle ----

def test_a_degenerate_model_gives_the_fixed_capacity_estimates() -> None:
    fixed = small_platform(C=4, samples=500, seed=3)
    degenerate = capped(C=4, samples=500, seed=3, cap=model(mean=4.0, phi=0.0, errors=(0.0,), weights=(1.0,), high=4))
    rs = random_residuals(np.random.default_rng(3), fixed, n_jobs=4)
    for c in (1, 2, 3):
        a, b = ExactOracle(fixed), ExactOracle(degenerate)
        a.reset(2, rs)
        b.reset(2, rs)
        assert np.array_equal(a.estimates(c), b.estimates(c))
        m1, m2 = MonteCarloOracle(fixed), MonteCarloOracle(degenerate)
        m1.reset(2, rs)
        m2.reset(2, rs, 4)
        assert np.array_equal(m1.estimates(c), m2.estimates(c))


def test_the_exact_oracle_fails_a_job_when_a_round_it_runs_has_too_few_nodes() -> None:
    # No earlier job. Capacity C_tau = 2 or 1 (iid, 1/2 each); a job of c = 2 fails iff some round it runs has 1.
    cap = model(mean=2.0, phi=0.0, errors=(-1.0, 0.0), weights=(0.5, 0.5), high=2)
    p = capped(C=2, samples=100, cap=cap, C_m=2)
    exact = ExactOracle(p)
    exact.reset(0, [], last_capacity=2)
    e = exact.estimates(2)
    assert e[0, 0] == 0.5 and e[0, 1] == 0.75 and e[3, 2] == 0.875
    assert np.all(exact.estimates(1) == 0.0)  # c = 1 always fits and nothing is waiting to overflow


def test_the_exact_oracle_refuses_too_many_capacity_paths_before_enumerating_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # 3 errors over S_m + D_m - 1 = 29 rounds: 3^29 paths, which reset must not try to build
    p = capped(C=4, samples=100, S_m=20, D_m=10)

    def enumerate_paths(*args: object, **kw: object) -> None:
        raise AssertionError("the paths were enumerated")

    monkeypatch.setattr(CapacityModel, "path_distribution", enumerate_paths)
    exact = ExactOracle(p, max_combinations=10_000)
    exact.reset(0, [], last_capacity=4)
    assert exact.combinations() == 3 ** p.horizon
    with pytest.raises(OracleTooLarge, match=r"0 earlier jobs and capacity paths, above the bound "
                                             r"max_combinations=10000"):
        exact.estimates(1)
    exact.reset(0, [], last_capacity=4, current_capacity=4)  # a known C_0: one step fewer to enumerate
    assert exact.combinations() == 3 ** (p.horizon - 1)


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 4), st.integers(1, 3), st.integers(0, 6),
       st.one_of(st.none(), st.integers(0, 9)))
def test_sampled_estimates_equal_the_literal_procedure_on_the_same_draws(seed: int, n_jobs: int, c: int,
                                                                         last: int, current: int | None) -> None:
    cap = model(mean=4.0, phi=0.6, errors=(-2.0, -1.0, 0.0, 1.0), weights=(0.1, 0.2, 0.5, 0.2), high=6)
    p = capped(C=4, samples=400, seed=seed % 89, cap=cap, C_m=3)
    rs = random_residuals(np.random.default_rng(seed), p, n_jobs)
    oracle = MonteCarloOracle(p)
    oracle.reset(3, rs, last, current)
    est = oracle.estimates(c)
    rng = np.random.default_rng(seed + 1)
    for _ in range(4):
        s, d = int(rng.integers(0, p.S_m)), int(rng.integers(1, p.D_m + 1))
        assert est[s, d - 1] == literal_failure(p, 3, rs, c, s, d, p.sample_count, last, current)


@pytest.mark.parametrize(("seed", "levels", "current"), [(0, 2, None), (1, 2, 2), (2, 3, None), (3, 3, 5)])
def test_sampled_estimates_are_within_the_hoeffding_bound_of_exact_enumeration(seed: int, levels: int,
                                                                               current: int | None) -> None:
    errors, weights = ((-1.0, 0.0), (0.3, 0.7)) if levels == 2 else ((-2.0, 0.0, 1.0), (0.2, 0.6, 0.2))
    cap = model(mean=4.0, phi=0.5, errors=errors, weights=weights, high=5)
    p = capped(C=4, samples=6000, seed=seed, cap=cap, D_m=2, S_m=3)
    rs = random_residuals(np.random.default_rng(100 + seed), p, n_jobs=3, max_outcomes=2)
    exact = ExactOracle(p)
    exact.reset(3, rs, last_capacity=3, current_capacity=current)
    oracle = MonteCarloOracle(p)
    oracle.reset(3, rs, 3, current)
    radius = hoeffding_radius(p.sample_count, p.D_m, p.S_m, p.delta0)
    for c in (1, 2, 3):
        diff = np.abs(oracle.estimates(c) - exact.estimates(c))
        assert diff.max() <= radius, (c, diff.max(), radius)


def test_appending_with_capacity_equals_rebuilding() -> None:
    p = capped(C=4, samples=500, seed=11, C_m=3)
    rs = random_residuals(np.random.default_rng(11), p, n_jobs=5)
    built = MonteCarloOracle(p)
    built.reset(1, rs, 5)
    lazy = MonteCarloOracle(p)
    lazy.reset(1, rs[:2], 5)
    lazy.estimates(2)
    for r in rs[2:]:
        lazy.append(r)
    assert np.array_equal(lazy.estimates(3), built.estimates(3))
    assert np.array_equal(lazy.paths(), built.paths())


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_lemma_3_1_estimates_do_not_change_when_later_sows_are_added(seed: int) -> None:
    p = capped(C=4, samples=400, seed=seed % 101, C_m=3)
    rng = np.random.default_rng(seed)
    sows = [random_sow(rng, p) for _ in range(8)]
    caps = [int(x) for x in rng.integers(1, 7, size=4)]
    cut = int(rng.integers(1, 7))

    def quotes(n: int) -> list[tuple[float | None, ...]]:
        e = Engine(p)
        out = []
        for i in range(n):
            q = e.submit(f"j{i}", sows[i])
            out.append(tuple(o.failure_raw for o in q.plan.outcomes))
            if i % 3 == 2:
                e.report_capacity(e.now, caps[e.now])
                e.advance()
        return out

    assert quotes(8)[:cut] == quotes(cut)


def test_the_capacity_drop_raises_the_quoted_failure() -> None:
    cap = model(mean=8.0, phi=0.9, errors=(-2.0, 0.0, 2.0), weights=(0.2, 0.6, 0.2), high=12)
    p = capped(C=8, samples=2000, seed=2, cap=cap, C_m=3)
    rs = random_residuals(np.random.default_rng(2), p, n_jobs=4)
    high, low = MonteCarloOracle(p), MonteCarloOracle(p)
    high.reset(0, rs, 12)
    low.reset(0, rs, 4)
    assert float(low.estimates(3).mean()) > float(high.estimates(3).mean())


def test_a_known_current_capacity_is_the_first_round_of_every_path() -> None:
    m = model(mean=4.0, phi=0.5, high=6)
    d = m.path_distribution(last=6, horizon=3, current=2)
    assert all(path[0] == 2 for path in d) and abs(sum(d.values()) - 1.0) < 1e-12
    assert d == {(2, *rest): p for rest, p in m.path_distribution(last=2, horizon=2).items()}
    assert np.all(m.paths(seed=1, round_=0, last=6, horizon=3, samples=50, current=9)[:, 0] == 6)  # clamped


def test_quotes_do_not_depend_on_when_the_round_oracle_was_built() -> None:
    # prepare_round is not a logged command: a capacity report after it must leave the same quotes as without it.
    p = capped(C=4, samples=300, seed=5, C_m=3)
    rng = np.random.default_rng(5)
    sows = [random_sow(rng, p) for _ in range(4)]

    def run(prepare: bool) -> tuple[list[tuple[float | None, ...]], str]:
        e = Engine(p)
        out = []
        e.submit("a", sows[0])
        e.advance()
        if prepare:
            e.prepare_round()
        e.submit("b", sows[1])  # conditions on round 0's capacity (4)
        e.report_capacity(1, 1)
        for i, sow in enumerate(sows[2:]):  # condition on round 1's reported capacity
            out.append(tuple(o.failure_raw for o in e.submit(f"c{i}", sow).plan.outcomes))
        return out, e.digest()

    assert run(False) == run(True)


def test_capacity_paths_of_a_fixed_platform_are_c() -> None:
    assert np.all(capacity_paths(small_platform(C=5), 0, 3) == 5)


# ---- the round: step 3 against the literal LIFO play under a capacity drop ----

def one_round_sow(p: Platform, concurrency: int, duration: int) -> SoW:
    return SoW.parse({"concurrency": concurrency, "value_steps": [[p.S_m, 40.0]],
                      "outcomes": [[0, duration, 1.0]]}, p)


@pytest.mark.parametrize("drop", [8, 6, 4, 2, 0])
def test_step_3_evicts_as_the_literal_lifo_play_against_the_reported_capacity(drop: int) -> None:
    p = small_platform(C=8, samples=200, C_m=3, D_m=4, S_m=6)
    e = Engine(p)
    specs = [(3, 4), (2, 4), (3, 4), (1, 4)]  # (concurrency, duration): all start now and run 4 rounds
    for i, (c, d) in enumerate(specs):
        e.submit(f"j{i}", one_round_sow(p, c, d))
    for i in range(len(specs)):
        e.report_arrival(f"j{i}", None)
    starts = {i: e.jobs[f"j{i}"].plan.start_for(0, None) for i in range(len(specs))}
    capacities = [8, drop, drop, 8]
    for t, c in enumerate(capacities):
        e.report_capacity(t, c)
    events = []
    for _ in capacities:
        events += [ev for ev in e.advance().events if ev.data.get("reason") == "overload"]
    removed = {int(ev.job[1:]): ev.round for ev in events}
    scheduled = [i for i in range(len(specs)) if starts[i] is not None]  # the others ended NOT_SCHEDULED
    jobs = [(starts[i], specs[i][1], specs[i][0]) for i in scheduled]
    _, reference = lifo_loads(jobs, len(capacities), capacities)  # type: ignore[arg-type]
    assert removed == {scheduled[k]: r for k, r in enumerate(reference) if r is not None}
    assert drop >= 6 or removed  # a deep drop does evict or cancel someone


def test_a_waiting_job_fails_when_capacity_drops_before_its_start() -> None:
    loads = [2, 2, 0, 0]
    assert fails_given_loads(loads, 2, 1, 1, [4, 1, 4, 4])  # round 1: 2 > 1, an earlier job goes first
    assert not fails_given_loads(loads, 2, 1, 1, [4, 2, 4, 4])
    assert fails_given_loads(loads, 2, 2, 3, [4, 4, 4, 2])  # runs into a round of capacity 2 with c = 3


# ---- the feed ----

def test_capacity_reports_are_validated_and_a_refusal_changes_nothing() -> None:
    e = Engine(small_platform(C=4, samples=100))
    before = e.digest()
    for args, error, match in [
        ((0, -1), EngineError, r"capacity=-1 is outside \[0, 1000000\]"),
        ((0, 2.5), EngineError, "capacity=2.5 is not a whole number of nodes"),
        ((0, True), EngineError, "capacity=True is not a whole number of nodes"),
        ((0, 1_000_001), EngineError, "outside"),
        (("0", 3), EngineError, "round='0' is not a whole round number"),
        ((2_000_000, 3), EngineError, "more than 1000000 rounds after the current round 0"),
    ]:
        with pytest.raises(error, match=match):
            e.report_capacity(*args)  # type: ignore[arg-type]
    assert e.digest() == before
    e.report_capacity(0, 3)
    reported = e.digest()
    assert reported != before
    with pytest.raises(InvalidReport, match=r"capacity of round 0 was already reported \(3 nodes\)"):
        e.report_capacity(0, 2)
    e.advance()
    with pytest.raises(InvalidReport, match="round=0 has been played"):
        e.report_capacity(0, 2)
    assert e.capacity_last == 3 and e.capacity_of(5) == 3


def test_without_reports_the_digest_is_the_fixed_capacity_digest() -> None:
    p = small_platform(C=4, samples=100)
    a, b = Engine(p), Engine(p)
    sow = one_round_sow(p, 2, 2)
    for e in (a, b):
        e.submit("x", sow)
        e.advance()
    b.report_capacity(1, 4)  # a report of C for the next round: the state differs until it is played
    assert a.digest() != b.digest()
    a.advance()
    b.advance()
    assert a.digest() == b.digest()  # C was C all along
