"""The user mixture: the user's law by hand, the weights' closed forms (pooled and per user), the mixture itself,
nothing learned before a completion, causality, the registered names, validation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.predict.adaptive import Adaptive
from models.predict.evaluate import make_predictor, replay
from models.predict.jobs import JobTable
from models.predict.learned import LearnedConfig, LearnedPredictor
from models.predict.user_mix import UserMix, user_laws
from models.predictive import Discrete
from tests.models.predict.conftest import make_table
from tests.models.predict.test_recalibrate import Fixed

EDGES = (10.0, 20.0, 30.0)  # bins (0, 10], (10, 20], (20, 30], (30, inf)
PROBS = np.zeros(35)
PROBS[[4, 14, 24]] = 0.25, 0.5, 0.25  # on 1..35 s: masses 0.25, 0.5, 0.25, 0 in the four bins, at 5, 15 and 25 s


def inner() -> Fixed:
    return Fixed(PROBS)


def learn(model: UserMix, n: int) -> None:
    """Predict and complete jobs 0, ..., n - 1 in turn."""
    for i in range(n):
        model.predict([i])
        model.observe(i)


def test_the_users_law_is_its_recent_runtimes_capped_at_the_request() -> None:
    law = user_laws([[100, 300, 300], [50]], np.array([200.0, 1000.0]))
    assert law.support.tolist() == [50.0, 100.0, 200.0]
    np.testing.assert_allclose(law.probs, [[0.0, 1 / 3, 2 / 3], [1.0, 0.0, 0.0]])


def two_users() -> JobTable:
    # jobs 0 and 1 have no history (not scored); job 2 (user 1, last runtime 5): its user's law puts mass 1 on
    # the runtime's bin (0, 10], the inner law 0.25; job 3 (user 2, last runtime 5) ran 15: mass 0 and 0.5
    return make_table(submit=[0, 1000, 2000, 3000, 4000], runtime=[5, 5, 5, 15, 5], user=[1, 2, 1, 2, 3],
                      requested=[100] * 5)


def test_each_weight_maximises_its_users_scores_plus_the_prior_of_five_mean_jobs() -> None:
    model = UserMix(inner(), edges=EDGES).fit(two_users())
    learn(model, 4)
    # pooled: log(0.25 + 0.75 w) + log(0.5 (1 - w)) is greatest at w = 1/3
    assert model.weight(None) == model.weight(3) == pytest.approx(0.33)
    # user 1: log(0.25 + 0.75 w) + 5/2 (both logs): 3.5 0.75 / (0.25 + 0.75 w) = 2.5 / (1 - w), w = 4/9
    assert model.weight(1) == pytest.approx(0.44)
    # user 2: 3.5 / (1 - w) = 2.5 0.75 / (0.25 + 0.75 w), w = 2/9
    assert model.weight(2) == pytest.approx(0.22)
    assert model.stats["user_scored"] == 2


def test_the_law_is_the_weighted_mixture_of_the_users_runtimes_and_the_inner_law() -> None:
    table = make_table(submit=[0, 1000, 2000, 3000, 4000, 5000], runtime=[5, 5, 5, 15, 25, 5],
                       user=[1, 2, 1, 2, 1, 1], requested=[100] * 6)
    model = UserMix(inner(), edges=EDGES).fit(table)
    learn(model, 4)
    w = model.weight(1)
    out = model.predict([5, 4])  # job 5: user 1's last runtimes 5, 5 (job 4 not done); job 4 the same
    assert out.support.tolist() == list(range(1, 36))
    expected = (1 - w) * PROBS
    expected[4] += w  # user 1's runtimes: 5 s and 5 s
    np.testing.assert_allclose(out.probs, [expected] * 2)


def test_a_job_without_user_history_gets_the_inner_law_and_nothing_is_learned_before_a_completion() -> None:
    model = UserMix(inner(), edges=EDGES).fit(two_users())
    for i in range(5):
        model.predict([i])
    np.testing.assert_array_equal(model.predict([0]).probs, [PROBS])
    assert model.stats["user_scored"] == 0 and model.weight(None) == 0.0


def test_a_fixed_weight_is_every_users_weight() -> None:
    model = UserMix(inner(), edges=EDGES, fixed=0.95).fit(two_users())
    learn(model, 4)
    assert model.weight(1) == model.weight(2) == model.weight(None) == 0.95


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), cut=st.integers(30, 110))
def test_later_jobs_never_change_a_prediction(seed: int, cut: int) -> None:
    rng = np.random.default_rng(seed)
    n = 120
    submit = np.cumsum(rng.integers(0, 50, n))
    runtime = rng.integers(1, 200, n)
    user = rng.integers(0, 4, n)
    base = make_table(submit.tolist(), runtime.tolist(), (runtime + 100).tolist(), user.tolist())
    runtime2, user2 = runtime.copy(), user.copy()
    runtime2[cut:] = rng.integers(1, 200, n - cut)
    user2[cut:] = rng.integers(0, 4, n - cut)
    other = make_table(submit.tolist(), runtime2.tolist(), (runtime2 + 100).tolist(), user2.tolist())
    first = int(np.searchsorted(submit, submit[cut]))  # jobs submitted strictly before job `cut`

    def laws(table: JobTable) -> list[list[tuple[float, float]]]:
        out: dict[int, list[tuple[float, float]]] = {}

        def keep(batch: list[int], law: Discrete) -> None:
            for row, i in enumerate(batch):
                out[i] = [(x, p) for x, p in zip(law.support.tolist(), law.probs[row].tolist(), strict=True) if p]
        replay(table, UserMix(LearnedPredictor(LearnedConfig(min_train=20, refit_every=15))), keep)
        return [out[i] for i in range(first)]
    assert laws(base) == laws(other)


def test_the_registered_names_wrap_the_learned_predictor() -> None:
    plain, aci, bound = (make_predictor(n) for n in ("learned-user", "learned-aci-user", "learned-user-95"))
    assert isinstance(plain, UserMix) and isinstance(plain.inner, LearnedPredictor) and plain.fixed is None
    assert isinstance(aci, Adaptive) and isinstance(aci.inner, UserMix) and aci.name == "learned-aci-user"
    assert isinstance(bound, UserMix) and bound.fixed == 0.95


def test_the_learned_bins_score_the_mixture_on_a_trace() -> None:
    # one user who always runs 50 s, beside the global law of two users: its own runtimes earn it weight
    n = 300
    user = [i % 2 for i in range(n)]
    runtime = [50 if u == 0 else 10 + (37 * i) % 900 for i, u in enumerate(user)]
    table = make_table(submit=[100 * i for i in range(n)], runtime=runtime, user=user, requested=[1000] * n)
    model = UserMix(LearnedPredictor(LearnedConfig(min_train=20))).fit(table)
    learn(model, n - 2)
    assert model.weight(0) > model.weight(1)
    assert user[n - 2] == 0 and float(model.predict([n - 2]).cdf(np.array([50.0]))[0]) >= model.weight(0)


def test_a_fixed_weight_outside_the_unit_interval_is_refused() -> None:
    with pytest.raises(ValueError, match=r"fixed=1.5 must lie in \[0, 1\]"):
        UserMix(inner(), fixed=1.5)


def test_an_unfitted_mixture_is_refused() -> None:
    with pytest.raises(ValueError, match="must be fitted"):
        UserMix(inner()).predict([0])
