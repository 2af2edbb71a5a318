"""Schedule quality metrics of seed 001: BSLD (3), AF (4), AWF (5), P^aSF (6), utilisation and makespan."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from models.hpc.jobs import Job

BSLD_BOUND = 10.0  # k in (3), seconds
P2SF_ALPHA = 2.0  # alpha in (6)


@dataclass(frozen=True)
class Metrics:
    """The metrics of one schedule (seconds, except BSLD and utilisation which are ratios)."""

    AF: float
    AWF: float
    BSLD: float
    P2SF: float
    utilization: float
    makespan: int
    jobs: int

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def _check(jobs: Sequence[Job], starts: Sequence[int]) -> None:
    if not jobs:
        raise ValueError("metrics need at least one job")
    if len(starts) != len(jobs):
        raise ValueError(f"starts has {len(starts)} entries, jobs has {len(jobs)}")
    for job, b in zip(jobs, starts, strict=True):
        if b < job.submit:
            raise ValueError(f"job {job.id}: start={b} is before submit={job.submit}")


def response_time(job: Job, start: int) -> int:
    """F_j = Q_j + D_j = c_j - s_j."""
    return start + job.runtime - job.submit


def bsld(jobs: Sequence[Job], starts: Sequence[int], k: float = BSLD_BOUND) -> float:
    """(3): mean of max(1, F_j / max(D_j, k))."""
    _check(jobs, starts)
    total = sum(max(1.0, response_time(j, b) / max(j.runtime, k)) for j, b in zip(jobs, starts, strict=True))
    return total / len(jobs)


def af(jobs: Sequence[Job], starts: Sequence[int]) -> float:
    """(4): mean response time."""
    _check(jobs, starts)
    return sum(response_time(j, b) for j, b in zip(jobs, starts, strict=True)) / len(jobs)


def awf(jobs: Sequence[Job], starts: Sequence[int]) -> float:
    """(5): response time weighted by the job area r_j D_j."""
    _check(jobs, starts)
    num = sum(j.area * response_time(j, b) for j, b in zip(jobs, starts, strict=True))
    return num / sum(j.area for j in jobs)


def psf(jobs: Sequence[Job], starts: Sequence[int], alpha: float = P2SF_ALPHA) -> float:
    """(6): (a+1)/(a+2) * sum r_j (F^(a+2) - Q^(a+2)) / sum r_j (F^(a+1) - Q^(a+1))."""
    _check(jobs, starts)
    num = 0.0
    den = 0.0
    for j, b in zip(jobs, starts, strict=True):
        wait = float(b - j.submit)
        flow = wait + j.runtime
        num += j.size * (flow ** (alpha + 2) - wait ** (alpha + 2))
        den += j.size * (flow ** (alpha + 1) - wait ** (alpha + 1))
    return (alpha + 1) / (alpha + 2) * num / den


def makespan(jobs: Sequence[Job], starts: Sequence[int]) -> int:
    """max c_j - min s_j."""
    _check(jobs, starts)
    return max(b + j.runtime for j, b in zip(jobs, starts, strict=True)) - min(j.submit for j in jobs)


def utilization(jobs: Sequence[Job], starts: Sequence[int], nodes: int) -> float:
    """sum r_j D_j / ((max c_j - min s_j) R)."""
    if nodes <= 0:
        raise ValueError(f"nodes={nodes} must be > 0")
    return sum(j.area for j in jobs) / (makespan(jobs, starts) * nodes)


def evaluate(jobs: Sequence[Job], starts: Sequence[int], nodes: int) -> Metrics:
    """All metrics of one schedule."""
    return Metrics(
        AF=af(jobs, starts),
        AWF=awf(jobs, starts),
        BSLD=bsld(jobs, starts),
        P2SF=psf(jobs, starts),
        utilization=utilization(jobs, starts, nodes),
        makespan=makespan(jobs, starts),
        jobs=len(jobs),
    )
