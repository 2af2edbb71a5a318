"""Calibration: announced failure probabilities match realized failure frequencies."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

from cli.main import main
from mechanism.platform import Platform
from models.calibration import calibrate
from models.simulation import JobRecord, SimulationResult, run_simulation
from models.workloads import parse_workload

PLATFORM = {"C": 4, "C_m": 3, "D_m": 3, "S_m": 6, "H": 50.0, "epsilon": 0.1, "eps0": 0.05, "delta0": 0.05,
            "seed": 1, "samples": 500}
JOBS: list[dict[str, Any]] = [
    {"id": "A", "birth": 0, "concurrency": 2, "value_steps": [[6, 40.0]],
     "outcomes": [[0, 1, 0.3, None], [0, 3, 0.3, None], [1, 2, 0.4, None]]},
    {"id": "B", "birth": 0, "concurrency": 2, "value_steps": [[2, 40.0], [6, 5.0]],
     "outcomes": [[0, 2, 0.5, None], [1, 1, 0.5, None]]},
    {"id": "C", "birth": 1, "concurrency": 1, "value_steps": [[3, 30.0], [6, 5.0]],
     "outcomes": [[0, 1, 0.5, None], [1, 2, 0.5, None]]},
    {"id": "J", "birth": 1, "concurrency": 2, "value_steps": [[2, 45.0], [6, 10.0]],
     "outcomes": [[0, 1, 0.5, None], [0, 2, 0.5, None]]},
]


def record(id_: str, failure: float, state: str) -> JobRecord:
    return JobRecord(id=id_, birth=0, concurrency=1, state=state, start=0, duration=1, value=0.0, charge=0.0,
                     failure=failure, failure_raw=failure)


def test_calibration_compares_mean_estimates_with_realized_failure_rates() -> None:
    p = Platform(C=4, C_m=1, D_m=1, S_m=2, H=2.0)
    r1 = SimulationResult("x", p, jobs=[record("a", 0.2, "completed"), record("b", 0.6, "evicted")])
    r2 = SimulationResult("x", p, jobs=[record("c", 0.0, "completed"), record("d", 0.9, "cancelled")])
    c = calibrate([r1, r2], bins=(0.0, 0.5, 1.0))
    assert (c.runs, c.jobs, c.runs_without_jobs) == (2, 4, 0)
    assert c.estimate == pytest.approx(0.425) and c.realized == 0.5
    assert c.gap == pytest.approx(((0.5 - 0.4) + (0.5 - 0.45)) / 2)
    assert [(b.jobs, b.realized) for b in c.bins] == [(2, 0.0), (2, 1.0)]


def test_runs_that_scheduled_no_job_are_counted_apart_and_left_out_of_the_gap() -> None:
    p = Platform(C=4, C_m=1, D_m=1, S_m=2, H=2.0)
    r1 = SimulationResult("x", p, jobs=[record("a", 0.2, "completed"), record("b", 0.6, "evicted")])
    idle = SimulationResult("x", p, jobs=[])
    c = calibrate([idle, r1, idle], bins=(0.0, 0.5, 1.0))
    assert (c.runs, c.runs_without_jobs, c.jobs) == (1, 2, 2)
    assert c.gap == pytest.approx(0.5 - 0.4)
    from cli.commands.calibrate import table
    assert table(c).startswith("1 runs (2 more scheduled no job), 2 scheduled jobs:")


def test_exact_estimates_match_realized_failure_frequencies() -> None:
    """Over independent realizations the jobs quoted a 50 % risk fail about half the time, those quoted 0 never."""
    by_estimate: dict[float, list[bool]] = {}
    for trial in range(400):
        rng = np.random.default_rng(trial)
        jobs = []
        for j in JOBS:
            p = np.array([o[2] for o in j["outcomes"]])
            o = j["outcomes"][int(rng.choice(len(p), p=p))]
            jobs.append({**j, "realized": [o[0], o[1]]})
        result = run_simulation(parse_workload({"platform": PLATFORM, "jobs": jobs}), oracle="exact")
        for rec in result.jobs:
            if rec.start is not None and rec.failure_raw is not None:
                by_estimate.setdefault(round(rec.failure_raw, 6), []).append(rec.state in ("evicted", "cancelled"))
    assert set(by_estimate) >= {0.0, 0.5}
    for est, fails in by_estimate.items():
        n = len(fails)
        if n >= 30:
            tolerance = 4 * math.sqrt(max(est * (1 - est), 0.01) / n)
            assert abs(np.mean(fails) - est) <= tolerance, (est, n, np.mean(fails))


def test_calibrate_command_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", "--workload", "overload", "--seeds", "2", "--rounds", "6", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["runs"] == 2 and {"gap", "gap_se", "bins", "estimate", "realized"} <= set(out)
