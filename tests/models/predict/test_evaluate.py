"""The predictors' scores of models/predict/evaluate.py by hand."""

from __future__ import annotations

import numpy as np
import pytest

from models.predict.evaluate import _log_prob
from models.predictive import Discrete


def test_log_score_reads_the_rows_own_atoms_not_a_batch_mates() -> None:
    # One batch, one shared support: 20 is only the second row's atom (its requested time, say). The first row's
    # runtime 15 falls in its own bin at 30, not on the batch-mate's atom where it has no mass.
    law = Discrete(np.array([10.0, 20.0, 30.0]), np.array([[0.25, 0.0, 0.75], [0.5, 0.5, 0.0]]))
    assert _log_prob(law, np.array([15.0, 15.0])) == pytest.approx(np.log([0.75, 0.5]))
    assert _log_prob(law, np.array([10.0, 10.0])) == pytest.approx(np.log([0.25, 0.5]))  # on an atom: that atom
    assert _log_prob(law, np.array([40.0, 25.0])) == pytest.approx(np.log([0.75, 0.5]))  # above: the largest atom


def test_log_score_of_a_point_prediction_is_zero_at_or_below_it() -> None:
    law = Discrete.point(np.array([100.0, 50.0]))
    assert _log_prob(law, np.array([100.0, 20.0])) == pytest.approx([0.0, 0.0])
