"""Discretised durations (seed 004, Sec. 2.2): bin edges and the bin of each duration."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from models.arrays import FloatArray


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


def within_bin_atoms(durations: ArrayLike, edges: FloatArray, sub: int) -> tuple[FloatArray, NDArray[np.int64]]:
    """Support atoms that spread each bin's mass: the j/sub quantiles (j = 1..sub) of the durations in the bin.

    Returns the atoms (increasing; the top bin ends at +inf) and the bin of each atom. A bin's probability
    is shared equally by its atoms, so a law on the atoms follows the data inside each bin instead of
    sitting on the bin's upper edge. An empty bin's atom is its upper edge. All bins at once: a bin's durations
    are a slice of the sorted ones, and each quantile is the order statistic np.quantile's inverted_cdf takes.
    """
    if sub < 1:
        raise ValueError(f"sub={sub} must be >= 1")
    d = np.sort(np.asarray(durations, dtype=np.float64))
    count = np.bincount(discretise(d, edges), minlength=edges.size)
    first = np.cumsum(count) - count
    # np.quantile(inside, q, method="inverted_cdf"): index n q - 1, rounded up unless whole, at least 0
    index = count[:, None] * (np.arange(1, sub + 1) / sub)[None, :] - 1
    low = np.floor(index)
    rank = np.maximum(np.where(index - low == 0, low, low + 1), 0).astype(np.int64)
    points = np.where(count[:, None] > 0, d[np.minimum(first[:, None] + rank, max(d.size - 1, 0))] if d.size
                      else 0.0, edges[:, None])
    top = np.isinf(edges)
    points[top] = np.where(points[top] == points[top][:, -1:], np.inf, points[top])  # the top bin ends at +inf
    flat = points.ravel()
    before = np.maximum.accumulate(np.concatenate([[-np.inf], flat[:-1]]))
    keep = flat > before  # each bin's distinct points, above the atoms of the bins below
    return flat[keep], np.repeat(np.arange(edges.size, dtype=np.int64), sub)[keep]
