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


@dataclass(frozen=True)
class _Columns:
    """A checked schedule as lists: each job's response time F_j, runtime D_j, size r_j, wait Q_j and submit s_j."""

    flow: list[int]
    runtime: list[int]
    size: list[int]
    wait: list[int]
    submit: list[int]

    @classmethod
    def of(cls, jobs: Sequence[Job], starts: Sequence[int]) -> _Columns:
        _check(jobs, starts)
        submit = [j.submit for j in jobs]
        runtime = [j.runtime for j in jobs]
        wait = [b - s for b, s in zip(starts, submit, strict=True)]
        return cls([q + d for q, d in zip(wait, runtime, strict=True)], runtime, [j.size for j in jobs], wait,
                   submit)

    def areas(self) -> list[int]:
        return [r * d for r, d in zip(self.size, self.runtime, strict=True)]


def response_time(job: Job, start: int) -> int:
    """F_j = Q_j + D_j = c_j - s_j."""
    return start + job.runtime - job.submit


def _bsld(c: _Columns, k: float) -> float:
    return sum(max(1.0, f / max(d, k)) for f, d in zip(c.flow, c.runtime, strict=True)) / len(c.flow)


def _af(c: _Columns) -> float:
    return sum(c.flow) / len(c.flow)


def _awf(c: _Columns, areas: list[int]) -> float:
    return sum(a * f for a, f in zip(areas, c.flow, strict=True)) / sum(areas)


def _psf(c: _Columns, alpha: float) -> float:
    num = 0.0
    den = 0.0
    for r, q, d in zip(c.size, c.wait, c.runtime, strict=True):
        wait = float(q)
        flow = wait + d
        num += r * (flow ** (alpha + 2) - wait ** (alpha + 2))
        den += r * (flow ** (alpha + 1) - wait ** (alpha + 1))
    return (alpha + 1) / (alpha + 2) * num / den


def _makespan(c: _Columns) -> int:
    return max(s + f for s, f in zip(c.submit, c.flow, strict=True)) - min(c.submit)


def _utilization(c: _Columns, areas: list[int], nodes: int) -> float:
    if nodes <= 0:
        raise ValueError(f"nodes={nodes} must be > 0")
    return sum(areas) / (_makespan(c) * nodes)


def bsld(jobs: Sequence[Job], starts: Sequence[int], k: float = BSLD_BOUND) -> float:
    """(3): mean of max(1, F_j / max(D_j, k))."""
    return _bsld(_Columns.of(jobs, starts), k)


def af(jobs: Sequence[Job], starts: Sequence[int]) -> float:
    """(4): mean response time."""
    return _af(_Columns.of(jobs, starts))


def awf(jobs: Sequence[Job], starts: Sequence[int]) -> float:
    """(5): response time weighted by the job area r_j D_j."""
    c = _Columns.of(jobs, starts)
    return _awf(c, c.areas())


def psf(jobs: Sequence[Job], starts: Sequence[int], alpha: float = P2SF_ALPHA) -> float:
    """(6): (a+1)/(a+2) * sum r_j (F^(a+2) - Q^(a+2)) / sum r_j (F^(a+1) - Q^(a+1))."""
    return _psf(_Columns.of(jobs, starts), alpha)


def makespan(jobs: Sequence[Job], starts: Sequence[int]) -> int:
    """max c_j - min s_j."""
    return _makespan(_Columns.of(jobs, starts))


def utilization(jobs: Sequence[Job], starts: Sequence[int], nodes: int) -> float:
    """sum r_j D_j / ((max c_j - min s_j) R)."""
    if nodes <= 0:
        raise ValueError(f"nodes={nodes} must be > 0")
    c = _Columns.of(jobs, starts)
    return _utilization(c, c.areas(), nodes)


def evaluate(jobs: Sequence[Job], starts: Sequence[int], nodes: int) -> Metrics:
    """All metrics of one schedule (the schedule checked and read into lists once)."""
    if nodes <= 0:
        raise ValueError(f"nodes={nodes} must be > 0")
    c = _Columns.of(jobs, starts)
    areas = c.areas()
    return Metrics(AF=_af(c), AWF=_awf(c, areas), BSLD=_bsld(c, BSLD_BOUND), P2SF=_psf(c, P2SF_ALPHA),
                   utilization=_utilization(c, areas, nodes), makespan=_makespan(c), jobs=len(c.flow))
