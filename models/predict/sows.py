"""A real trace as a mechanism workload: each job's SoW carries the engine's duration law at its submission.

Choices (documented in docs/prediction.md):
- rounds of `round_seconds`; a job is born in the round of its submission and arrives at once (offset 0):
  the arrival is its submit round, not a learned arrival law;
- its duration law is the learned predictor's law at its submission (causal replay of the trace), each
  support value x seconds mapped to ceil(x / round_seconds) rounds, capped at D_m;
- concurrency = ceil(processors * C / machine nodes), clipped to [1, C_m];
- value template: V = concurrency * q90 (node-rounds of the predicted 0.9-quantile, at least 1) until the
  deadline 2 * q90 + 1 rounds after birth, then V / 4 until S_m (when V >= 4), then 0;
- `realized` = (0, ceil(real runtime / round_seconds)) capped at D_m;
- `headroom` H > 0 (optional, default 0): the platform's capacity model is a point at C - H nodes with the price
  floor C, so the failure estimates assume H nodes fewer than C while the prices and the overload step keep C
  (docs/prediction.md, "A failure oracle with headroom"; docs/model.md 10.4-10.5);
- `reserve` (UP, DOWN) (optional, not with a headroom): the platform sets the failure oracle's reserve itself, UP
  nodes more after a round whose overload step removed a job, DOWN fewer after any other, within [0, C - 1]
  (docs/model.md 10.9; docs/prediction.md, "A reserve the platform sets itself").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mechanism.capacity import CapacityModel
from mechanism.platform import Overload
from mechanism.reserve import Reserve
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
    headroom: int = 0  # nodes the failure oracle leaves out of C (0: none, the platform has no capacity model)
    reserve: tuple[float, float] | None = None  # (up, down) of the platform's own reserve (mechanism/reserve.py)
    overload: Overload = "newest"  # the platform's overload rule (Platform.overload, docs/model.md 6)

    def __post_init__(self) -> None:
        if self.round_seconds < 1:
            raise ValueError(f"round_seconds={self.round_seconds} must be >= 1")
        if self.nodes < 1:
            raise ValueError(f"nodes={self.nodes} must be >= 1")
        if self.max_concurrency is not None and not 1 <= self.max_concurrency <= self.nodes:
            raise ValueError(f"max_concurrency={self.max_concurrency} must lie in [1, nodes={self.nodes}]")
        if not 0 <= self.headroom < self.nodes:
            raise ValueError(f"headroom={self.headroom} must lie in [0, nodes - 1 = {self.nodes - 1}]")
        if self.reserve is not None and self.headroom:
            raise ValueError(f"reserve={self.reserve} and headroom={self.headroom} exclude each other")
        if self.reserve is not None and self.nodes < 2:
            raise ValueError(f"reserve={self.reserve} needs nodes >= 2 (it holds back at most nodes - 1)")


def rounds_law(law: Discrete, row: int, round_seconds: int, d_max: int) -> list[tuple[int, float]]:
    """(duration in rounds, probability) of one job: ceil(x / round_seconds) capped at d_max, merged."""
    merged: dict[int, float] = {}
    for x, p in zip(law.support, law.probs[row], strict=True):
        if p > 0:
            d = min(d_max, max(1, math.ceil(x / round_seconds)))
            merged[d] = merged.get(d, 0.0) + float(p)
    total = math.fsum(merged.values())
    return [(d, p / total) for d, p in sorted(merged.items())]


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


def job_terms(table: JobTable, i: int, machine_nodes: int, config: ExportConfig, d_max: int, s_max: int,
              q: int | None = None) -> JobTerms:
    """Job `i`'s terms: concurrency ceil(processors * C / machine nodes) in [1, C_m]; V = concurrency * q until
    2 q + 1 rounds after birth (q: `q` rounds, by default its requested time in rounds), then V / 4 until S_m (when
    V >= 4), then 0; realized, its runtime in rounds."""
    s = config.round_seconds
    c_m = config.max_concurrency or config.nodes
    rounds = min(d_max, max(1, math.ceil(int(table.requested[i]) / s))) if q is None else q
    conc = min(c_m, max(1, math.ceil(int(table.size[i]) * config.nodes / machine_nodes)))
    value = float(conc * rounds)
    deadline = min(s_max, 2 * rounds + 1)
    steps = [[deadline, value]] + ([[s_max, value / 4]] if deadline < s_max and value >= 4 else [])
    return JobTerms(conc, steps, min(d_max, max(1, math.ceil(int(table.runtime[i]) / s))))


def trace_platform(config: ExportConfig, d_max: int, s_max: int, jobs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The W.json platform of a trace's jobs (H: the largest value), with the headroom's capacity model if any."""
    platform: dict[str, Any] = {
        "C": config.nodes, "C_m": config.max_concurrency or config.nodes, "D_m": d_max, "S_m": s_max,
        "H": max(1.0, max(float(j["value_steps"][0][1]) for j in jobs)), "seed": config.seed,
        "samples": config.samples}
    if config.headroom:
        platform["capacity"] = headroom_model(config.nodes, config.headroom).model_dump(mode="json")
    if config.reserve is not None:
        up, down = config.reserve
        platform["reserve"] = Reserve(up=up, down=down, most=config.nodes - 1).model_dump(mode="json")
    if config.overload != "newest":
        platform["overload"] = config.overload
    return platform


