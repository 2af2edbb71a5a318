"""Gaussian mixtures by BIC: the one helper that fits scikit-learn's GaussianMixture for each number of components
and keeps the one with the lowest BIC (the error laws of models/forecast and models/cuc, the clusters of
models/predict)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from models.arrays import FloatArray

if TYPE_CHECKING:
    from sklearn.mixture import GaussianMixture


def gmm_by_bic(x: FloatArray, components: Iterable[int], seed: int, reg_covar: float,
               covariance_type: str = "full", init_params: str = "kmeans") -> tuple[GaussianMixture, dict[int, float]]:
    """The mixture of the lowest BIC among `components` (the first on ties) fitted to the rows of `x` (n, d), and
    every tried count's BIC."""
    from sklearn.mixture import GaussianMixture

    data = np.asarray(x, dtype=np.float64)
    if data.ndim != 2:
        raise ValueError(f"x has shape {data.shape}: need (n, d)")
    best: GaussianMixture | None = None
    bics: dict[int, float] = {}
    for k in components:
        gmm = GaussianMixture(n_components=k, covariance_type=covariance_type, random_state=seed,
                              reg_covar=reg_covar, init_params=init_params).fit(data)
        bics[k] = float(gmm.bic(data))
        if best is None or bics[k] < bics[best.n_components]:
            best = gmm
    if best is None:
        raise ValueError("components names no count to fit")
    return best, bics
