"""The one Gaussian-mixture-by-BIC helper: the lowest BIC of scikit-learn's own fits wins."""

import numpy as np
import pytest
from sklearn.mixture import GaussianMixture

from models.forecast.registry import ModelSpec
from models.mixture_fit import gmm_by_bic


def test_the_lowest_bic_of_direct_fits_wins() -> None:
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(-4, 1, 300), rng.normal(4, 1, 300)]).reshape(-1, 1)
    best, bics = gmm_by_bic(x, range(1, 4), 0, 1e-6)
    direct = {k: GaussianMixture(k, random_state=0, reg_covar=1e-6).fit(x).bic(x) for k in range(1, 4)}
    assert set(bics) == {1, 2, 3}
    assert all(bics[k] == pytest.approx(direct[k], rel=1e-6) for k in direct)
    assert best.n_components == min(direct, key=direct.__getitem__) == 2


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match=r"x has shape \(5,\): need \(n, d\)"):
        gmm_by_bic(np.zeros(5), range(1, 2), 0, 1e-6)
    with pytest.raises(ValueError, match="components names no count to fit"):
        gmm_by_bic(np.zeros((5, 1)), range(1, 1), 0, 1e-6)


def test_model_spec_refuses_an_unknown_decomposition() -> None:
    with pytest.raises(ValueError, match="decomposition='x11' is not one of stl, classical"):
        ModelSpec("tsdec", decomposition="x11")
