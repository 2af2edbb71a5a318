"""Discretised durations (seed 004, Sec. 2.2): bin edges and the bin of each duration."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]


def quantile_edges(durations: ArrayLike, bins: int) -> FloatArray:
    """Upper edges of `bins` bins at the empirical quantiles k/bins (k = 1..bins) of the durations seen.

    Repeated quantiles (atoms of the data) are merged, so there may be fewer edges than `bins`; the last
    edge is +inf, so every future duration falls in a bin.
    """
    if bins < 1:
        raise ValueError(f"bins={bins} must be >= 1")
    d = np.asarray(durations, dtype=np.float64)
    if d.size == 0:
        raise ValueError("quantile edges need at least one duration")
    inner = np.quantile(d, np.arange(1, bins) / bins, method="inverted_cdf") if bins > 1 else np.array([])
    return np.append(np.unique(inner), np.inf)


def check_edges(edges: ArrayLike) -> FloatArray:
    """Explicit upper edges: strictly increasing and positive; +inf is appended if missing."""
    e = np.asarray(edges, dtype=np.float64).ravel()
    if e.size == 0 or np.any(e <= 0) or np.any(np.diff(e) <= 0):
        raise ValueError(f"edges={e.tolist()} must be a non-empty, positive, strictly increasing list")
    return e if np.isinf(e[-1]) else np.append(e, np.inf)


def discretise(durations: ArrayLike, edges: FloatArray) -> NDArray[np.int64]:
    """Bin k of each duration d: the first k with d <= edges[k] (bins are (edges[k-1], edges[k]])."""
    return np.searchsorted(edges, np.asarray(durations, dtype=np.float64), side="left").astype(np.int64)
