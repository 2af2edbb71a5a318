"""Alg. 1 and Alg. 4 end to end on a synthetic series: determinism, the phases' fields, the baselines."""

from dataclasses import replace

import numpy as np
import pytest

from models.cuc.greedy import greedy_schedule
from models.cuc.jobs import JobConfig
from models.cuc.problem import violation_rate
from models.cuc.protocol import Sample, Split
from models.cuc.rounding import solve_rounded
from models.cuc.run import (
    PENALTY,
    Evaluator,
    Hindsight,
    Outcome,
    Theta,
    exceedance,
    fill,
    hindsight,
    on_test_samples,
    run_cuc,
    train,
    violated_hours,
    violation_ucb,
)
from models.law import Law

JOBS = JobConfig(demand_multiple=1.2, max_share=0.2)  # few, large jobs: fast


def series(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(336)
    return 1000 + 80 * np.sin(2 * np.pi * t / 24) + rng.normal(0, 15, t.size)


def evaluator(seed: int = 0) -> Evaluator:
    """The seed's split with one training day instead of six and a law per day (fast)."""
    y = series()
    return Evaluator(y, Split(len(y), train_hours=24), JOBS, seed, refit_every=24)


def drop_times(out: dict) -> dict:
    return {k: ({kk: vv for kk, vv in v.items() if kk != "time_s"} if isinstance(v, dict) else v)
            for k, v in out.items()}


def test_same_seed_same_result() -> None:
    a = run_cuc(series(), 0.05, 3, seed=1, ev=evaluator(1))
    b = run_cuc(series(), 0.05, 3, seed=1, ev=evaluator(1))
    assert drop_times(a) == drop_times(b)
    assert set(a["exceedance"]) == {"train", "test"}
    assert all(0 <= x <= 1 for x in a["exceedance"].values())
    for phase, samples in (("train", 24), ("test", 25)):
        assert set(a[phase]) == {"util", "violation", "time_s", "samples"}
        assert a[phase]["samples"] == samples
        assert 0 < a[phase]["util"] <= 1.0 + 1e-9 and 0 <= a[phase]["violation"] <= 1


def test_uncertainty_and_bo_lower_the_violation() -> None:
    ev = evaluator()
    theta = Theta()
    naive, _ = on_test_samples(ev, theta, 0.5, uncertain=False)
    trained = train(ev, 0.01, 6, theta, 0)
    cuc, _ = on_test_samples(ev, trained.theta, 0.01)
    assert naive.vio > 0.05  # Ã = the point forecast: violated whenever the capacity binds and falls short
    assert trained.outcome.error(0.01, "sample") <= naive.error(0.01, "sample")
    assert cuc.vio < naive.vio and cuc.util < naive.util
    assert len(trained.trials) == 6 and trained.trials[0]["inflation"] == theta.inflation  # θ0 first


def test_exact_baseline_is_scored_like_the_greedy() -> None:
    ev = evaluator()
    outcome = ev.two_stage(Theta(), ev.test[:3], time_limit=1.0)
    assert outcome.utility.shape == (3,) and np.all(outcome.utility <= outcome.bound + 1e-6)


def test_exact_baseline_is_the_rounded_lp_under_the_forecast_and_the_milp_only_adds() -> None:
    ev = evaluator()
    samples = ev.test[:3]
    rounded = ev.two_stage(Theta(), samples)
    by_hand = [solve_rounded(s.jobs, ev.constraint(Theta(), s, 0.5, uncertain=False)) for s in samples]
    assert rounded.utility.tolist() == [r.utility for r in by_hand]
    assert rounded.violation.tolist() == [violation_rate(s.jobs, r.start, s.truth)
                                          for s, r in zip(samples, by_hand, strict=True)]
    assert np.all(ev.two_stage(Theta(), samples, time_limit=1.0).utility >= rounded.utility)


def test_util_vio_and_the_three_violation_errors_follow_their_formulas() -> None:
    o = Outcome(np.array([9.0, 8.0]), np.array([10.0, 10.0]), np.array([0.0, 2 / 24]))
    assert o.util == pytest.approx(0.85) and o.vio == pytest.approx(1 / 24)
    assert o.error(0.01, "sample") == pytest.approx((2 / 24 - 0.01) / 2)
    assert o.error(0.05, "mean") == 0.0
    # "ucb": 2 violated hours of 48; the bound solves P(Bin(48, U) <= 2) = 0.05
    from scipy.stats import binom
    u = violation_ucb(2, 48)
    assert binom.cdf(2, 48, u) == pytest.approx(0.05, abs=1e-9)
    assert o.error(0.01, "ucb") == pytest.approx(u - 0.01)
    with pytest.raises(ValueError, match="objective='x'"):
        o.error(0.01, "x")


def test_ucb_closed_form_without_violations() -> None:
    # P(Bin(n, U) = 0) = (1 - U)^n = alpha gives U = 1 - alpha^(1/n): 0.087 % for the 144 x 24 training hours
    for n in (1, 24, 3456):
        assert violation_ucb(0, n) == pytest.approx(1 - 0.05 ** (1 / n), rel=1e-9)
    assert violation_ucb(0, 3456) < 0.001 < violation_ucb(1, 3456)
    assert violation_ucb(5, 5) == 1.0
    assert Outcome(np.ones(144), np.ones(144), np.zeros(144)).error(0.001, "ucb") == 0.0


def test_exceedance_of_a_known_gaussian_law() -> None:
    # a constant forecast with i.i.d. N(0, 15^2) noise: the law's q-quantile is exceeded below about q of the time
    rng = np.random.default_rng(3)
    y = 1000 + rng.normal(0, 15, 336)
    ev = Evaluator(y, Split(len(y), train_hours=144), JOBS, 0)
    share = exceedance(ev, Theta(components=1, inflation=1.0), ev.train, 0.1)
    assert share.shape == (24,)
    assert abs(float(share.mean()) - 0.1) < 0.05
    with pytest.raises(ValueError, match=r"q=1\.0"):
        exceedance(ev, Theta(), ev.train, 1.0)
    with pytest.raises(ValueError, match="no samples"):
        exceedance(ev, Theta(), [], 0.1)


@pytest.mark.parametrize(("call", "match"), [
    (lambda: run_cuc(series(), 1.5, 1, jobs=JOBS), "p=1.5"),
    (lambda: train(evaluator(), 0.01, 0, Theta(), 0), "bo-steps=0"),
    (lambda: Theta(forecaster="lstm"), "forecaster='lstm'"),
    (lambda: Theta(inflation=0.0), "invalid θ"),
    (lambda: Evaluator(series(), Split(336), JOBS, 0, refit_every=0), "refit_every=0"),
    (lambda: Evaluator(series(), Split(336), JOBS, 0, order="size"), "order='size'"),
    (lambda: train(evaluator(), 0.01, 1, Theta(), 0, forecasters=("tsdec", "lstm")), "'lstm' is not one of"),
    (lambda: train(evaluator(), 0.01, 1, Theta(), 0, forecasters=("ar1", "ar1")), "names a forecaster twice"),
    (lambda: train(evaluator(), 0.01, 1, Theta(), 0, forecasters=("ar1",)), "must include θ0's forecaster 'tsdec'"),
    (lambda: violation_ucb(3, 2), "violated=3"),
    (lambda: violation_ucb(0, 10, alpha=1.0), "alpha=1.0"),
])
def test_bad_input(call, match: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=match):
        call()


def test_newest_errors_option_and_its_validation() -> None:
    y = series()
    ev = Evaluator(y, Split(len(y), train_hours=24), JOBS, 0, refit_every=1, errors="newest")
    law = ev.law(Theta(), ev.test[0].origin)
    assert isinstance(law, Law) and law.scale.shape == (24,)
    with pytest.raises(ValueError, match="errors='old'"):
        Evaluator(y, Split(336), JOBS, 0, errors="old")


def test_hindsight_is_the_best_kappa_of_the_grid_that_meets_p() -> None:
    ev = evaluator()
    theta, p, grid = Theta(), 0.02, (0.25, 0.5, 1.0, 2.0, 3.0)
    best = hindsight(ev, theta, ev.test, p, grid)
    runs = {k: on_test_samples(ev, replace(theta, inflation=k), p)[0] for k in grid}  # brute force over the grid
    meeting = {k: o for k, o in runs.items() if o.vio <= p}
    assert meeting and best.inflation in meeting
    assert best.util == max(o.util for o in meeting.values()) and best.violation == meeting[best.inflation].vio
    # a truth at half the forecast: no kappa of a small grid meets p
    halved = [Sample(s.origin, s.jobs, s.truth / 2) for s in ev.test]
    assert hindsight(ev, theta, halved, p, (0.1,)) == Hindsight(None, None, None)
    with pytest.raises(ValueError, match="no samples"):
        hindsight(ev, theta, [], p)
    with pytest.raises(ValueError, match="grid"):
        hindsight(ev, theta, ev.test, p, (0.0,))


def test_violated_hours_add_up_to_the_violation_rate() -> None:
    ev = evaluator()
    theta, p = Theta(inflation=0.5), 0.2
    hours = violated_hours(ev, theta, ev.test, p)
    outcome, _ = on_test_samples(ev, theta, p)
    assert sum(hours.values()) == round(outcome.vio * len(ev.test) * 24)  # Vio = violated sample-hours / (S T)
    assert all(ev.test[0].origin <= h < ev.test[-1].origin + 24 and n <= 24 for h, n in hours.items())
    # a truth at half the capacity: more violated hours, and each sample's count is its own eq. (4) rate times T
    halved = [Sample(s.origin, s.jobs, s.truth / 2) for s in ev.test[:3]]
    for s in halved:
        start = greedy_schedule(s.jobs, ev.constraint(theta, s, p, True), ev.order)
        assert sum(violated_hours(ev, theta, [s], p).values()) == round(24 * violation_rate(s.jobs, start, s.truth))
    assert sum(violated_hours(ev, theta, halved, p).values()) > sum(violated_hours(ev, theta, ev.test[:3], p).values())


def test_the_phase_times_leave_out_utils_denominator(monkeypatch: pytest.MonkeyPatch) -> None:
    # u*_s (an LP per sample) is not part of BO or Alg. 4: each bound sleeps 20 ms, and none of it may be timed
    import time

    import models.cuc.run as run

    real = run.lp_bound

    def slow_bound(*args, **kw):  # type: ignore[no-untyped-def]
        time.sleep(0.02)
        return real(*args, **kw)

    monkeypatch.setattr(run, "lp_bound", slow_bound)
    ev = evaluator()
    tick = time.perf_counter()
    trained = train(ev, 0.05, 1, Theta(), 0)
    assert time.perf_counter() - tick - trained.time_s >= 0.02 * len(ev.train)
    tick = time.perf_counter()
    _, seconds = on_test_samples(ev, trained.theta, 0.05)
    assert time.perf_counter() - tick - seconds >= 0.02 * len(ev.test)
    assert set(ev.bounds) == {s.origin for s in ev.train + ev.test}


def test_bo_with_a_single_forecaster_is_the_search_without_one() -> None:
    ev = evaluator()
    plain = train(ev, 0.05, 4, Theta(), 3)
    named = train(ev, 0.05, 4, Theta(), 3, forecasters=("tsdec",))
    assert named.theta == plain.theta and named.trials == plain.trials
    assert all("forecaster" not in t for t in plain.trials)


def test_bo_over_forecasters_keeps_the_trial_whose_recomputed_score_is_least() -> None:
    ev, p = evaluator(), 0.05
    trained = train(ev, p, 8, Theta(), 2, forecasters=("tsdec", "ar1"))
    assert trained.trials[0]["forecaster"] == "tsdec"  # θ0 first
    assert {t["forecaster"] for t in trained.trials} == {"tsdec", "ar1"}

    def score(t: dict) -> float:  # each trial scored again, from its θ alone
        theta = Theta(**{k: t[k] for k in ("forecaster", "fit_window", "error_windows", "components", "inflation")})
        outcome = ev.greedy(theta, ev.train, p)
        return PENALTY * outcome.error(p, "sample") + (1.0 - fill(outcome, ev.train))

    scores = [score(t) for t in trained.trials]
    assert score(vars(trained.theta)) == pytest.approx(min(scores), abs=1e-12)
    assert trained.theta.forecaster in {"tsdec", "ar1"}
