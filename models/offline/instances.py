"""Seeded random hindsight instances, for solver tests and the solver benchmark."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.offline.hindsight import HindsightInstance, HindsightJob


@dataclass(frozen=True)
class InstanceShape:
    """The ranges a random instance draws from (all inclusive)."""

    capacity: int = 64
    horizon: int = 200
    max_arrival_delay: int = 10
    max_duration: int = 20
    max_concurrency: int = 16
    max_steps: int = 3
    max_slack: int = 30
    max_value: float = 100.0

    def __post_init__(self) -> None:
        for name in ("capacity", "horizon", "max_duration", "max_concurrency", "max_steps", "max_slack"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)} is below the bound 1")
        if self.max_arrival_delay < 0:
            raise ValueError(f"max_arrival_delay={self.max_arrival_delay} is below the bound 0")
        if self.max_concurrency > self.capacity:
            raise ValueError(f"max_concurrency={self.max_concurrency} exceeds the bound capacity={self.capacity}")
        if self.max_value < 1.0:
            raise ValueError(f"max_value={self.max_value} is below the bound 1")


def random_instance(n_jobs: int, seed: int, shape: InstanceShape | None = None) -> HindsightInstance:
    """`n_jobs` jobs born uniformly over the horizon, each with 1..max_steps value steps in [1, max_value]."""
    if n_jobs < 0:
        raise ValueError(f"n_jobs={n_jobs} is below the bound 0")
    shape = shape or InstanceShape()
    rng = np.random.default_rng(seed)
    jobs = tuple(_random_job(f"j{i}", rng, shape) for i in range(n_jobs))
    return HindsightInstance(capacity=shape.capacity, jobs=jobs)


def _random_job(job_id: str, rng: np.random.Generator, shape: InstanceShape) -> HindsightJob:
    birth = int(rng.integers(0, shape.horizon))
    delay = int(rng.integers(0, shape.max_arrival_delay + 1))
    duration = int(rng.integers(1, shape.max_duration + 1))
    concurrency = int(rng.integers(1, shape.max_concurrency + 1))
    n_steps = int(rng.integers(1, shape.max_steps + 1))
    # Deadlines: the first leaves a little slack after the earliest completion, later ones add more.
    first = delay + duration + int(rng.integers(0, shape.max_slack + 1))
    gaps = rng.integers(1, shape.max_slack + 1, size=n_steps - 1)
    deadlines = [first, *(first + np.cumsum(gaps)).tolist()]
    values = np.sort(rng.uniform(1.0, shape.max_value, size=n_steps))[::-1]
    values = np.round(values, 2)
    steps: list[tuple[int, float]] = []
    for k, v in zip(deadlines, values.tolist(), strict=True):
        if not steps or v < steps[-1][1]:
            steps.append((int(k), float(v)))
    return HindsightJob(id=job_id, birth=birth, arrival=birth + delay, duration=duration,
                        concurrency=concurrency, value_steps=tuple(steps))
