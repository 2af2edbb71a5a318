"""VAR1 against statsmodels, the Markov chain and the Autopilot recommender against hand counts."""

import warnings

import numpy as np
import pytest
from statsmodels.tsa.api import VAR

from models.forecast.autopilot import Autopilot
from models.forecast.base import Ahead, stack
from models.forecast.markov import Markov
from models.forecast.series import Series, aggregate
from models.forecast.var import VAR1
from models.predictive import Discrete, Normal


def simulate_var1(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = np.array([[0.5, 0.3], [0.1, 0.6]])
    c = np.array([10.0, 5.0])
    chol = np.linalg.cholesky(np.array([[4.0, 1.0], [1.0, 1.0]]))
    z = np.zeros((n, 2))
    z[0] = np.linalg.solve(np.eye(2) - a, c)
    for t in range(1, n):
        z[t] = c + a @ z[t - 1] + chol @ rng.standard_normal(2)
    return z


def test_var1_matches_statsmodels_and_covers_simulated_data() -> None:
    z = simulate_var1(2500, 1)
    s = Series(z[:, 0], z[:, 1])
    model = VAR1().fit(s.head(500))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = VAR(z[:500]).fit(1)
    mean, _, upper = res.forecast_interval(z[499:500], steps=3, alpha=0.1)
    law = model.predict(Ahead(s.head(500), 3))
    assert law.mean() == pytest.approx(mean[:, 0])
    assert law.quantile(0.95) == pytest.approx(upper[:, 0])
    one = model.one_step(s, np.arange(500, 2500))
    covered = np.mean(z[500:, 0] <= one.quantile(0.95))
    assert abs(covered - 0.95) < 4 * np.sqrt(0.95 * 0.05 / 2000) + 0.01


def test_markov_transitions_are_the_observed_move_frequencies() -> None:
    y = np.array([10.0, 90.0, 10.0, 90.0, 10.0, 10.0, 90.0])
    model = Markov(states=2, partition="fixed").fit(Series(y))
    # states [0, 50) and [50, 100]: from low, 3 of 4 moves go high; from high, both go low
    assert model.transition == pytest.approx(np.array([[1 / 4, 3 / 4], [1.0, 0.0]]))
    law = model.predict(Ahead(Series(y), 2))
    assert isinstance(law, Discrete)
    assert law.probs[0] == pytest.approx([1.0, 0.0])  # last value high -> low for sure
    assert law.probs[1] == pytest.approx([1 / 4, 3 / 4])
    assert law.quantile(0.5) == pytest.approx([50.0, 100.0])  # states stand for their upper edges


def test_markov_unseen_state_uses_the_unconditional_law_and_refuses_bad_settings() -> None:
    y = np.array([10.0, 20.0, 10.0, 20.0, 95.0])
    model = Markov(states=4, partition="fixed").fit(Series(y))
    # state [75, 100] was never left: its row is the unconditional law of the max (4 low, 1 high)
    assert model.transition[3] == pytest.approx([0.8, 0.0, 0.0, 0.2])
    with pytest.raises(ValueError, match="states=1"):
        Markov(states=1)
    with pytest.raises(ValueError, match="partition='x'"):
        Markov(partition="x")


def test_autopilot_is_a_quantile_of_the_decayed_histogram() -> None:
    raw = np.array([[5.0, 15.0], [15.0, 15.0], [95.0, 95.0]])
    s = Series(raw.max(axis=1), raw=raw)
    model = Autopilot(half_life=1.0, breaks=10, cut_off_weight=0.2).fit(s)
    assert model.memory == 3  # weights 1, 1/2, 1/4 >= 0.2
    law = model.predict(Ahead(s, 1))
    assert isinstance(law, Discrete)
    # bins (upper edges) 10: 1/4; 20: 1/4 + 2/2 = 5/4; 100: 2 -> total 3.5
    assert law.probs[0][[0, 1, 9]] == pytest.approx([0.25 / 3.5, 1.25 / 3.5, 2 / 3.5])
    assert law.quantile(0.3) == pytest.approx([20.0])
    assert law.quantile(0.99) == pytest.approx([100.0])
    fast = model.one_step(s, np.array([1, 2, 3]))
    assert isinstance(fast, Discrete)
    assert fast.probs[2] == pytest.approx(law.probs[0])
    assert fast.probs[0][0] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="half_life=0"):
        Autopilot(half_life=0)
    with pytest.raises(ValueError, match="needs the samples"):
        model.fit(Series(np.ones(3)))


def test_one_step_loops_agree_for_discrete_models() -> None:
    rng = np.random.default_rng(0)
    m = np.clip(rng.normal(40, 10, 1200), 0, 100)
    s = aggregate(m, m * 0.6, 12)
    origins = np.arange(60, 100)
    for model in (Markov(), Markov(regressor="avg"), Markov(partition="fixed"), Autopilot()):
        model.fit(s.head(60))
        fast = model.one_step(s, origins).quantile(0.99)
        slow = [model.predict(Ahead(s.head(int(t)), 1)).quantile(0.99)[0] for t in origins]
        assert fast == pytest.approx(slow)


def test_stack_joins_single_laws_and_refuses_mixed_kinds() -> None:
    joined = stack([Normal(np.array([1.0]), np.array([2.0])), Normal(np.array([3.0]), np.array([1.0]))])
    assert joined.mean() == pytest.approx([1.0, 3.0])
    d = stack([Discrete.point([1.0]), Discrete.point([2.0])])
    assert d.mean() == pytest.approx([1.0, 2.0])
    with pytest.raises(ValueError, match="different kinds"):
        stack([Normal(np.array([1.0]), np.array([2.0])), Discrete.point([1.0])])


def test_var1_rolling_refits_equal_statsmodels_var_refits() -> None:
    z = simulate_var1(400, 3)
    s = Series(z[:, 0], z[:, 1])
    origins = np.arange(100, 400)
    ends = origins - origins % 5
    begins = np.maximum(0, ends - 80)
    law = VAR1().rolling_one_step(s, origins, begins, ends)
    assert law is not None
    for i in (0, 3, 150, 299):
        ref = VAR1().fit(s.window(int(begins[i]), int(ends[i]))).one_step(s, origins[i:i + 1])
        assert law.quantile(0.99)[i] == pytest.approx(ref.quantile(0.99)[0], rel=1e-9)
