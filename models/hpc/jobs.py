"""Rigid HPC jobs (seed 001, Sec. 2): submit time s_j, runtime D_j, node count r_j, requested time L_j."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Estimates = Literal["exact", "requested"]
ESTIMATE_MODES: tuple[Estimates, ...] = ("exact", "requested")


@dataclass(frozen=True, slots=True)
class Job:
    """One rigid job: it needs `size` nodes for `runtime` seconds and may not start before `submit`.

    `requested` is the user's time limit L_j; the invariant `requested >= runtime` makes both estimate
    modes upper bounds of the true runtime, so a running job never outlives its estimate.
    """

    id: int
    submit: int
    runtime: int
    size: int
    requested: int

    def __post_init__(self) -> None:
        if self.submit < 0:
            raise ValueError(f"job {self.id}: submit={self.submit} must be >= 0")
        if self.runtime <= 0:
            raise ValueError(f"job {self.id}: runtime={self.runtime} must be > 0")
        if self.size <= 0:
            raise ValueError(f"job {self.id}: size={self.size} must be > 0")
        if self.requested < self.runtime:
            raise ValueError(f"job {self.id}: requested={self.requested} must be >= runtime={self.runtime}")

    @property
    def area(self) -> int:
        """r_j * D_j, the node-seconds the job consumes."""
        return self.size * self.runtime


@dataclass(frozen=True, slots=True)
class Workload:
    """Jobs sorted by (submit, id) on a machine of `nodes` identical nodes."""

    jobs: tuple[Job, ...]
    nodes: int

    def __post_init__(self) -> None:
        if self.nodes <= 0:
            raise ValueError(f"nodes={self.nodes} must be > 0")
        for job in self.jobs:
            if job.size > self.nodes:
                raise ValueError(f"job {job.id}: size={job.size} exceeds nodes={self.nodes}")
        keys = [(j.submit, j.id) for j in self.jobs]
        if keys != sorted(keys):
            raise ValueError("jobs must be sorted by (submit, id)")

    def prefix(self, count: int | None) -> Workload:
        """The first `count` jobs (all when None)."""
        if count is None:
            return self
        if count <= 0:
            raise ValueError(f"count={count} must be > 0")
        return Workload(self.jobs[:count], self.nodes)


def estimate(job: Job, mode: Estimates) -> int:
    """E_j: the actual runtime (clairvoyant) or the requested time limit."""
    if mode == "exact":
        return job.runtime
    if mode == "requested":
        return job.requested
    raise ValueError(f"estimates={mode!r} must be one of {ESTIMATE_MODES}")
