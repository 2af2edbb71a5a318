"""The published protocol beside ours: the published split, the moments law, BO on a validation split that never
reads the test days."""

from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from models.cuc.jobs import JobConfig
from models.cuc.protocol import MaxLaw, Split, constraint, cut_down, fit_moments_law, forecaster_spec, make_split
from models.cuc.run import Evaluator, Phase, Theta, choose_law, on_test_samples, train
from models.forecast.ar import AR1
from models.forecast.tsdec import TSDec
from models.law import Law

JOBS = JobConfig(demand_multiple=1.2, max_share=0.2)  # few, large jobs: fast


def series(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(336)
    return 1000 + 80 * np.sin(2 * np.pi * t / 24) + rng.normal(0, 15, t.size)


def test_published_split_trains_on_75_percent_of_the_windows_back_to_back_with_the_test() -> None:
    split = Split.published(336)
    windows = 336 - 120 - 24 + 1  # every origin with 120 hours of history and a whole scope
    assert split.train_origins == range(120, 120 + int(0.75 * windows)) == range(120, 264)
    assert split.test_origins == range(264, 313)
    last_target = split.train_origins[-1] + split.T - 1
    overlapping = [o for o in split.test_origins if o <= last_target]
    assert len(overlapping) == 23  # the published code's leak: test scopes over training targets
    clean = Split(336)
    assert clean.test_origins.start > clean.train_origins[-1] + clean.T - 1  # ours: no overlap


def test_make_split_refuses_a_training_length_for_the_published_split_and_unknown_layouts() -> None:
    assert make_split(336) == Split(336) and make_split(336, "clean", 72) == Split(336, train_hours=72)
    with pytest.raises(ValueError, match="train_hours=72: the published split fixes it"):
        make_split(336, "published", 72)
    with pytest.raises(ValueError, match="split='leaky' is not one of clean, published"):
        make_split(336, "leaky")
    with pytest.raises(ValueError, match="split='leaky' is not one of clean, published"):
        Split(336, layout="leaky")
    with pytest.raises(ValueError, match="validation_hours=144 must lie in"):
        Split(336).validation_origins(144)


def test_moments_law_cuts_the_forecast_by_minus_phi_inverse_p_sigma_minus_mu() -> None:
    rng = np.random.default_rng(1)
    deltas = rng.normal(3.0, 2.0, (50, 24)) * np.linspace(1, 2, 24)
    law = fit_moments_law(deltas)
    mu, sd = deltas.mean(axis=0), deltas.std(axis=0, ddof=1)
    forecast = np.full(24, 500.0)
    for p in (0.001, 0.1):
        cut = -stats.norm.ppf(p) * sd - mu  # the published cut-down, kappa 1
        assert np.allclose(constraint(forecast, law, p, 1.0), forecast - cut, rtol=1e-6)
    with pytest.raises(ValueError, match="1 error window"):
        fit_moments_law(deltas[:1])


def test_max_law_cuts_by_the_elementwise_larger_of_the_newest_cut_with_kappa_and_the_moments_cut() -> None:
    # three steps by hand: Z ~ N(0, 1) in both laws, so cut_h = -(mu_h + kappa sigma_h z_p)
    one = np.ones(1)
    newest = Law.mixture(one, np.zeros(1), one, np.array([0.0, 1.0, -2.0]), np.array([1.0, 2.0, 0.5]))
    moments = Law.mixture(one, np.zeros(1), one, np.array([5.0, 0.0, 0.0]), np.array([2.0, 1.0, 3.0]))
    p, kappa = 0.05, 2.0
    z = stats.norm.ppf(p)  # -1.645
    newest_cut = -(np.array([0.0, 1.0, -2.0]) + kappa * np.array([1.0, 2.0, 0.5]) * z)  # 3.29, 5.58, 3.64
    moments_cut = -(np.array([5.0, 0.0, 0.0]) + np.array([2.0, 1.0, 3.0]) * z)  # kappa 1: -1.71, 1.64, 4.93
    both = MaxLaw(newest, moments)
    expected = np.array([newest_cut[0], newest_cut[1], moments_cut[2]])  # each step's larger cut, by hand
    assert np.allclose(cut_down(both, p, kappa), expected, rtol=1e-6)
    assert np.allclose(cut_down(both, p, kappa), np.maximum(cut_down(newest, p, kappa), cut_down(moments, p, 1.0)))
    forecast = np.array([10.0, 4.0, 20.0])
    assert np.allclose(constraint(forecast, both, p, kappa), np.maximum(forecast - expected, 0.0), rtol=1e-6)
    assert constraint(forecast, both, p, kappa)[1] == 0.0  # floored at zero like each law
    with pytest.raises(ValueError, match="the newest law has 3 steps and the moments law 2"):
        MaxLaw(newest, Law.mixture(one, np.zeros(1), one, np.zeros(2), np.ones(2)))


def test_max_law_of_a_sample_is_its_newest_law_with_theta_and_its_frozen_moments_law() -> None:
    y = series()
    evs = {law: Evaluator(y, Split(len(y)), JOBS, 0, errors=law, validation_hours=48)
           for law in ("max", "newest", "moments")}
    theta = Theta(inflation=1.7)
    for origin in (230, 300):  # a validation sample and a test sample
        both = evs["max"].law(theta, origin)
        assert isinstance(both, MaxLaw)
        for law in ("newest", "moments"):
            alone = evs[law].law(theta, origin)
            part = getattr(both, law)
            assert isinstance(alone, Law)
            assert np.array_equal(part.loc, alone.loc) and np.array_equal(part.scale, alone.scale)
    sample = evs["max"].test[0]
    capacities = {law: ev.constraint(theta, sample, 0.01, True) for law, ev in evs.items()}
    assert np.array_equal(capacities["max"], np.minimum(capacities["newest"],
                                                        evs["moments"].constraint(replace(theta, inflation=1.0),
                                                                                  sample, 0.01, True)))
    with pytest.raises(ValueError, match="validation_hours=120 leaves fewer than 2 training windows"):
        Evaluator(y, Split(len(y)), JOBS, 0, errors="max", validation_hours=120)


def test_gmm_laws_are_centred_by_their_mixture() -> None:
    law = Law.mixture(np.ones(1), np.array([2.0]), np.ones(1), np.zeros(3), np.ones(3))
    assert not law.loc.any()
    assert np.allclose(constraint(np.zeros(3), law, 0.5, 1.0), 2.0)


def test_cuc_forecasters_come_from_the_forecast_registry() -> None:
    tsdec, ar1 = forecaster_spec("tsdec").build(60), forecaster_spec("ar1").build(60)
    assert isinstance(tsdec, TSDec) and tsdec.method == "classical" and tsdec.period == 24
    assert isinstance(ar1, AR1) and ar1.method == "ols"
    with pytest.raises(ValueError, match="forecaster='arima' is not one of tsdec, ar1"):
        forecaster_spec("arima")


def test_moments_law_of_the_test_uses_every_training_window_and_validation_only_earlier_ones() -> None:
    y = series()
    ev = Evaluator(y, Split(len(y)), JOBS, 0, errors="moments", validation_hours=48)
    assert [s.origin for s in ev.validate] == list(range(216, 264))
    assert ev.moments_origins(300) == range(120, 264)  # the test: refitted on the whole training span
    validation = ev.moments_origins(216)
    assert validation == range(120, 193) and validation[-1] + 24 <= 216  # targets before the validation days
    theta = Theta()
    law = ev.law(theta, 300)
    assert isinstance(law, Law)
    expected = ev.bank.errors("tsdec", 120, range(120, 264))
    assert np.allclose(law.loc, expected.mean(axis=0)) and np.allclose(law.scale, expected.std(axis=0, ddof=1))
    with pytest.raises(ValueError, match="validation_hours=120 leaves fewer than 2 training windows"):
        Evaluator(y, Split(len(y)), JOBS, 0, errors="moments", validation_hours=120)


@pytest.mark.parametrize("errors", ["moments", "newest", "max", "select"])
def test_bo_never_reads_the_test_days(errors: str) -> None:
    """Changing every hour after the training targets (hours 287 on, the test days) leaves BO's trials and θ
    unchanged."""
    y = series()
    perturbed = y.copy()
    perturbed[287:] = np.random.default_rng(9).uniform(0, 3000, y.size - 287)
    chosen = []
    for values in (y, perturbed):
        ev = Evaluator(values, Split(len(values)), JOBS, 0, refit_every=24, errors=errors, validation_hours=48)
        chosen.append(train(ev, 0.01, 4, Theta(), 0))
    assert chosen[0].theta == chosen[1].theta and chosen[0].trials == chosen[1].trials
    assert np.array_equal(chosen[0].outcome.utility, chosen[1].outcome.utility)
    if errors == "select":  # the law chosen is θ's, so it too is blind to the test days
        assert chosen[0].theta.errors in ("newest", "moments")
        scores = [{law: (r.util, r.violation) for law, r in c.candidates.items()} for c in chosen]
        assert scores[0] == scores[1]


def _phase(util: float, violation: float) -> Phase:
    return Phase(util=util, violation=violation, time_s=0.0, samples=48)


def test_select_takes_the_higher_util_among_the_laws_meeting_p_else_the_lower_vio() -> None:
    p = 0.001
    # 2019's validation days at p = 0.1 % (docs/cuc.md): moments fills more but misses p
    assert choose_law({"newest": _phase(0.9240, 0.0), "moments": _phase(0.9381, 0.0634)}, p) == "newest"
    # both meet p: the higher Util
    assert choose_law({"newest": _phase(0.9519, 0.0), "moments": _phase(0.9512, 0.0)}, p) == "newest"
    assert choose_law({"newest": _phase(0.95, 0.001), "moments": _phase(0.96, 0.0)}, p) == "moments"
    # neither meets p: the lower Vio, whatever its Util; on equal Vio the higher Util
    assert choose_law({"newest": _phase(0.99, 0.02), "moments": _phase(0.90, 0.01)}, p) == "moments"
    assert choose_law({"newest": _phase(0.91, 0.01), "moments": _phase(0.90, 0.01)}, p) == "newest"
    with pytest.raises(ValueError, match="no law to choose among"):
        choose_law({}, p)


def test_select_is_each_laws_bo_on_the_validation_days_and_tests_with_the_law_chosen() -> None:
    y = series(3)
    p = 0.01
    runs = {}
    for law in ("newest", "moments"):
        ev = Evaluator(y, Split(len(y)), JOBS, 0, refit_every=24, errors=law, validation_hours=48)
        runs[law] = (ev, train(ev, p, 3, Theta(), 0))
    select = Evaluator(y, Split(len(y)), JOBS, 0, refit_every=24, errors="select", validation_hours=48)
    picked = train(select, p, 3, Theta(), 0)
    for law, (_, alone) in runs.items():
        assert picked.candidates[law].util == alone.outcome.util
        assert picked.candidates[law].violation == alone.outcome.vio
    # the rule by hand on the two validation outcomes
    meet = [law for law, (_, r) in runs.items() if r.outcome.vio <= p]
    expected = (max(meet, key=lambda law: runs[law][1].outcome.util) if meet
                else min(runs, key=lambda law: runs[law][1].outcome.vio))
    ev, alone = runs[expected]
    assert picked.theta == replace(alone.theta, errors=expected)
    tested, _ = on_test_samples(select, picked.theta, p)
    reference, _ = on_test_samples(ev, alone.theta, p)
    assert np.array_equal(tested.utility, reference.utility) and np.array_equal(tested.violation, reference.violation)


def test_select_needs_a_law_named_by_theta_and_theta_names_one_law() -> None:
    y = series()
    ev = Evaluator(y, Split(len(y)), JOBS, 0, errors="select", validation_hours=48)
    with pytest.raises(ValueError, match="errors='select': θ must name its law"):
        ev.law(Theta(), 300)
    with pytest.raises(ValueError, match="errors='select' is not one of full, newest, moments, max"):
        Theta(errors="select")
    with pytest.raises(ValueError, match="errors='gmm' is not one of full, newest, moments, max, select"):
        Evaluator(y, Split(len(y)), JOBS, 0, errors="gmm")
    with pytest.raises(ValueError, match="validation_hours=120 leaves fewer than 2 training windows"):
        Evaluator(y, Split(len(y)), JOBS, 0, errors="select", validation_hours=120)
