"""Calibration of the failure oracle: quoted raw failure estimates against realized failures, over many runs."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from models.simulation import SimulationResult

FAILED = ("evicted", "cancelled")
DEFAULT_BINS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0)


@dataclass(frozen=True)
class CalibrationBin:
    low: float
    high: float
    jobs: int
    estimate: float  # mean raw estimate in the bin
    realized: float  # fraction of the bin's jobs evicted or cancelled


@dataclass(frozen=True)
class Calibration:
    runs: int
    jobs: int
    estimate: float
    realized: float
    gap: float  # mean over runs of (realized - estimate): runs are independent, jobs within a run are not
    gap_se: float
    bins: tuple[CalibrationBin, ...]  # the bins holding at least one job
    runs_without_jobs: int = 0  # runs that scheduled no job: not in `runs`, nothing to compare


def scheduled_jobs(result: SimulationResult) -> tuple[np.ndarray, np.ndarray]:
    """(raw estimate, failed) of every job whose realized outcome had a planned start."""
    rows = [
        (j.failure_raw, j.state in FAILED) for j in result.jobs if j.start is not None and j.failure_raw is not None
    ]
    return np.array([r[0] for r in rows], dtype=float), np.array([r[1] for r in rows], dtype=bool)


def calibrate(results: Iterable[SimulationResult], bins: tuple[float, ...] = DEFAULT_BINS) -> Calibration:
    est_all, fail_all, gaps = [], [], []
    empty = 0
    for r in results:
        est, fail = scheduled_jobs(r)
        empty += not est.size
        if est.size:
            gaps.append(float(fail.mean() - est.mean()))
            est_all.append(est)
            fail_all.append(fail)
    est = np.concatenate(est_all) if est_all else np.zeros(0)
    fail = np.concatenate(fail_all) if fail_all else np.zeros(0, dtype=bool)
    edges = np.array(bins, dtype=float)
    which = np.clip(np.searchsorted(edges, est, side="right") - 1, 0, len(edges) - 2)
    table = tuple(CalibrationBin(float(edges[i]), float(edges[i + 1]), int((which == i).sum()),
                                 float(est[which == i].mean()), float(fail[which == i].mean()))
                  for i in range(len(edges) - 1) if (which == i).any())
    se = float(np.std(gaps, ddof=1) / math.sqrt(len(gaps))) if len(gaps) > 1 else math.nan
    return Calibration(runs=len(gaps), jobs=int(est.size), estimate=float(est.mean()) if est.size else math.nan,
                       realized=float(fail.mean()) if fail.size else math.nan,
                       gap=float(np.mean(gaps)) if gaps else math.nan, gap_se=se, bins=table,
                       runs_without_jobs=empty)
