"""The literal App. F procedure: a fresh LIFO simulation, with the new job in it, for each (s, d) candidate.

With a capacity model each sample also draws its capacity path (`CapacityModel.paths`, the same streams as the
Monte Carlo oracle) and LIFO removes jobs while the load exceeds that round's capacity.
"""

from __future__ import annotations

import numpy as np

from mechanism.failure import Residual
from mechanism.platform import Platform
from mechanism.rng import stream_key, uniforms


def sampled_outcomes(platform: Platform, round_: int, residuals: list[Residual], samples: int) -> np.ndarray:
    """idx[n, k]: the outcome of earlier job k in sample n, from the same streams as the Monte Carlo oracle."""
    idx = np.empty((samples, len(residuals)), dtype=np.int64)
    for k, r in enumerate(residuals):
        u = uniforms(stream_key(platform.seed, round_, r.job), samples)
        idx[:, k] = np.minimum(np.searchsorted(r.cdf, u, side="right"), r.start.size - 1)
    return idx


def capacity_paths(platform: Platform, round_: int, samples: int, last_capacity: int | None = None,
                   current_capacity: int | None = None, level: float | None = None) -> np.ndarray:
    """K[n, tau]: the capacity of each round of the window in each sample (C everywhere with fixed capacity)."""
    model = platform.capacity
    if model is None:
        return np.full((samples, platform.horizon), platform.C, dtype=np.int64)
    last = platform.C if last_capacity is None else last_capacity
    return model.at_level(level).paths(platform.seed, round_, last, platform.horizon, samples, current_capacity)


def literal_failure(platform: Platform, round_: int, residuals: list[Residual], concurrency: int,
                    start: int, duration: int, samples: int, last_capacity: int | None = None,
                    current_capacity: int | None = None, level: float | None = None) -> float:
    """Fraction of samples in which a new job (start offset `start`, `duration`) is evicted or cancelled."""
    cap = capacity_paths(platform, round_, samples, last_capacity, current_capacity, level)
    idx = sampled_outcomes(platform, round_, residuals, samples)
    k = len(residuals)
    s = np.empty((samples, k + 1), dtype=np.int64)
    n = np.empty((samples, k + 1), dtype=np.int64)
    for j, r in enumerate(residuals):
        s[:, j] = r.start[idx[:, j]]
        n[:, j] = r.length[idx[:, j]]
    s[:, k], n[:, k] = start, duration
    conc = np.array([r.concurrency for r in residuals] + [concurrency], dtype=np.int64)
    active = np.ones((samples, k + 1), dtype=bool)
    failed = np.zeros(samples, dtype=bool)
    rows = np.arange(samples)
    for tau in range(start + duration):
        active &= ~((s >= 0) & (tau >= s + n))  # completed jobs leave
        running = active & (s >= 0) & (s <= tau) & (tau < s + n)
        load = (running * conc).sum(axis=1)
        over = load > cap[:, tau]
        while over.any():
            # the newest active job per sample (under `newest_demanding`, the newest running one: the load only
            # exceeds C while some job runs, so one exists)
            candidates = active if platform.cancels_waiting else active & running
            newest = k - np.argmax(candidates[:, ::-1], axis=1)
            hit = rows[over]
            victim = newest[over]
            active[hit, victim] = False
            failed[hit] |= victim == k
            load[hit] -= np.where(running[hit, victim], conc[victim], 0)
            running[hit, victim] = False
            over = load > cap[:, tau]
    return float(failed.mean())
