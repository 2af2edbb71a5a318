"""Point baselines against hand-computed predictions on a five-job user history."""

from __future__ import annotations

import numpy as np
import pytest

from models.predict.baselines import Exact, LastFive, RequestedTime, Tsafrir
from models.predict.evaluate import replay
from models.predict.protocol import Predictor
from models.predictive import Discrete
from tests.models.predict.conftest import make_table

# One user, six jobs, each finishing before the next is submitted (submit 1000 apart, runtimes below 1000).
RUNTIMES = [100, 300, 50, 400, 900, 200]
REQUESTED = [1000, 1000, 1000, 1000, 1000, 210]


def _predictions(predictor: Predictor) -> list[float]:
    table = make_table([1000 * i for i in range(6)], RUNTIMES, REQUESTED)
    out: list[float] = []
    replay(table, predictor, lambda batch, law: out.extend(law.mean().tolist()))
    return out


def test_tsafrir_predicts_the_mean_of_the_last_two_runtimes_capped_at_requested() -> None:
    # job 0, 1: fewer than two completed -> requested; then floor of the mean of the last two, capped
    assert _predictions(Tsafrir()) == [1000, 1000, (100 + 300) // 2, (300 + 50) // 2, (50 + 400) // 2,
                                       min(210, (400 + 900) // 2)]


def test_last_five_predicts_the_mean_of_up_to_five_last_runtimes_capped_at_requested() -> None:
    expected = [1000, 100, 200, 150, (100 + 300 + 50 + 400) // 4, min(210, (100 + 300 + 50 + 400 + 900) // 5)]
    assert _predictions(LastFive()) == expected


def test_requested_predicts_the_requested_time_and_exact_the_runtime() -> None:
    assert _predictions(RequestedTime()) == REQUESTED
    assert _predictions(Exact()) == RUNTIMES


def test_point_prediction_is_a_degenerate_discrete() -> None:
    table = make_table([0, 0], [5, 7], [10, 10])
    law = Exact().fit(table).predict([0, 1])
    assert isinstance(law, Discrete)
    assert np.array_equal(law.quantile(0.1), [5, 7]) and np.array_equal(law.quantile(0.99), [5, 7])


def test_unfitted_predictor_is_refused() -> None:
    with pytest.raises(ValueError, match="must be fitted"):
        Tsafrir().predict([0])


def test_completion_after_submission_is_not_seen() -> None:
    # job 0 ends at 0 + 500 + 100 = 600 > 550, the submission of job 2: job 2 sees only job 1's runtime
    table = make_table([0, 10, 550], [100, 20, 30], [1000, 1000, 1000], wait=[500, 0, 0])
    out: list[float] = []
    replay(table, LastFive(), lambda batch, law: out.extend(law.mean().tolist()))
    assert out == [1000, 1000, 20]


def test_every_registered_predictor_implements_the_predictor_protocol() -> None:
    from models.predict.evaluate import PREDICTORS, make_predictor
    for name in PREDICTORS:
        predictor = make_predictor(name)
        assert isinstance(predictor, Predictor) and predictor.name == name
