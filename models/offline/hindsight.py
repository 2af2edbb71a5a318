"""The hindsight problem (docs/model.md section 8): realized jobs, capacity C, and the typed result of a solver."""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np

from mechanism.sow import check_value_steps

if TYPE_CHECKING:
    from models.simulation import Workload

Status = Literal["optimal", "feasible", "unknown"]
STATUSES: tuple[Status, ...] = ("optimal", "feasible", "unknown")


@dataclass(frozen=True)
class HindsightJob:
    """One realized job: born at `birth`, arrived at `arrival`, ran `duration` rounds on `concurrency` nodes.

    `value_steps` are `(k_i, v_i)` relative to birth, exactly as in `mechanism.sow.SoW`: a start s completes at
    f = s + duration, occupies rounds s..s+duration-1, and earns v_i for the first i with f - birth <= k_i, else 0.
    """

    id: str
    birth: int
    arrival: int
    duration: int
    concurrency: int
    value_steps: tuple[tuple[int, float], ...]

    def __post_init__(self) -> None:
        where = f"job {self.id!r}"
        if self.birth < 0:
            raise ValueError(f"{where}: birth={self.birth} is below the bound 0")
        if self.arrival < self.birth:
            raise ValueError(f"{where}: arrival={self.arrival} is below its birth={self.birth}")
        if self.duration < 1:
            raise ValueError(f"{where}: duration={self.duration} is below the bound 1")
        if self.concurrency < 1:
            raise ValueError(f"{where}: concurrency={self.concurrency} is below the bound 1")
        _check_steps(where, self.value_steps)

    def value(self, start: int | None) -> float:
        """V(start + duration): the value earned by starting at `start` (0 for None or a start before arrival)."""
        if start is None or start < self.arrival:
            return 0.0
        offset = start + self.duration - self.birth
        deadlines = [k for k, _ in self.value_steps]
        i = bisect.bisect_left(deadlines, offset)
        return self.value_steps[i][1] if i < len(self.value_steps) else 0.0

    @property
    def last_start(self) -> int:
        """The last start that still earns value: f - birth <= k_last, i.e. s <= birth + k_last - duration."""
        return self.birth + self.value_steps[-1][0] - self.duration

    @property
    def can_earn(self) -> bool:
        """True iff some start in [arrival, last_start] exists."""
        return self.last_start >= self.arrival

    def starts(self) -> range:
        """Every start that earns value: arrival..last_start (empty if none)."""
        return range(self.arrival, self.last_start + 1)

    def reachable_steps(self) -> tuple[tuple[int, float], ...]:
        """The value steps whose deadline some start at or after arrival can meet."""
        earliest = self.arrival + self.duration - self.birth
        return tuple((k, v) for k, v in self.value_steps if k >= earliest)

    def last_start_for(self, deadline: int) -> int:
        """The last start s with s + duration - birth <= deadline."""
        return self.birth + deadline - self.duration