def headroom_model(nodes: int, headroom: int) -> CapacityModel:
    """The capacity model of a failure oracle that leaves `headroom` of `nodes` out: every future round has
    nodes - headroom (a point: low = high = mean, one error 0), prices floored at `nodes` (so they are fixed C's).
    No feed reports a capacity, so the overload step evicts against `nodes`; a job wider than nodes - headroom fails
    in every sample and is never scheduled."""
    m = nodes - headroom
    return CapacityModel(mean=m, phi=0.0, errors=(0.0,), weights=(1.0,), low=m, high=m, price_floor=float(nodes))


def sow_document(table: JobTable, machine_nodes: int, config: ExportConfig, laws: dict[int, list[tuple[int, float]]],
                 value_rounds: Callable[[int], int | None]) -> dict[str, Any]:
    """The W.json document: job i born in its submission's round, arriving at once, with outcomes `laws[i]` and
    the `job_terms` of q = value_rounds(i) rounds (None: its requested time)."""
    d_max, s_max = trace_bounds(table, config)
    t0 = int(table.submit[0])
    jobs: list[dict[str, Any]] = []
    for i in range(len(table)):
        terms = job_terms(table, i, machine_nodes, config, d_max, s_max, value_rounds(i))
        jobs.append({
            "id": f"job-{i}",
            "birth": (int(table.submit[i]) - t0) // config.round_seconds,
            "concurrency": terms.concurrency,
            "value_steps": terms.steps,
            "outcomes": [[0, d, p] for d, p in laws[i]],
            "signal_mode": "none",
            "realized": [0, terms.realized],
        })
    return {"platform": trace_platform(config, d_max, s_max, jobs), "jobs": jobs}


def export_sows(table: JobTable, machine_nodes: int, config: ExportConfig) -> dict[str, Any]:
    """The W.json document of the table's jobs (see the module docstring for every choice)."""
    d_max, _ = trace_bounds(table, config)
    laws: dict[int, list[tuple[int, float]]] = {}

    def keep(batch: list[int], law: Discrete) -> None:
        for row, index in enumerate(batch):
            laws[index] = rounds_law(law, row, config.round_seconds, d_max)

    replay(table, make_predictor(config.predictor), keep)

    def q90(i: int) -> int:
        outcomes = laws[i]
        cum = np.cumsum([p for _, p in outcomes])
        return outcomes[min(int(np.searchsorted(cum, 0.9 - 1e-12)), len(outcomes) - 1)][0]

    return sow_document(table, machine_nodes, config, laws, q90)
