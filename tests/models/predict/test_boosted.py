"""The boosted predictor: its law against an independent scikit-learn fit, the cold-start histogram by hand, the
request cap, separation of two kinds of jobs, causality, registry and validation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.ensemble import HistGradientBoostingClassifier

from models.predict.boosted import BoostedConfig, BoostedPredictor
from models.predict.evaluate import make_predictor, replay
from models.predictive import Discrete
from tests.models.predict.conftest import make_table
from tests.models.predict.test_learned import _laws


def two_kinds(n: int, seed: int = 3) -> tuple[list[int], list[int], list[int], list[int]]:
    """Jobs of user 1 run about 10 s, of user 2 about 5,000 s; requested 10,000 s; each done before the next."""
    rng = np.random.default_rng(seed)
    user = rng.integers(1, 3, n)
    runtime = np.where(user == 1, rng.integers(5, 15, n), rng.integers(4000, 6000, n))
    submit = [20_000 * i for i in range(n)]
    return submit, runtime.tolist(), [10_000] * n, user.tolist()


def trained(n: int, config: BoostedConfig) -> tuple[BoostedPredictor, object]:
    submit, runtime, requested, user = two_kinds(n)
    table = make_table(submit, runtime, requested, user)
    model = BoostedPredictor(config).fit(table)
    for i in range(n - 1):
        model.predict([i])
        model.observe(i)
    return model, table


def test_the_law_is_the_classifiers_bin_probabilities_mixed_with_the_global_vector_on_the_atoms() -> None:
    # Reference: scikit-learn's classifier fitted here on the same features and on bins computed with numpy.
    cfg = BoostedConfig(bins=4, sub_atoms=1, max_iter=20, min_train=120, refit_every=1000, floor=0.1)
    model, table = trained(121, cfg)
    train = np.arange(120)
    y = np.asarray(table.runtime[train], dtype=np.float64)  # type: ignore[attr-defined]
    edges = np.append(np.unique(np.quantile(y, [0.25, 0.5, 0.75], method="inverted_cdf")), np.inf)
    labels = np.searchsorted(edges, y, side="left")
    reference = HistGradientBoostingClassifier(max_iter=20, learning_rate=0.1, min_samples_leaf=20,
                                               early_stopping=False, random_state=0).fit(model._x[train], labels)
    law = model.predict([120])
    proba = np.zeros(edges.size)
    proba[reference.classes_] = reference.predict_proba(model._x[[120]])[0]
    counts = np.bincount(labels, minlength=edges.size)
    global_vector = (counts + 0.5) / (counts.sum() + 0.5 * edges.size)
    vector = 0.9 * proba + 0.1 * global_vector
    # one atom per bin (sub_atoms 1): the bin's largest runtime; the top bin's atom is +inf, moved onto 10,000 s
    atoms = [float(y[labels == k].max()) for k in range(edges.size - 1)] + [10_000.0]
    expected = dict.fromkeys(atoms, 0.0)
    for atom, p in zip(atoms, vector, strict=True):
        expected[atom] += p
    np.testing.assert_allclose(law.support, sorted(expected), rtol=0, atol=0)
    np.testing.assert_allclose(law.probs[0], [expected[a] for a in sorted(expected)], rtol=0, atol=1e-9)


def test_below_min_train_the_law_is_the_smoothed_global_histogram_by_hand() -> None:
    # ten completions, six of 1 s and four of 9 s, two bins: edges [1, inf], atoms 1 and +inf (onto the request
    # of 100 s), vector ((6 + 1/2) / 11, (4 + 1/2) / 11)
    runtime = [1, 9, 1, 9, 1, 9, 1, 9, 1, 1, 5]
    table = make_table([100 * i for i in range(11)], runtime, [100] * 11)
    model = BoostedPredictor(BoostedConfig(bins=2, min_train=100)).fit(table)
    for i in range(10):
        model.predict([i])
        model.observe(i)
    law = model.predict([10])
    np.testing.assert_array_equal(law.support, [1.0, 100.0])
    np.testing.assert_allclose(law.probs, [[6.5 / 11, 4.5 / 11]], atol=1e-15)


def test_before_any_fit_the_law_is_the_requested_time_as_a_point() -> None:
    table = make_table([0, 0], [5, 7], [60, 90])
    law = BoostedPredictor().fit(table).predict([0, 1])
    np.testing.assert_array_equal(law.support, [60.0, 90.0])
    np.testing.assert_array_equal(law.probs, [[1.0, 0.0], [0.0, 1.0]])


def test_two_kinds_of_jobs_get_their_own_laws_capped_at_the_request() -> None:
    model, table = trained(401, BoostedConfig(min_train=100, refit_every=100))
    users = table.user  # type: ignore[attr-defined]
    short = next(i for i in range(400, 0, -1) if users[i] == 1)
    long = next(i for i in range(400, 0, -1) if users[i] == 2)
    law = model.predict([short, long])
    assert law.cdf(np.array([100.0, 100.0]))[0] >= 0.9  # user 1: most mass below 100 s
    assert law.cdf(np.array([1000.0, 1000.0]))[1] <= 0.1  # user 2: most mass above 1,000 s
    assert law.support.max() <= 10_000.0  # nothing above the requested time


@settings(max_examples=5, deadline=None)
@given(st.integers(min_value=30, max_value=110), st.integers(min_value=0, max_value=2**31))
def test_later_jobs_never_change_a_prediction(cut: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 120
    submit = np.cumsum(rng.integers(0, 50, n))
    runtime = rng.integers(1, 200, n)
    base = make_table(submit.tolist(), runtime.tolist(), (runtime + 100).tolist(), rng.integers(0, 5, n).tolist())
    runtime2 = runtime.copy()
    runtime2[cut:] = rng.integers(1, 200, n - cut)
    other = make_table(submit.tolist(), runtime2.tolist(), (runtime2 + 100).tolist(), base.user.tolist())
    first = int(np.searchsorted(submit, submit[cut]))
    cfg = BoostedConfig(min_train=20, refit_every=15, max_iter=5)
    assert _laws(base, BoostedPredictor(cfg))[:first] == _laws(other, BoostedPredictor(cfg))[:first]  # type: ignore[arg-type]


def test_learned_boosted_is_registered_by_name_and_replays() -> None:
    model = make_predictor("learned-boosted")
    assert isinstance(model, BoostedPredictor)
    submit, runtime, requested, user = two_kinds(150)
    laws: list[Discrete] = []
    replay(make_table(submit, runtime, requested, user), model, lambda batch, law: laws.append(law))
    assert len(laws) == 150 and model.stats["refits"] >= 1


def test_learned_boosted_wide_is_the_boosted_predictor_with_half_the_global_histogram() -> None:
    model = make_predictor("learned-boosted-wide")
    assert isinstance(model, BoostedPredictor)
    assert (model.name, model.config.floor) == ("learned-boosted-wide", 0.5)


@pytest.mark.parametrize(("field", "value", "match"), [
    ("bins", 0, "bins=0 must be >= 1"),
    ("max_iter", 0, "max_iter=0 must be >= 1"),
    ("window", 5, "window=5 must be >= 10"),
    ("floor", 0.0, r"floor=0.0 must lie in \(0, 1\]"),
    ("learning_rate", -1.0, "learning_rate=-1.0 must be > 0"),
])
def test_bad_settings_are_refused(field: str, value: float, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        BoostedConfig(**{field: value})  # type: ignore[arg-type]


def test_observe_before_fit_is_refused() -> None:
    with pytest.raises(ValueError, match="must be fitted"):
        BoostedPredictor().observe(0)
