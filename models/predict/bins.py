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
    sitting on the bin's upper edge.
    """
    if sub < 1:
        raise ValueError(f"sub={sub} must be >= 1")
    d = np.sort(np.asarray(durations, dtype=np.float64))
    k_of = discretise(d, edges)
    atoms: list[float] = []
    owner: list[int] = []
    for k, edge in enumerate(edges):
        inside = d[k_of == k]
        points = np.unique(np.quantile(inside, np.arange(1, sub + 1) / sub, method="inverted_cdf")) \
            if inside.size else np.array([edge])
        if np.isinf(edge):
            points = np.append(points[:-1], np.inf)
        points = points[points > (atoms[-1] if atoms else -np.inf)]
        atoms.extend(points.tolist())
        owner.extend([k] * points.size)
    return np.asarray(atoms, dtype=np.float64), np.asarray(owner, dtype=np.int64)
