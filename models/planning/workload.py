"""Capacity planning for the mechanism's workloads: each SoW's outcome law is its job's history, C the answer.

A workload job (birth b, SoW with outcomes (arrival offset a, duration d, probability) and concurrency c) becomes
the COS job: q = b + the largest arrival offset (the job has surely arrived), deadline u = b + k_i for the first
value step k_i that the job can still meet arriving last (k_i >= max a + min d), flexibility f = u - q (the
mechanism lets a job wait for any start), D = `history` draws of the duration from the SoW's law, R = c each
run. Parents come from the optional top-level "dependencies" field of a W.json document, {"child id":
["parent id", ...]}, read by capacity-plan only: `parse_workload` never sees it, so every existing workload and
its replay are unchanged.

The answer is COSPiS's optimum over K pair samples with tolerance alpha: C = max_k p_k, the node count at which
every sample fits and at most alpha K samples miss a deadline (or start before a parent ends), with its schedule.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from models.arrays import IntArray
from models.planning import cpsat
from models.planning.execution import Evaluation, evaluate, execute
from models.planning.history import pair_samples
from models.planning.plan import Plan, SolveParams
from models.planning.problem import Job, Problem
from models.simulation import Workload, WorkloadJob

DEPENDENCIES = "dependencies"
HISTORY = 200  # draws of each SoW's law that stand for its history


def split_dependencies(document: Any) -> tuple[Any, dict[str, tuple[str, ...]]]:
    """The W.json document without its optional "dependencies" field, and that field validated in shape."""
    if not isinstance(document, dict) or DEPENDENCIES not in document:
        return document, {}
    rest = {k: v for k, v in document.items() if k != DEPENDENCIES}
    deps = document[DEPENDENCIES]
    if not isinstance(deps, dict):
        raise ValueError(f"{DEPENDENCIES} must map a job id to a list of parent ids, not {type(deps).__name__}")
    out: dict[str, tuple[str, ...]] = {}
    for child, parents in deps.items():
        if not isinstance(parents, list) or not all(isinstance(p, str) for p in parents):
            raise ValueError(f"{DEPENDENCIES}[{child!r}]={parents!r} is not a list of job ids")
        out[child] = tuple(parents)
    return rest, out


def _job(wj: WorkloadJob, parents: tuple[str, ...], history: int, rng: np.random.Generator) -> Job:
    outcomes = wj.sow.outcomes
    last_arrival = max(o.arrival_offset for o in outcomes)
    shortest = min(o.duration for o in outcomes)
    steps = [k for k, _ in wj.sow.value_steps]
    k = next((k for k in steps if k >= last_arrival + shortest), steps[-1])
    q, u = wj.birth + last_arrival, wj.birth + max(k, last_arrival + 1)
    return Job(id=wj.id, q=q, f=u - q, u=u, D=tuple(int(x) for x in _durations(wj, history, rng)), J=parents,
               R=(wj.sow.concurrency,) * history)


def _durations(wj: WorkloadJob, size: int, rng: np.random.Generator) -> IntArray:
    p = np.array([o.probability for o in wj.sow.outcomes])
    i = rng.choice(len(p), size=size, p=p / p.sum())
    return np.array([wj.sow.outcomes[int(x)].duration for x in i], dtype=np.int64)


def problem_of(workload: Workload, dependencies: Mapping[str, tuple[str, ...]], history: int = HISTORY,
               seed: int = 0) -> Problem:
    """The COS problem of a workload (see the module docstring); unknown ids and cycles are refused."""
    ids = {j.id for j in workload.jobs}
    for child, parents in dependencies.items():
        for name in (child, *parents):
            if name not in ids:
                raise ValueError(f"{DEPENDENCIES} names job {name!r}, which is not in the workload")
    rng = np.random.default_rng([20, 3, seed])
    return Problem(tuple(_job(j, tuple(dependencies.get(j.id, ())), history, rng) for j in workload.jobs))


def fresh(workload: Workload, runs: int, seed: int) -> tuple[IntArray, IntArray]:
    """(d[k, j], r[k, j]): fresh draws of each SoW's law (its concurrency as CPU)."""
    rng = np.random.default_rng([20, 4, seed])
    d = np.stack([_durations(j, runs, rng) for j in workload.jobs], axis=1)
    r = np.broadcast_to(np.array([j.sow.concurrency for j in workload.jobs], dtype=np.int64), d.shape).copy()
    return d, r


