"""A workload's jobs as COS jobs, by hand; the "dependencies" field stays out of the mechanism's parser."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from models.planning.workload import fresh, preparation_example, problem_of, split_dependencies
from models.workloads import parse_workload

PLATFORM = {"C": 8, "C_m": 4, "D_m": 6, "S_m": 20, "H": 100.0, "epsilon": 0.1, "eps0": 0.05, "delta0": 0.05,
            "seed": 0}


def document() -> dict[str, object]:
    return {"platform": PLATFORM, "jobs": [
        {"id": "prep", "birth": 2, "concurrency": 2, "value_steps": [[6, 10.0], [20, 5.0]],
         "outcomes": [[0, 1, 0.5], [1, 2, 0.5]], "realized": [0, 1]},
        {"id": "train", "birth": 2, "concurrency": 4, "value_steps": [[3, 10.0], [12, 5.0]],
         "outcomes": [[2, 3, 0.25], [3, 5, 0.75]], "realized": [3, 5]}],
        "dependencies": {"train": ["prep"]}}


def test_q_is_the_latest_arrival_and_u_the_deadline_of_the_first_valuable_step() -> None:
    rest, deps = split_dependencies(document())
    assert deps == {"train": ("prep",)} and "dependencies" not in rest
    problem = problem_of(parse_workload(rest), deps, history=400)
    prep, train = problem.jobs
    # prep: q = 2 + 1 (latest arrival); first step with k >= 1 + 1 is k = 6: u = 8, f = u - q.
    assert (prep.q, prep.u, prep.f, prep.J) == (3, 8, 5, ())
    # train: q = 2 + 3; k = 3 < 3 + 3, so the deadline is the next step: u = 2 + 12.
    assert (train.q, train.u, train.f, train.J) == (5, 14, 9, ("prep",))
    assert set(train.D) == {3, 5} and set(train.R) == {4} and len(train.D) == 400
    assert train.D.count(5) / 400 == pytest.approx(0.75, abs=0.07)
    d, r = fresh(parse_workload(rest), 2000, 0)
    assert np.mean(d[:, 1] == 5) == pytest.approx(0.75, abs=0.03) and set(r[:, 0].tolist()) == {2}


def test_split_leaves_a_document_without_the_field_alone() -> None:
    doc = document()
    del doc["dependencies"]
    before = copy.deepcopy(doc)
    rest, deps = split_dependencies(doc)
    assert rest is doc and doc == before and deps == {}


def test_the_example_is_a_valid_workload_with_each_training_after_its_preparation() -> None:
    rest, deps = split_dependencies(preparation_example(seed=1, pipelines=2, runs=2))
    workload = parse_workload(rest)
    assert len(workload.jobs) == 8 and deps == {f"pipe{p}-train{r}": (f"pipe{p}-prep{r}",)
                                                for p in range(2) for r in range(2)}
    assert preparation_example(seed=1) == preparation_example(seed=1)


def test_no_node_count_when_too_many_samples_miss_whatever_the_schedule() -> None:
    from models.planning.plan import SolveParams
    from models.planning.workload import capacity

    doc = document()
    doc["jobs"][0]["value_steps"] = [[2, 10.0], [20, 5.0]]  # type: ignore[index]
    rest, deps = split_dependencies(doc)
    # prep: q = 3, u = 2 + 2 = 4: a 2-round run (probability 1/2) always misses.
    params = SolveParams(time_limit=5.0, workers=1)
    answer = capacity(parse_workload(rest), deps, alpha=0.0, samples=20, params=params, runs=5)
    assert answer.nodes is None and answer.plan.status == "infeasible" and answer.plan.fallback
    assert 0.2 < answer.samples_unavoidable < 0.8
    tolerant = capacity(parse_workload(rest), deps, alpha=0.9, samples=20, params=params, runs=5)
    # prep (2 CPUs) and train (4 CPUs) never overlap once train waits for prep: C = 4.
    assert tolerant.nodes == 4 and tolerant.samples_missed <= 0.9
    assert tolerant.schedule["train"] >= tolerant.schedule["prep"] + 1
