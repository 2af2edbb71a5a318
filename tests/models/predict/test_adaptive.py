"""Adaptive conformal laws: h sends 1 - alpha to the level and is monotone, the given law is a capped law on the
inner law's durations, alpha's updates by hand, the edges, causality, ACI's long-run coverage bound (with delayed
feedback), validation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.predict.adaptive import GAMMA, Adaptive, level_map
from models.predict.evaluate import make_predictor, replay
from models.predict.jobs import JobTable
from models.predict.sows import rounds_law
from models.predictive import Discrete
from tests.models.predict.conftest import make_table
from tests.models.predict.test_recalibrate import SUPPORT, Fixed, spaced, uniform

UNIT = st.floats(0.001, 0.999)


@given(source=UNIT, level=UNIT, u=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=30))
def test_the_map_sends_one_minus_alpha_to_the_level_and_is_monotone(source: float, level: float,
                                                                     u: list[float]) -> None:
    assert float(level_map(np.array([source]), source, level)[0]) == pytest.approx(level)
    ends = level_map(np.array([0.0, 1.0]), source, level)
    assert ends.tolist() == [0.0, 1.0]
    h = level_map(np.sort(np.asarray(u)), source, level)
    assert np.all(np.diff(h) >= 0.0)


@given(low=st.floats(-0.5, 1.5), high=st.floats(-0.5, 1.5), u=st.lists(st.floats(0.0, 1.0), min_size=1))
def test_a_lower_alpha_never_shortens_any_quantile(low: float, high: float, u: list[float]) -> None:
    # source = 1 - alpha: a larger source (smaller alpha) maps every u lower, so every quantile of G moves up
    low, high = min(low, high), max(low, high)
    x = np.asarray(u)
    assert np.all(level_map(x, high, 0.9) <= level_map(x, low, 0.9))


@settings(max_examples=200)
@given(weights=st.lists(st.integers(0, 5), min_size=1, max_size=8).filter(lambda w: sum(w) > 0),
       alpha=st.floats(-0.2, 1.2))
def test_the_given_law_is_a_capped_law_whose_level_quantile_is_the_inner_one_minus_alpha_quantile(
        weights: list[int], alpha: float) -> None:
    probs = np.asarray([*weights, 0, 0], dtype=np.float64) / sum(weights)  # two atoms above the cap
    model = Adaptive(Fixed(probs), level=0.9).fit(spaced([1]))
    model.alpha = alpha
    out = model.predict([0])
    inner = Discrete(out.support, probs)
    positive = np.nonzero(probs > 0)[0]
    assert np.all(out.probs >= 0) and out.probs.sum() == pytest.approx(1.0)
    assert np.all(out.probs[0, positive[-1] + 1:] == 0.0)  # capped where the inner law is
    q = float(out.quantile(0.9)[0])
    if alpha <= 0:
        assert q == out.support[positive[-1]]
    elif alpha >= 1:
        assert q == out.support[positive[0]]
    elif np.all(np.abs(np.cumsum(probs) - (1 - alpha)) > 1e-9):
        assert q == float(inner.quantile(1 - alpha)[0])


@given(weights=st.lists(st.integers(0, 5), min_size=1, max_size=8).filter(lambda w: sum(w) > 0),
       alpha=st.floats(-0.2, 1.2), round_seconds=st.integers(1, 4))
def test_on_the_platforms_rounds_the_given_law_keeps_the_inner_laws_durations(
        weights: list[int], alpha: float, round_seconds: int) -> None:
    probs = np.asarray([*weights, 0, 0], dtype=np.float64) / sum(weights)
    model = Adaptive(Fixed(probs)).fit(spaced([1]))
    model.alpha = alpha
    out, inner = model.predict([0]), Discrete(SUPPORT[: probs.size], probs)
    given_rounds, inner_rounds = (rounds_law(law, 0, round_seconds, 100) for law in (out, inner))
    assert [d for d, _ in given_rounds] == [d for d, _ in inner_rounds]  # the same durations, capped alike
    assert sum(p for _, p in given_rounds) == pytest.approx(1.0) and all(p > 0 for _, p in given_rounds)


def test_alpha_follows_the_misses_on_a_hand_computed_sequence() -> None:
    # level 0.5, gamma 0.2, inner law uniform on {1, 2, 3, 4}; alpha starts at 0.5 (G = F):
    # job 0: 0.5-quantile 2, runtime 3 misses: alpha = 0.5 + 0.2 (0.5 - 1) = 0.4
    # job 1: 0.6-quantile 3, runtime 3 covered: alpha = 0.5; its law is h(0.25, 0.5, 0.75, 1) with h through
    #        (0.6, 0.5): 5/24, 5/12, 0.5 + 0.15 / 0.4 * 0.5 = 11/16, 1
    # job 2: 0.5-quantile 2, runtime 1 covered: alpha = 0.6
    # job 3: 0.4-quantile 2, runtime 4 misses: alpha = 0.5
    model = Adaptive(uniform(4), level=0.5, gamma=0.2).fit(spaced([3, 3, 1, 4]))
    alphas, quantiles = [model.alpha], []
    for i in range(4):
        law = model.predict([i])
        quantiles.append(float(law.quantile(0.5)[0]))
        if i == 1:
            np.testing.assert_allclose(np.cumsum(law.probs), [5 / 24, 5 / 12, 11 / 16, 1.0])
        model.observe(i)
        alphas.append(model.alpha)
    assert quantiles == [2.0, 3.0, 2.0, 2.0]
    np.testing.assert_allclose(alphas, [0.5, 0.4, 0.5, 0.6, 0.5])
    assert model.stats["learned"] == 4 and model.stats["missed"] == 2


def test_alpha_at_most_zero_covers_always_and_at_least_one_never() -> None:
    # gamma 1: job 0 misses (alpha 0: its quantile is the cap, 4, and covers 4); job 1 covers (alpha 0.5);
    # job 2 covers (alpha 1: its quantile is the smallest atom, 1, and counts as a miss though the runtime is 1)
    model = Adaptive(uniform(4), level=0.5, gamma=1.0).fit(spaced([4, 4, 1, 1, 1]))
    alphas, quantiles = [], []
    for i in range(5):
        alphas.append(model.alpha)
        quantiles.append(float(model.predict([i]).quantile(0.5)[0]))
        model.observe(i)
    np.testing.assert_allclose(alphas, [0.5, 0.0, 0.5, 1.0, 0.5])
    assert quantiles == [2.0, 4.0, 2.0, 1.0, 2.0]
    assert model.stats["missed"] == 2


def delayed(seed: int, n: int) -> JobTable:
    """n jobs whose runtimes drift upward (log-mean 2.5 to 5 s, capped at 100) and overlap: a job waits and runs
    while later ones are submitted, so feedback is delayed."""
    rng = np.random.default_rng(seed)
    drift = np.linspace(2.5, 5.0, n)
    runtime = np.minimum(100, np.ceil(rng.lognormal(drift, 0.5))).astype(int)
    submit = np.cumsum(rng.integers(0, 30, size=n))
    wait = rng.integers(0, 200, size=n)
    return make_table(submit=submit.tolist(), runtime=runtime.tolist(), wait=wait.tolist(),
                      requested=[100] * n)


def test_a_jobs_law_is_unchanged_when_later_jobs_runtimes_change() -> None:
    table = delayed(3, 400)
    changed = make_table(submit=table.submit.tolist(), wait=table.wait.tolist(), requested=[100] * 400,
                         runtime=np.concatenate([table.runtime[:200], 101 - table.runtime[200:]]).tolist())
    laws: list[dict[int, np.ndarray]] = [{}, {}]
    for out, t in zip(laws, (table, changed), strict=True):
        def keep(batch: list[int], law: Discrete, out: dict[int, np.ndarray] = out) -> None:
            out.update({i: law.probs[row] for row, i in enumerate(batch)})
        replay(t, Adaptive(uniform(100)), keep)
    for i in range(200):
        np.testing.assert_array_equal(laws[0][i], laws[1][i])
    assert any(not np.array_equal(laws[0][i], laws[1][i]) for i in range(200, 400))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_long_run_miscoverage_of_a_drifting_stream_is_within_acis_bound(seed: int) -> None:
    # no delay (each job done before the next is submitted): D = 1 and the bound is ACI's
    # (max(0.1, 0.9) + 0.02) / (0.02 * 2,000) = 0.023
    rng = np.random.default_rng(seed)
    runtime = np.minimum(100, np.ceil(rng.lognormal(np.linspace(2.5, 5.0, 2000), 0.5))).astype(int)
    model = Adaptive(uniform(100))
    quoted: list[float] = []

    def keep(batch: list[int], law: Discrete) -> None:
        quoted.extend(law.quantile(0.9).tolist())
    table = spaced(runtime.tolist())
    replay(table, model, keep)
    errors = [bool(y > q) for y, q in zip(table.runtime[:-1], quoted[:-1], strict=True)]  # the last is not learned
    assert model.stats["pending_max"] == 1 and model.stats["learned"] == 1999
    assert model.bound() == pytest.approx((0.9 + 0.02 * 1) / (0.02 * 1999))
    assert abs(np.mean(errors) - 0.1) <= model.bound()
    # the uniform law's own 0.9-quantile, 90 s, misses 1-2 % of the first half and 40-43 % of the second
    assert np.mean(table.runtime[:1000] > 90) < 0.02 and np.mean(table.runtime[1000:] > 90) > 0.4


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), gamma=st.sampled_from([0.02, 0.1, 0.5]), n=st.integers(50, 400))
def test_with_delayed_feedback_alpha_and_the_miscoverage_stay_within_the_bound_with_the_delay(
        seed: int, gamma: float, n: int) -> None:
    model = Adaptive(uniform(100), gamma=gamma)
    replay(delayed(seed, n), model, lambda batch, law: None)
    s, d = model.stats, model.stats["pending_max"]
    assert -0.9 * gamma * d - 1e-12 <= s["alpha_min"] and s["alpha_max"] <= 1 + 0.1 * gamma * d + 1e-12
    if s["learned"]:
        assert abs(s["missed"] / s["learned"] - 0.1) <= model.bound() + 1e-12


def test_learned_aci_is_registered_by_name_with_gamma_from_acis_bound() -> None:
    model = make_predictor("learned-aci")
    assert isinstance(model, Adaptive)
    assert model.name == "learned-aci" and model.gamma == GAMMA == 0.02 and model.level == 0.9
    assert (0.9 + GAMMA) / (GAMMA * 2000) <= 0.03


@pytest.mark.parametrize(("level", "gamma", "match"), [
    (0.0, 0.02, r"level=0.0 must lie in \(0, 1\)"),
    (1.0, 0.02, r"level=1.0 must lie in \(0, 1\)"),
    (0.9, 0.0, r"gamma=0.0 must lie in \(0, 1\]"),
    (0.9, 1.5, r"gamma=1.5 must lie in \(0, 1\]"),
])
def test_bad_settings_are_refused(level: float, gamma: float, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Adaptive(uniform(4), level=level, gamma=gamma)


def test_observe_before_fit_is_refused() -> None:
    with pytest.raises(ValueError, match="must be fitted"):
        Adaptive(uniform(4)).observe(0)
