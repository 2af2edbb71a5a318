"""A trace's first N jobs as feature submissions through the mechanism: SoWs from one predictor's laws, values from
the requested time, so that learned, requested and exact laws are compared on the same jobs and the same values.

Each job's duration law is the predictor's law at its submission (causal replay of the trace), on rounds of
`round_seconds` (ceil, capped at D_m) and capped at its requested time; it arrives at birth. Its value template
comes from its requested time in rounds q, identical in every run: V = concurrency * q until the deadline 2 q + 1
rounds after birth, then V / 4 until S_m (when V >= 4), then 0. Realized: the trace's runtime in rounds.
The coverage at level a is the share of jobs whose runtime (seconds) is at most the a-quantile of their law.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Self

import numpy as np

from models.predict.evaluate import make_predictor, replay
from models.predict.jobs import JobTable
from models.predict.protocol import Predictor
from models.predict.sows import MAX_D, ExportConfig, rounds_law
from models.predictive import Discrete

LEVELS = (0.5, 0.9)


@dataclass
class Timed:
    """A predictor whose `predict` calls are timed (milliseconds per job of each call)."""

    inner: Predictor
    ms_per_job: list[float] = field(default_factory=list)
    name: str = ""

    def __post_init__(self) -> None:
        self.name = self.name or self.inner.name

    def fit(self, data: JobTable) -> Self:
        self.inner.fit(data)
        return self

    def observe(self, index: int) -> None:
        self.inner.observe(index)

    def predict(self, query: Sequence[int]) -> Discrete:
        began = time.perf_counter()
        law = self.inner.predict(query)
        self.ms_per_job.append(1000 * (time.perf_counter() - began) / max(1, len(query)))
        return law


@dataclass(frozen=True)
class JobTerms:
    """What a trace job brings to the mechanism besides its law: its concurrency, its value steps (from its
    requested time, the same whatever law it declares) and its realized duration in rounds."""

    concurrency: int
    steps: list[list[float]]
    realized: int


def trace_bounds(table: JobTable, config: ExportConfig) -> tuple[int, int]:
    """(D_m, S_m) of a trace's platform: the longest request in rounds, and room for its deadline."""
    d_max = min(MAX_D, max(1, math.ceil(int(table.requested.max()) / config.round_seconds)))
    return d_max, min(MAX_D, 3 * d_max + 2)


def job_terms(table: JobTable, i: int, machine_nodes: int, config: ExportConfig, d_max: int, s_max: int) -> JobTerms:
    """Job `i`'s terms: V = concurrency * q until 2 q + 1 rounds after birth (q its requested time in rounds), then
    V / 4 until S_m (when V >= 4), then 0."""
    s = config.round_seconds
    c_m = config.max_concurrency or config.nodes
    requested = min(d_max, max(1, math.ceil(int(table.requested[i]) / s)))
    conc = min(c_m, max(1, math.ceil(int(table.size[i]) * config.nodes / machine_nodes)))
    value = float(conc * requested)
    deadline = min(s_max, 2 * requested + 1)
    steps = [[deadline, value]] + ([[s_max, value / 4]] if deadline < s_max and value >= 4 else [])
    return JobTerms(conc, steps, min(d_max, max(1, math.ceil(int(table.runtime[i]) / s))))


def trace_platform(config: ExportConfig, d_max: int, s_max: int, jobs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The W.json platform of a trace's jobs (H: the largest value)."""
    return {"C": config.nodes, "C_m": config.max_concurrency or config.nodes, "D_m": d_max, "S_m": s_max,
            "H": max(1.0, max(float(j["value_steps"][0][1]) for j in jobs)), "seed": config.seed,
            "samples": config.samples}


def trace_document(table: JobTable, machine_nodes: int, config: ExportConfig) -> tuple[dict[str, Any], dict[str, Any]]:
    """The W.json document of the table's jobs with `config.predictor`'s laws, and the prediction report
    (coverage per level, predict_ms_p50)."""
    s = config.round_seconds
    d_max, s_max = trace_bounds(table, config)
    laws: dict[int, list[tuple[int, float]]] = {}
    covered = dict.fromkeys(LEVELS, 0)

    def keep(batch: list[int], law: Discrete) -> None:
        runtime = table.runtime[np.asarray(batch)].astype(np.float64)
        for q in LEVELS:
            covered[q] += int(np.sum(runtime <= law.quantile(q)))
        for row, index in enumerate(batch):
            laws[index] = rounds_law(law, row, s, d_max)

    timed = Timed(make_predictor(config.predictor))
    replay(table, timed, keep)
    t0 = int(table.submit[0])
    jobs: list[dict[str, Any]] = []
    for i in range(len(table)):
        terms = job_terms(table, i, machine_nodes, config, d_max, s_max)
        jobs.append({
            "id": f"job-{i}",
            "birth": (int(table.submit[i]) - t0) // s,
            "concurrency": terms.concurrency,
            "value_steps": terms.steps,
            "outcomes": [[0, d, p] for d, p in laws[i]],
            "signal_mode": "none",
            "realized": [0, terms.realized],
        })
    platform = trace_platform(config, d_max, s_max, jobs)
    n = len(table)
    report = {"sows": config.predictor, "jobs": n, "coverage": {str(q): covered[q] / n for q in LEVELS},
              "predict_ms_p50": statistics.median(timed.ms_per_job)}
    return {"platform": platform, "jobs": jobs}, report
