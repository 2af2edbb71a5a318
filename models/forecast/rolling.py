"""Least squares refitted on many windows of one regression at once, from cumulative sums (online training)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.arrays import FloatArray, IntArray


@dataclass(frozen=True)
class RollingFit:
    """Per window i: coefficients beta[i] (p,), residual sum of squares ssr[i] and row count n[i]."""

    beta: FloatArray
    ssr: FloatArray
    n: FloatArray


def rolling_ols(design: FloatArray, target: FloatArray, begins: IntArray, ends: IntArray) -> RollingFit:
    """OLS of target[j] on design[j] over rows j in [begins[i], ends[i]) for every i, vectorised.

    The Gram matrices and cross products of each window are differences of cumulative sums; a singular
    window (e.g. a constant regressor) is solved by least squares with its pseudo-inverse.
    """
    design = np.asarray(design, dtype=np.float64)
    target = np.asarray(target, dtype=np.float64)
    if design.ndim != 2 or target.shape != (design.shape[0],):
        raise ValueError(f"design {design.shape} and target {target.shape} do not match")
    if np.any(begins < 0) or np.any(ends > design.shape[0]) or np.any(ends - begins < design.shape[1]):
        raise ValueError(f"every window needs at least {design.shape[1]} rows inside [0, {design.shape[0]}]")

    def window_sum(values: FloatArray) -> FloatArray:
        cum = np.concatenate([np.zeros((1, *values.shape[1:])), np.cumsum(values, axis=0)])
        return np.asarray(cum[ends] - cum[begins], dtype=np.float64)

    gram = window_sum(design[:, :, None] * design[:, None, :])  # (w, p, p)
    cross = window_sum(design * target[:, None])  # (w, p)
    tt = window_sum(target * target)  # (w,)
    beta = np.einsum("wij,wj->wi", np.linalg.pinv(gram, hermitian=True), cross)
    # ||z - X b||^2 = z'z - 2 b'X'z + b'X'X b
    ssr = tt - 2 * np.einsum("wi,wi->w", beta, cross) + np.einsum("wi,wij,wj->w", beta, gram, beta)
    return RollingFit(beta, np.maximum(ssr, 0.0), (ends - begins).astype(np.float64))
