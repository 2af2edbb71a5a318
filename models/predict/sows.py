"""A real trace as a mechanism workload: each job's SoW carries the engine's duration law at its submission.

Choices (documented in docs/prediction.md):
- rounds of `round_seconds`; a job is born in the round of its submission and arrives at once (offset 0):
  the arrival is its submit round, not a learned arrival law;
- its duration law is the learned predictor's law at its submission (causal replay of the trace), each
  support value x seconds mapped to ceil(x / round_seconds) rounds, capped at D_m;
- concurrency = ceil(processors * C / machine nodes), clipped to [1, C_m];
- value template: V = concurrency * q90 (node-rounds of the predicted 0.9-quantile, at least 1) until the
  deadline 2 * q90 + 1 rounds after birth, then V / 4 until S_m (when V >= 4), then 0;
- `realized` = (0, ceil(real runtime / round_seconds)) capped at D_m.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from models.predict.evaluate import make_predictor, replay
from models.predict.jobs import JobTable
from models.predictive import Discrete

MAX_D = 10_000  # the Platform bound on D_m and S_m


@dataclass(frozen=True)
class ExportConfig:
    """How a trace becomes SoWs."""

    round_seconds: int = 3600
    nodes: int = 32  # C
    max_concurrency: int | None = None  # C_m (default C)
    predictor: str = "learned"
    samples: int = 1000  # Monte Carlo samples of the platform's failure oracle
    seed: int = 0

    def __post_init__(self) -> None:
        if self.round_seconds < 1:
            raise ValueError(f"round_seconds={self.round_seconds} must be >= 1")
        if self.nodes < 1:
            raise ValueError(f"nodes={self.nodes} must be >= 1")
        if self.max_concurrency is not None and not 1 <= self.max_concurrency <= self.nodes:
            raise ValueError(f"max_concurrency={self.max_concurrency} must lie in [1, nodes={self.nodes}]")


def rounds_law(law: Discrete, row: int, round_seconds: int, d_max: int) -> list[tuple[int, float]]:
    """(duration in rounds, probability) of one job: ceil(x / round_seconds) capped at d_max, merged."""
    merged: dict[int, float] = {}
    for x, p in zip(law.support, law.probs[row], strict=True):
        if p > 0:
            d = min(d_max, max(1, math.ceil(x / round_seconds)))
            merged[d] = merged.get(d, 0.0) + float(p)
    total = math.fsum(merged.values())
    return [(d, p / total) for d, p in sorted(merged.items())]


def export_sows(table: JobTable, machine_nodes: int, config: ExportConfig) -> dict[str, Any]:
    """The W.json document of the table's jobs (see the module docstring for every choice)."""
    s = config.round_seconds
    c_m = config.max_concurrency or config.nodes
    d_max = min(MAX_D, max(1, math.ceil(int(table.requested.max()) / s)))
    s_max = min(MAX_D, 3 * d_max + 2)
    laws: dict[int, list[tuple[int, float]]] = {}

    def keep(batch: list[int], law: Discrete) -> None:
        for row, index in enumerate(batch):
            laws[index] = rounds_law(law, row, s, d_max)

    replay(table, make_predictor(config.predictor), keep)
    t0 = int(table.submit[0])
    jobs: list[dict[str, Any]] = []
    values: list[float] = []
    for i in range(len(table)):
        outcomes = laws[i]
        cum = np.cumsum([p for _, p in outcomes])
        q90 = outcomes[min(int(np.searchsorted(cum, 0.9 - 1e-12)), len(outcomes) - 1)][0]
        conc = min(c_m, max(1, math.ceil(int(table.size[i]) * config.nodes / machine_nodes)))
        value = float(max(1, conc * q90))
        deadline = min(s_max, 2 * q90 + 1)
        steps = [[deadline, value]] + ([[s_max, value / 4]] if deadline < s_max and value >= 4 else [])
        values.append(value)
        jobs.append({
            "id": f"job-{i}",
            "birth": (int(table.submit[i]) - t0) // s,
            "concurrency": conc,
            "value_steps": steps,
            "outcomes": [[0, d, p] for d, p in outcomes],
            "signal_mode": "none",
            "realized": [0, min(d_max, max(1, math.ceil(int(table.runtime[i]) / s)))],
        })
    platform = {"C": config.nodes, "C_m": c_m, "D_m": d_max, "S_m": s_max, "H": max(1.0, max(values)),
                "seed": config.seed, "samples": config.samples}
    return {"platform": platform, "jobs": jobs}
