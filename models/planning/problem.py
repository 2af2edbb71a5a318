"""The COS problem (seed 000, Sec. 3): jobs b = (q, f, u, D, J, R) with histories, parents and start windows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

MAX_TIME = 10_000_000  # times are whole seconds (or rounds); beyond this a CP-SAT horizon is a typo


class CycleError(ValueError):
    """The parents J form a cycle; the message names it (a -> b -> a)."""


@dataclass(frozen=True)
class Job:
    """b = (q, f, u, D, J, R): requested start q, flexibility f, deadline u, duration history D, parents J,
    CPU history R. D[i] and R[i] are one past run (a joint pair), so |D| = |R|."""

    id: str
    q: int
    f: int
    u: int
    D: tuple[int, ...]
    J: tuple[str, ...]
    R: tuple[int, ...]

    def __post_init__(self) -> None:
        where = f"job {self.id!r}"
        if not self.id:
            raise ValueError("job id is empty")
        for name, value, low in (("q", self.q, 0), ("f", self.f, 0), ("u", self.u, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_TIME:
                raise ValueError(f"{where}: {name}={value!r} is not an integer in [{low}, {MAX_TIME}]")
        if self.u <= self.q:
            raise ValueError(f"{where}: deadline u={self.u} is not after the requested start q={self.q}")
        if not self.D or not self.R:
            raise ValueError(f"{where}: the history is empty (|D|={len(self.D)}, |R|={len(self.R)}); it needs "
                             "at least one run")
        if len(self.D) != len(self.R):
            raise ValueError(f"{where}: |D|={len(self.D)} differs from |R|={len(self.R)}: each past run is one "
                             "(duration, CPU) pair")
        for name, hist, low in (("D", self.D, 1), ("R", self.R, 1)):
            for i, x in enumerate(hist):
                if isinstance(x, bool) or not isinstance(x, int) or not low <= x <= MAX_TIME:
                    raise ValueError(f"{where}: {name}[{i}]={x!r} is not an integer in [{low}, {MAX_TIME}]")
        if self.id in self.J:
            raise CycleError(f"{where} lists itself as a parent: {self.id} -> {self.id}")
        if len(set(self.J)) != len(self.J):
            raise ValueError(f"{where}: parents J={list(self.J)} name a job twice")

    @property
    def latest_start(self) -> int:
        """The window's end: s in [q, min(q + f, u)]."""
        return min(self.q + self.f, self.u)


@dataclass(frozen=True)
class Problem:
    """B_n = {b_j}: the jobs, their ids unique and every parent one of them, the parent graph acyclic."""

    jobs: tuple[Job, ...]

    def __post_init__(self) -> None:
        if not self.jobs:
            raise ValueError("the problem has no job")
        seen: set[str] = set()
        for job in self.jobs:
            if job.id in seen:
                raise ValueError(f"job id {job.id!r} is used twice")
            seen.add(job.id)
        for job in self.jobs:
            for p in job.J:
                if p not in seen:
                    raise ValueError(f"job {job.id!r}: parent {p!r} is not a job of the problem")
        cycle = find_cycle(self.jobs)
        if cycle:
            raise CycleError(f"the parents form a cycle: {' -> '.join(cycle)}")

    @classmethod
    def of(cls, jobs: Sequence[Job]) -> Problem:
        return cls(tuple(jobs))

    @property
    def n(self) -> int:
        return len(self.jobs)

    @cached_property
    def index(self) -> dict[str, int]:
        return {job.id: j for j, job in enumerate(self.jobs)}

    @cached_property
    def parents(self) -> tuple[tuple[int, ...], ...]:
        """parents[j] = the indices of J_j."""
        return tuple(tuple(self.index[p] for p in job.J) for job in self.jobs)

    @cached_property
    def order(self) -> tuple[int, ...]:
        """A topological order of the job indices (parents first; ties by index)."""
        return topological_order(self.parents)

    @property
    def horizon(self) -> int:
        """M >= T: no plan needs time after the latest deadline."""
        return max(job.u for job in self.jobs)

    @property
    def manual(self) -> tuple[int, ...]:
        """The manual schedule: every job at its requested start q."""
        return tuple(job.q for job in self.jobs)

    def check_starts(self, starts: Sequence[int]) -> None:
        """Raise ValueError unless there is one start per job inside its window [q, min(q + f, u)]."""
        if len(starts) != self.n:
            raise ValueError(f"{len(starts)} starts for {self.n} jobs")
        for job, s in zip(self.jobs, starts, strict=True):
            if not job.q <= s <= job.latest_start:
                raise ValueError(f"job {job.id!r}: start {s} is outside its window [{job.q}, {job.latest_start}]")


def topological_order(parents: Sequence[Sequence[int]]) -> tuple[int, ...]:
    """Kahn's algorithm on parents[j] (indices); the smallest ready index first."""
    import heapq

    n = len(parents)
    children: list[list[int]] = [[] for _ in range(n)]
    missing = [len(ps) for ps in parents]
    for j, ps in enumerate(parents):
        for p in ps:
            children[p].append(j)
    ready = [j for j in range(n) if missing[j] == 0]
    heapq.heapify(ready)
    out: list[int] = []
    while ready:
        j = heapq.heappop(ready)
        out.append(j)
        for c in children[j]:
            missing[c] -= 1
            if missing[c] == 0:
                heapq.heappush(ready, c)
    if len(out) != n:
        raise CycleError("the parents form a cycle")
    return tuple(out)


def find_cycle(jobs: Sequence[Job]) -> list[str]:
    """A cycle of the parent relation as ids [a, b, ..., a] (a's parent is b, ...), or [] if there is none."""
    parents = {job.id: job.J for job in jobs}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for root in parents:
        if state.get(root):
            continue
        path: list[str] = [root]
        stack = [iter(parents[root])]
        state[root] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
                continue
            if nxt not in parents:
                continue
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(parents[nxt]))
    return []