@dataclass(frozen=True)
class HindsightInstance:
    """Capacity C and the realized jobs; ids are unique and every job fits on the platform alone.

    `capacities`, when given, is the realized capacity of rounds 0, 1, ... (rounds past its end keep its last
    entry, as the engine does); `capacity` is then at least every entry, the bound of the cumulative and of a job's
    concurrency.
    """

    capacity: int
    jobs: tuple[HindsightJob, ...]
    capacities: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.capacity < 1:
            raise ValueError(f"capacity={self.capacity} is below the bound 1")
        if self.capacities and not 0 <= min(self.capacities) <= max(self.capacities) <= self.capacity:
            raise ValueError(f"capacities must lie in [0, capacity={self.capacity}]")
        seen: set[str] = set()
        for i, job in enumerate(self.jobs):
            if job.id in seen:
                raise ValueError(f"jobs[{i}].id={job.id!r} repeats an earlier job id")
            seen.add(job.id)
            if job.concurrency > self.capacity:
                raise ValueError(
                    f"jobs[{i}] ({job.id!r}) concurrency={job.concurrency} exceeds the bound capacity={self.capacity}")

    @staticmethod
    def from_realized(workload: Workload) -> HindsightInstance:
        """The realized outcome of a workload: capacity C (per round, the realized capacity of a workload that
        has one), and per job b, a = b + arrival_offset, d, c and V."""
        caps = tuple(workload.capacity or ())
        return HindsightInstance(capacity=max((workload.platform.C, *caps)), capacities=caps, jobs=tuple(
            HindsightJob(id=j.id, birth=j.birth, arrival=j.birth + j.arrival_offset, duration=j.duration,
                         concurrency=j.sow.concurrency, value_steps=tuple(j.sow.value_steps))
            for j in workload.jobs))

    def capacity_at(self, t: int) -> int:
        """The capacity of round t: past the last round of `capacities` the last one stays, as in the engine
        (model.md 10.1); `capacity` without them."""
        if not self.capacities:
            return self.capacity
        return self.capacities[min(t, len(self.capacities) - 1)]

    def capacity_row(self, n: int) -> np.ndarray:
        """capacity_at(t) for t in [0, n)."""
        if not self.capacities:
            return np.full(n, self.capacity, dtype=np.int64)
        row = np.full(n, self.capacities[-1], dtype=np.int64)
        k = min(n, len(self.capacities))
        row[:k] = self.capacities[:k]
        return row

    @property
    def horizon(self) -> int:
        """One past the last round any valuable start can occupy (0 for an instance with no such job)."""
        ends = [j.last_start + j.duration for j in self.jobs if j.can_earn]
        return max(ends, default=0)

    def by_id(self) -> dict[str, HindsightJob]:
        return {j.id: j for j in self.jobs}

    def schedule_value(self, starts: Mapping[str, int | None]) -> float:
        """Total value of a schedule (job id -> start or None); jobs not in `starts` do not run."""
        return math.fsum(j.value(starts.get(j.id)) for j in self.jobs)

    def check_schedule(self, starts: Mapping[str, int | None]) -> None:
        """Raise ValueError unless every start is at or after arrival and the load never exceeds capacity."""
        jobs = self.by_id()
        load: dict[int, int] = {}
        for job_id, s in starts.items():
            if job_id not in jobs:
                raise ValueError(f"schedule names job {job_id!r}, which is not in the instance")
            if s is None:
                continue
            job = jobs[job_id]
            if s < job.arrival:
                raise ValueError(f"job {job_id!r} starts at {s}, before its arrival={job.arrival}")
            for t in range(s, s + job.duration):
                load[t] = load.get(t, 0) + job.concurrency
        for t in sorted(load):
            if load[t] > self.capacity_at(t):
                raise ValueError(f"round {t} load={load[t]} exceeds the bound capacity={self.capacity_at(t)}")


@dataclass(frozen=True)
class OfflineResult:
    """What an offline solver found: schedule value, proven upper bound, relative gap, status and solve time.

    `status` is "optimal" only when the solver proved it; "feasible" means `value` is achieved by `starts` and
    `bound` is the best proven upper bound; "unknown" means the solver returned no schedule of its own (the empty
    schedule, value 0, stands in). `solve_seconds` is the solver's own timer, None where the solver has none.
    """

    value: float
    bound: float
    gap: float
    status: Status
    solve_seconds: float | None
    starts: dict[str, int | None] = field(default_factory=dict)
    solver: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status={self.status!r} is not one of {STATUSES}")

    @property
    def optimal(self) -> bool:
        return self.status == "optimal"


def combine(a: OfflineResult, b: OfflineResult, solver: str, tolerance: float = 0.0) -> OfflineResult:
    """Two results on one instance (two phases, or two solvers): the better schedule (b on a tie) under the lower
    of the two bounds (each bounds the optimum, never taken below the value), their total time. Optimal when
    either proved it or that bound meets the value, within `tolerance` relative (bounds of two solvers are
    computed in different arithmetic). The bound stays the lower bound even then: CP-SAT proves optimality of its
    rounded values, and its bound keeps their rounding slack."""
    best = b if b.value >= a.value else a
    low = min(a.bound, b.bound)
    proven = a.optimal or b.optimal or best.value >= low - tolerance * max(1.0, abs(low))
    bound = max(low, best.value)
    status: Status = "optimal" if proven else "feasible" if "feasible" in (a.status, b.status) else "unknown"
    times = [t for t in (a.solve_seconds, b.solve_seconds) if t is not None]
    return OfflineResult(best.value, bound, relative_gap(best.value, bound), status, sum(times) if times else None,
                         dict(best.starts), solver)


def relative_gap(value: float, bound: float) -> float:
    """(bound - value) / max(|bound|, 1e-9), clipped at 0: 0 when the bound is met."""
    return max(0.0, bound - value) / max(abs(bound), 1e-9)


def _check_steps(where: str, steps: tuple[tuple[int, float], ...]) -> None:
    if not steps:
        raise ValueError(f"{where}: value_steps is empty; at least one (k, v) step is needed")
    try:
        check_value_steps(steps)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
