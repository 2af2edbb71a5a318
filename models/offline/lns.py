"""Time-window large-neighbourhood search: re-solve one window's jobs at a time with every other job fixed (CP-SAT).

Given a feasible schedule, a window [a, a + w) frees the jobs that run with a start in it, and the jobs that do not
run but have a valuable start in it; every other job keeps its start (or stays out). The plain interval model of
the freed jobs, against the fixed load, is solved by CP-SAT hinted with the current schedule, so a window's answer
is never worse; a better one replaces the schedule. Windows slide by `step` over the horizon, pass after pass,
until a whole pass improves nothing or the CP-SAT time of the window solves reaches the limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ortools.sat.python import cp_model

from models.offline import cpsat_model as cpsat
from models.offline.hindsight import HindsightInstance, HindsightJob


@dataclass(frozen=True)
class LnsParams:
    """Window length and step (rounds), CP-SAT time per window and in total (s), workers, deterministic time."""

    window: int = 50
    step: int = 25
    window_time: float = 4.0
    time_limit: float = 30.0
    workers: int = 1
    deterministic: bool = False

    def __post_init__(self) -> None:
        for name in ("window", "step", "workers"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)} is below the bound 1")
        for name in ("window_time", "time_limit"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name}={getattr(self, name)} must be above 0 seconds")


@dataclass(frozen=True)
class LnsResult:
    """The improved schedule and its value, the windows solved and improved, and their CP-SAT time."""

    starts: dict[str, int | None]
    value: float
    windows: int
    improved: int
    seconds: float


def improve(instance: HindsightInstance, starts: Mapping[str, int | None], params: LnsParams) -> LnsResult:
    """Window passes over the horizon from a feasible schedule; the value never drops."""
    instance.check_schedule(starts)
    best = {job.id: starts.get(job.id) for job in instance.jobs}
    value = instance.schedule_value(best)
    windows = improved = 0
    spent = 0.0
    horizon = instance.horizon
    while True:
        pass_improved = False
        for a in range(0, max(horizon, 1), params.step):
            if spent >= params.time_limit:
                return LnsResult(best, value, windows, improved, spent)
            budget = min(params.window_time, params.time_limit - spent)
            candidate, seconds = _solve_window(instance, best, a, a + params.window, budget, params)
            spent += seconds
            windows += 1
            candidate_value = instance.schedule_value(candidate) if candidate is not None else value
            if candidate is not None and candidate_value > value + 1e-9:
                best, value = candidate, candidate_value
                improved += 1
                pass_improved = True
        if not pass_improved:
            return LnsResult(best, value, windows, improved, spent)


def is_free(job: HindsightJob, start: int | None, a: int, b: int) -> bool:
    """A run job starting in [a, b), or a job out of the schedule with a valuable start in [a, b)."""
    if start is not None:
        return a <= start < b
    return job.arrival < b and job.last_start >= a


def _solve_window(instance: HindsightInstance, starts: Mapping[str, int | None], a: int, b: int, budget: float,
                  params: LnsParams) -> tuple[dict[str, int | None] | None, float]:
    built = cpsat.build(instance, time_indexed=False)
    model = built.model
    for job in instance.jobs:
        if job.id not in built.run or is_free(job, starts.get(job.id), a, b):
            continue
        s = starts.get(job.id)
        # Outside the window: run[j] = [s is not None] and start[j] = s.
        model.add(built.run[job.id] == int(s is not None))
        if s is not None:
            model.add(built.start[job.id] == s)
    cpsat.add_hint(built, starts)
    solver = cp_model.CpSolver()
    if params.deterministic:
        solver.parameters.max_deterministic_time = budget
        solver.parameters.interleave_search = params.workers > 1
    else:
        solver.parameters.max_time_in_seconds = budget
    solver.parameters.num_workers = params.workers
    status = solver.solve(model)
    seconds = solver.response_proto.deterministic_time if params.deterministic else solver.wall_time
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None, seconds
    return {job.id: cpsat.start_of(built, solver, job.id) for job in instance.jobs}, seconds
