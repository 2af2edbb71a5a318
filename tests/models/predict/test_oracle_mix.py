"""The oracle mix: a share of the inner law's mass on the runtime, by hand; weight 0 and 1; registry; validation."""

from __future__ import annotations

import numpy as np
import pytest

from models.predict.evaluate import make_predictor
from models.predict.oracle_mix import OracleMix
from tests.models.predict.conftest import make_table
from tests.models.predict.test_recalibrate import uniform


def test_half_the_mass_moves_onto_the_runtime_by_hand() -> None:
    # inner law uniform on {1, 2, 3, 4}; runtimes 3 and 2.5 s are not both atoms: 2.5 joins the support
    table = make_table(submit=[0, 0], runtime=[3, 1])
    law = OracleMix(uniform(4), 0.5).fit(table).predict([0, 1])
    np.testing.assert_array_equal(law.support, [1.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(law.probs, [[0.125, 0.125, 0.625, 0.125], [0.625, 0.125, 0.125, 0.125]], atol=1e-15)


def test_a_runtime_outside_the_support_becomes_an_atom() -> None:
    table = make_table(submit=[0], runtime=[7])
    law = OracleMix(uniform(4), 0.8).fit(table).predict([0])
    np.testing.assert_array_equal(law.support, [1.0, 2.0, 3.0, 4.0, 7.0])
    np.testing.assert_allclose(law.probs, [[0.05, 0.05, 0.05, 0.05, 0.8]], atol=1e-15)


@pytest.mark.parametrize("weight", [0.0, 1.0])
def test_weight_zero_is_the_inner_law_and_weight_one_the_exact_point(weight: float) -> None:
    table = make_table(submit=[0, 5], runtime=[2, 4])
    law = OracleMix(uniform(4), weight).fit(table).predict([0, 1])
    expected = np.full((2, 4), 0.25) if weight == 0 else np.array([[0, 1.0, 0, 0], [0, 0, 0, 1.0]])
    np.testing.assert_allclose(law.probs, expected, atol=1e-15)


def test_the_oracle_mixes_are_registered_by_name() -> None:
    model = make_predictor("learned-oracle-80")
    assert isinstance(model, OracleMix)
    assert (model.name, model.weight) == ("learned-oracle-80", 0.8)


@pytest.mark.parametrize("weight", [-0.1, 1.5])
def test_a_weight_outside_zero_one_is_refused(weight: float) -> None:
    with pytest.raises(ValueError, match=f"weight={weight} must lie in"):
        OracleMix(uniform(4), weight)


def test_predict_before_fit_is_refused() -> None:
    with pytest.raises(ValueError, match="must be fitted"):
        OracleMix(uniform(4), 0.5).predict([0])
