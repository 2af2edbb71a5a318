"""Tiny priors for the stochastic-variant tests."""

from __future__ import annotations

import math

import numpy as np

from mechanism.platform import Platform
from mechanism.sow import SoW
from models.prior import JobPrior, Prior


def tiny_platform(**kw: object) -> Platform:
    params: dict[str, object] = {"C": 4, "C_m": 2, "D_m": 2, "S_m": 3, "H": 20.0, "epsilon": 0.1, "eps0": 0.05,
                                 "delta0": 0.05, "seed": 1, "samples": 300}
    params.update(kw)
    return Platform(**params)


def sow_of(p: Platform, c: int, steps: list[list[float]], outcomes: list[list[float]]) -> SoW:
    return SoW.parse({"concurrency": c, "value_steps": steps, "outcomes": outcomes, "signal_mode": "duration"}, p)


def random_prior(rng: np.random.Generator, p: Platform, jobs: int, max_sows: int = 2,
                 max_tasks: int = 2) -> Prior:
    """Random F_j with distinct (arrival, duration) tasks and decreasing value steps within `p`'s bounds."""
    out = []
    for j in range(jobs):
        n_sows = int(rng.integers(1, max_sows + 1))
        q = rng.uniform(0.2, 1.0, size=n_sows)
        q = q / q.sum()
        q[-1] = 1.0 - math.fsum(q[:-1].tolist())
        sows = []
        for _ in range(n_sows):
            n = int(rng.integers(1, max_tasks + 1))
            pairs = sorted({(int(rng.integers(0, p.S_m)), int(rng.integers(1, p.D_m + 1))) for _ in range(n)})
            lam = rng.uniform(0.2, 1.0, size=len(pairs))
            lam = lam / lam.sum()
            rows = [[a, d, float(x)] for (a, d), x in zip(pairs, lam, strict=True)]
            rows[-1][2] = 1.0 - math.fsum(r[2] for r in rows[:-1])
            v = float(rng.uniform(1.0, p.H))
            k = int(rng.integers(1, p.S_m + 1))
            steps = [[k, v]] + ([[p.S_m, max(1.0, v / 3)]] if k < p.S_m and v / 3 > 1.0 else [])
            sows.append(sow_of(p, int(rng.integers(1, p.C_m + 1)), steps, rows))
        out.append(JobPrior(id=f"j{j}", birth=int(rng.integers(0, 2)), sows=tuple(sows),
                            probability=tuple(float(x) for x in q)))
    return Prior(jobs=tuple(out))
