"""Reading a job's history: the deterministic estimators f^est (eq. 1) and the pair samples of COSPiS (eq. 5)."""

from __future__ import annotations

from typing import Literal

import numpy as np

from models.arrays import IntArray
from models.planning.problem import Problem
from models.predictive import Discrete

Estimator = Literal["p50", "p75", "p100", "mode"]
ESTIMATORS: tuple[Estimator, ...] = ("p50", "p75", "p100", "mode")


def empirical(histories: list[tuple[int, ...]]) -> Discrete:
    """The empirical law of each history, on the union of their values (models.predictive.Discrete)."""
    support = np.unique(np.concatenate([np.asarray(h, dtype=np.float64) for h in histories]))
    probs = np.zeros((len(histories), support.size))
    for i, h in enumerate(histories):
        k = np.searchsorted(support, np.asarray(h, dtype=np.float64))
        np.add.at(probs[i], k, 1.0 / len(h))
    return Discrete(support, probs)


def estimate(law: Discrete, estimator: Estimator) -> IntArray:
    """f^est of each row: P50 and P75 the smallest x with F(x) >= q, P100 the largest value seen, mode the most
    frequent value (the smallest on a tie)."""
    if estimator == "p50":
        values = law.quantile(0.5)
    elif estimator == "p75":
        values = law.quantile(0.75)
    elif estimator == "p100":
        values = np.max(np.where(law.probs > 0, law.support, -np.inf), axis=1)
    elif estimator == "mode":
        values = law.support[np.argmax(law.probs, axis=1)]
    else:
        raise ValueError(f"estimator={estimator!r} is not one of {', '.join(ESTIMATORS)}")
    return np.rint(values).astype(np.int64)


def estimates(problem: Problem, estimator: Estimator) -> tuple[IntArray, IntArray]:
    """(d_hat_j, r_hat_j) = (f^est(D_j), f^est(R_j)) for every job (eq. 1)."""
    d = estimate(empirical([job.D for job in problem.jobs]), estimator)
    r = estimate(empirical([job.R for job in problem.jobs]), estimator)
    return d, r


def pair_samples(problem: Problem, k: int, rng: np.random.Generator) -> tuple[IntArray, IntArray]:
    """(d[k, j], r[k, j]): K pair samples per job, each one past run (D_j[i], R_j[i]) drawn with replacement
    (eq. 5: D_j^K and R_j^K come from the same runs)."""
    if k < 1:
        raise ValueError(f"samples K={k} is below the bound 1")
    d = np.empty((k, problem.n), dtype=np.int64)
    r = np.empty((k, problem.n), dtype=np.int64)
    for j, job in enumerate(problem.jobs):
        i = rng.integers(0, len(job.D), size=k)
        d[:, j] = np.asarray(job.D, dtype=np.int64)[i]
        r[:, j] = np.asarray(job.R, dtype=np.int64)[i]
    return d, r
