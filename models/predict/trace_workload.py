"""A trace's first N jobs as feature submissions through the mechanism: SoWs from one predictor's laws, values from
the requested time, so that learned, requested and exact laws are compared on the same jobs and the same values.

Each job's duration law is the predictor's law at its submission (causal replay of the trace), on rounds of
`round_seconds` (ceil, capped at D_m) and capped at its requested time; it arrives at birth. Its value template
comes from its requested time in rounds q, identical in every run: V = concurrency * q until the deadline 2 q + 1
rounds after birth, then V / 4 until S_m (when V >= 4), then 0. Realized: the trace's runtime in rounds.
The coverage at level a is the share of jobs whose runtime (seconds) is at most the a-quantile of their law.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Self

import numpy as np

from models.predict.evaluate import make_predictor, replay
from models.predict.jobs import JobTable
from models.predict.online import JobFeatures
from models.predict.protocol import Predictor
from models.predict.sows import ExportConfig, rounds_law, sow_document, trace_bounds
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


def trace_document(table: JobTable, machine_nodes: int, config: ExportConfig) -> tuple[dict[str, Any], dict[str, Any]]:
    """The W.json document of the table's jobs with `config.predictor`'s laws, and the prediction report
    (coverage per level, predict_ms_p50)."""
    s = config.round_seconds
    d_max, _ = trace_bounds(table, config)
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
    document = sow_document(table, machine_nodes, config, laws, lambda i: None)
    n = len(table)
    report = {"sows": config.predictor, "jobs": n, "coverage": {str(q): covered[q] / n for q in LEVELS},
              "predict_ms_p50": statistics.median(timed.ms_per_job)}
    return document, report


def trace_features(table: JobTable, i: int, concurrency: int) -> tuple[str, JobFeatures]:
    """Job `i`'s tenant and features (SWF's -1, unknown, is the empty tag)."""
    def tag(prefix: str, value: int) -> str:
        return "" if value < 0 else f"{prefix}{value}"
    group = tag("group-", int(table.group[i]))
    return f"user-{int(table.user[i])}", JobFeatures(
        nodes=concurrency, requested_seconds=int(table.requested[i]), executable=tag("", int(table.executable[i])),
        queue=tag("", int(table.queue[i])), tags=(group,) if group else ())


def feature_submissions(table: JobTable, document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each job of a trace document as the features of a feature submission (the SoW JSON's `features`): its
    concurrency, request, value steps and tags (`trace_features`), ready at birth."""
    out: dict[str, dict[str, Any]] = {}
    for i, job in enumerate(document["jobs"]):
        _, f = trace_features(table, i, int(job["concurrency"]))
        out[job["id"]] = {**f.model_dump(mode="json"), "value_steps": job["value_steps"]}
    return out


def quoted_coverage(table: JobTable, laws: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Per level, the share of jobs (ids `job-i`) whose runtime is at most the quantile of the law quoted to them."""
    covered = dict.fromkeys(LEVELS, 0)
    for job_id, law in laws.items():
        d = Discrete(np.asarray(law["seconds"], dtype=np.float64), np.asarray([law["probabilities"]]))
        runtime = float(table.runtime[int(job_id.split("-")[1])])
        for q in LEVELS:
            covered[q] += int(runtime <= float(d.quantile(q)[0]))
    return {str(q): covered[q] / max(1, len(laws)) for q in LEVELS}
