"""Every planner against brute force over all schedules of tiny problems (3-4 jobs, short windows), with deadlines
that never bind and with deadlines that do (so eq. 2/6's rows are built and matter)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from models.planning import cpsat, milp
from models.planning.history import estimates, pair_samples
from models.planning.plan import SolveParams
from models.planning.problem import Job, Problem

PARAMS = SolveParams(time_limit=10.0, workers=1)


def load_at(starts: tuple[int, ...], d: np.ndarray, r: np.ndarray) -> int:
    """The peak by stepping through every time unit (independent of plan.peak_load's sweep)."""
    end = max(s + int(x) for s, x in zip(starts, d, strict=True))
    return max(sum(int(r[j]) for j, s in enumerate(starts) if s <= t < s + int(d[j])) for t in range(end))


def sample_ok(problem: Problem, starts: tuple[int, ...], d: np.ndarray, deadlines: bool = True) -> bool:
    """Sample durations d meet every deadline (unless `deadlines` is False) and dependency at these starts."""
    for j, job in enumerate(problem.jobs):
        if deadlines and starts[j] + d[j] > job.u:
            return False
        if any(starts[p] + d[p] > starts[j] for p in problem.parents[j]):
            return False
    return True


def schedules(problem: Problem) -> itertools.product[tuple[int, ...]]:
    return itertools.product(*(range(job.q, job.latest_start + 1) for job in problem.jobs))


def brute_det(problem: Problem, d: np.ndarray, r: np.ndarray, deadlines: bool = True) -> float:
    best = math.inf
    for starts in schedules(problem):
        if sample_ok(problem, starts, d, deadlines):
            best = min(best, load_at(starts, d, r))
    return best


def brute_samples(problem: Problem, d: np.ndarray, r: np.ndarray, alpha: float) -> float:
    """min over schedules with at most floor(K alpha) bad samples of max_k peak_k (every sample's load counts)."""
    k_count = d.shape[0]
    best = math.inf
    for starts in schedules(problem):
        bad = sum(not sample_ok(problem, starts, d[k]) for k in range(k_count))
        if bad <= math.floor(k_count * alpha + 1e-9):
            best = min(best, max(load_at(starts, d[k], r[k]) for k in range(k_count)))
    return best


def tiny(seed: int, n: int, tight: bool = False) -> Problem:
    """n jobs with short windows, random small histories and a chain-ish parent set. The deadline u is past every
    run from the window (q + f + max D + 0..2), or with `tight` a median run after a start inside the window
    (q + 0..f + median D), so that later starts and longer runs miss it."""
    rng = np.random.default_rng(seed)
    jobs: list[Job] = []
    for j in range(n):
        q = int(rng.integers(0, 6))
        f = int(rng.integers(0, 5))
        hist = int(rng.integers(3, 6))
        D = tuple(int(x) for x in rng.integers(1, 5, size=hist))
        R = tuple(int(x) for x in rng.integers(1, 6, size=hist))
        parents = (f"b{j - 1}",) if j > 0 and rng.random() < 0.5 else ()
        if parents:  # start the child after a typical parent run, so that most such problems are feasible
            q = jobs[-1].q + int(np.median(jobs[-1].D)) + int(rng.integers(0, 2))
        u = q + (int(rng.integers(0, f + 1)) + int(np.median(D)) if tight else f + max(D) + int(rng.integers(0, 3)))
        jobs.append(Job(id=f"b{j}", q=q, f=f, u=u, D=D, J=parents, R=R))
    return Problem(tuple(jobs))


CASES = [(seed, 3 + seed % 2, tight) for seed in range(10) for tight in (False, True)]


def test_the_tight_fixtures_deadlines_bind_and_the_loose_ones_never_do() -> None:
    moved = infeasible = 0
    for seed, n, tight in CASES:
        problem = tiny(seed, n, tight)
        for estimator in ("p50", "p100"):
            d, r = estimates(problem, estimator)
            with_deadlines, without = brute_det(problem, d, r), brute_det(problem, d, r, deadlines=False)
            assert tight or with_deadlines == without
            moved += math.isfinite(with_deadlines) and with_deadlines != without
            infeasible += math.isinf(with_deadlines) and math.isfinite(without)
    assert moved >= 3 and infeasible >= 3  # deadlines raise the optimum on some problems, rule out others


@pytest.mark.parametrize(("seed", "n", "tight"), CASES)
@pytest.mark.parametrize("estimator", ["p50", "p75", "p100", "mode"])
def test_det_matches_brute_force(seed: int, n: int, tight: bool, estimator: str) -> None:
    problem = tiny(seed, n, tight)
    d, r = estimates(problem, estimator)  # type: ignore[arg-type]
    expected = brute_det(problem, d, r)
    plan = cpsat.solve_det(problem, estimator, PARAMS)  # type: ignore[arg-type]
    if math.isinf(expected):
        assert plan.status == "infeasible" and plan.fallback and plan.starts == problem.manual
    else:
        assert plan.status == "optimal" and plan.peak_estimated == expected and plan.gap == 0.0
        assert sample_ok(problem, plan.starts, d)


@pytest.mark.parametrize(("seed", "n", "tight"), CASES)
@pytest.mark.parametrize("indexed", [False, True])
def test_milp_matches_brute_force(seed: int, n: int, tight: bool, indexed: bool) -> None:
    problem = tiny(seed, n, tight)
    d, r = estimates(problem, "p50")
    expected = brute_det(problem, d, r)
    plan = milp.solve_milp(problem, "p50", PARAMS, indexed=indexed)
    if math.isinf(expected):
        assert plan.status == "infeasible" and plan.fallback
    else:
        assert plan.status == "optimal" and plan.peak_estimated == expected
        assert sample_ok(problem, plan.starts, d)
        problem.check_starts(plan.starts)


@pytest.mark.parametrize(("seed", "n", "tight"), CASES)
@pytest.mark.parametrize("alpha", [0.0, 0.34, 0.5])
def test_cospis_matches_brute_force(seed: int, n: int, tight: bool, alpha: float) -> None:
    problem = tiny(seed, n, tight)
    d, r = pair_samples(problem, 4, np.random.default_rng(seed))
    expected = brute_samples(problem, d, r, alpha)
    built = cpsat.build_samples(problem, d, r, alpha)
    plan = cpsat.extract(built, *cpsat.solve(built, PARAMS), PARAMS)
    if math.isinf(expected):
        assert plan.status == "infeasible"
    else:
        assert plan.status == "optimal" and plan.peak_estimated == expected
        bad = sum(not sample_ok(problem, plan.starts, d[k]) for k in range(4))
        assert bad <= math.floor(4 * alpha + 1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_soru_is_cospis_with_estimated_cpu(seed: int) -> None:
    problem = tiny(seed, 4)
    d, _ = pair_samples(problem, 5, np.random.default_rng([20, 1, seed]))
    _, r_hat = estimates(problem, "p50")
    r = np.broadcast_to(r_hat, d.shape)
    expected = brute_samples(problem, d, r, 0.4)
    plan = cpsat.solve_soru(problem, "p50", 5, 0.4, np.random.default_rng([20, 1, seed]), PARAMS)
    if math.isinf(expected):
        assert plan.status == "infeasible"
    else:
        assert plan.status == "optimal" and plan.peak_estimated == expected


def test_manual_plan_starts_every_job_at_q_with_the_p100_peak() -> None:
    problem = tiny(3, 4)
    plan = cpsat.manual_plan(problem)
    d, r = estimates(problem, "p100")
    assert plan.starts == tuple(job.q for job in problem.jobs)
    assert plan.peak_estimated == load_at(plan.starts, d, r)


def test_milp_solves_whatever_worker_counts_came_before() -> None:
    # HiGHS sizes one global thread pool per process: a later instance asking another size used to fail.
    problem = tiny(2, 3)
    for workers in (1, 2, 1):
        plan = milp.solve_milp(problem, "p50", SolveParams(time_limit=5.0, workers=workers))
        assert plan.status == "optimal"