@dataclass(frozen=True)
class CapacityAnswer:
    """C, the schedule behind it, the share of planning samples that miss a deadline under it, and the plan
    executed on fresh draws."""

    nodes: int | None
    platform_nodes: int
    plan: Plan
    schedule: dict[str, int]
    samples_missed: float
    samples_unavoidable: float
    evaluation: Evaluation

    def as_dict(self) -> dict[str, Any]:
        return {"nodes": self.nodes, "platform_nodes": self.platform_nodes, **self.plan.as_dict(),
                **self.evaluation.as_dict(), "samples_missed": self.samples_missed,
                "samples_unavoidable": self.samples_unavoidable, "schedule": self.schedule}


def capacity(workload: Workload, dependencies: Mapping[str, tuple[str, ...]], alpha: float, samples: int,
             params: SolveParams, runs: int = 25, seed: int = 0) -> CapacityAnswer:
    """COSPiS on the workload's problem: C and its schedule, checked on the samples and on fresh draws.

    No C (None) when no schedule exists (status infeasible: more than alpha K samples miss a deadline whatever
    the schedule; `samples_unavoidable` is the share in which some job misses even started at q) or none was
    found in time; the schedule is then the manual one."""
    problem = problem_of(workload, dependencies, seed=seed)
    d, r = pair_samples(problem, samples, np.random.default_rng([20, 5, seed]))
    built = cpsat.build_samples(problem, d, r, alpha, "cospis")
    plan = cpsat.extract(built, *cpsat.solve(built, params), params)
    missed = np.mean([max(execute(problem, plan.starts, d[k], r[k]).lateness) > 0 for k in range(samples)])
    q = np.array([job.q for job in problem.jobs])
    u = np.array([job.u for job in problem.jobs])
    unavoidable = float(np.mean((q + d > u).any(axis=1)))
    fd, fr = fresh(workload, runs, seed)
    return CapacityAnswer(nodes=None if plan.fallback else int(plan.peak_estimated),
                          platform_nodes=workload.platform.C, plan=plan,
                          schedule={job.id: s for job, s in zip(problem.jobs, plan.starts, strict=True)},
                          samples_missed=float(missed), samples_unavoidable=unavoidable,
                          evaluation=evaluate(problem, plan, fd, fr))


def preparation_example(seed: int = 0, pipelines: int = 4, runs: int = 3, period: int = 12) -> dict[str, Any]:
    """A W.json document (with "dependencies") of training runs that each follow their data preparation.

    Pipeline p submits, every `period` rounds, a preparation (2 nodes, about 2 rounds) and a training run (the
    pipelines workload's concurrencies, about 6 rounds) born together; the training run lists the preparation as
    its parent. The SoWs are the pipelines workload's (models/workloads.py pipeline_sow), with a later lead for
    the training run. The document is for capacity-plan; `simulate` refuses its "dependencies" field.
    """
    from models.workloads import pipeline_sow, pipelines_platform, workload_document

    platform = pipelines_platform(seed)
    rng = np.random.default_rng([20, 6, seed])
    jobs: list[WorkloadJob] = []
    dependencies: dict[str, list[str]] = {}
    for p in range(pipelines):
        conc = int(rng.choice([2, 4, 8]))
        prep = pipeline_sow(platform, lead=1, jitter=1, median=2.0, sigma=0.3, concurrency=2, value=20.0,
                            signal_mode="none")
        train = pipeline_sow(platform, lead=4, jitter=1, median=float(rng.uniform(4.0, 8.0)), sigma=0.4,
                             concurrency=conc, value=80.0, signal_mode="none")
        phase = int(rng.integers(0, period))
        for r in range(runs):
            birth = phase + r * period
            for kind, sow in (("prep", prep), ("train", train)):
                o = sow.outcomes[int(rng.integers(0, len(sow.outcomes)))]
                jobs.append(WorkloadJob(id=f"pipe{p}-{kind}{r}", birth=birth, sow=sow, arrival_offset=o.arrival_offset,
                                        duration=o.duration))
            dependencies[f"pipe{p}-train{r}"] = [f"pipe{p}-prep{r}"]
    jobs.sort(key=lambda j: (j.birth, j.id))
    document = workload_document(Workload(name="preparation", platform=platform, jobs=tuple(jobs)))
    document[DEPENDENCIES] = dependencies
    return document
