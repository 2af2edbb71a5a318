"""Backfilling policies on the engine's predictions: EASY, EASY++ and risk-aware EASY on learned distributions."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from models.hpc.jobs import Workload
from models.hpc.metrics import Metrics, evaluate
from models.hpc.prediction_backfill import BackfillResult, simulate_backfill
from models.predict.baselines import Exact, PointPredictor, RequestedTime, Tsafrir
from models.predict.jobs import JobTable
from models.predict.learned import LearnedConfig, LearnedPredictor
from models.predictive import Discrete

Corrector = Literal["conditional", "reqtime", "doubling"]
CORRECTORS: tuple[str, ...] = ("conditional", "reqtime", "doubling")
PREDICTIVE_SCHEDULERS: tuple[str, ...] = ("easy-requested", "easy-exact", "easy-pp", "easy-learned")
DEFAULT_RISK = 0.9  # one configuration for every trace (docs/prediction.md)
DEFAULT_RESERVATION_Q = 0.4


def _correct(corrector: str, law: Discrete | None, elapsed: int, predicted: int, requested: int, q: float) -> int:
    """The new predicted runtime of a job that has run `elapsed` seconds past its prediction."""
    if corrector == "reqtime" or law is None:
        return requested
    if corrector == "doubling":
        return min(requested, max(2 * predicted, elapsed + 1))
    # conditional: the q-quantile of the law given X > elapsed (requested when no mass is left beyond it)
    beyond = law.support > elapsed
    mass = law.probs[0, beyond]
    if mass.sum() <= 1e-12:
        return requested
    cum = np.cumsum(mass) / mass.sum()
    k = int(np.searchsorted(cum, q - 1e-12))
    return int(min(requested, max(law.support[beyond][min(k, cum.size - 1)], elapsed + 1)))


@dataclass
class PointPolicy:
    """EASY on point predictions: backfill in FCFS (`sjf` False) or shortest-predicted-first order."""

    predictor: PointPredictor
    table: JobTable
    sjf: bool
    corrector: str = "reqtime"
    predicted: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.predictor.fit(self.table)

    def on_submit(self, index: int, now: int) -> int:
        self.predicted[index] = max(1, int(self.predictor.predict([index]).support[0]))
        return self.predicted[index]

    def on_prediction_over(self, index: int, now: int, elapsed: int) -> int:
        new = _correct(self.corrector, None, elapsed, self.predicted[index], int(self.table.requested[index]), 0.5)
        self.predicted[index] = new
        return new

    def on_complete(self, index: int, now: int) -> None:
        self.predictor.observe(index)

    def backfill_key(self, index: int) -> float:
        return float(self.predicted[index]) if self.sjf else 0.0

    def ends_by(self, index: int, now: int, shadow: int) -> bool:
        return now + self.predicted[index] <= shadow


@dataclass
class RiskPolicy:
    """Risk-aware EASY: the head's reservation from predicted quantiles; a candidate that would outlast it
    is backfilled only if P(its runtime > shadow - now) <= risk; an overrun is re-predicted by `corrector`."""

    predictor: LearnedPredictor
    table: JobTable
    risk: float = DEFAULT_RISK
    reservation_q: float = DEFAULT_RESERVATION_Q
    corrector: str = "conditional"
    order_q: float = 0.5  # backfill candidates in ascending order of this predicted quantile
    laws: dict[int, Discrete] = field(default_factory=dict)
    predicted: dict[int, int] = field(default_factory=dict)
    key: dict[int, float] = field(default_factory=dict)
    cdfs: dict[int, tuple[list[float], list[float]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 0.0 <= self.risk <= 1.0:
            raise ValueError(f"risk={self.risk} must lie in [0, 1]")
        if not 0.0 < self.reservation_q < 1.0:
            raise ValueError(f"reservation_q={self.reservation_q} must lie strictly between 0 and 1")
        if self.corrector not in CORRECTORS:
            raise ValueError(f"corrector={self.corrector!r} must be one of {CORRECTORS}")
        self.predictor.fit(self.table)

    def on_submit(self, index: int, now: int) -> int:
        law = self.predictor.predict([index])
        self.laws[index] = law
        keep = law.probs[0] > 0
        self.cdfs[index] = (law.support[keep].tolist(), np.cumsum(law.probs[0, keep]).tolist())
        self.key[index] = float(law.quantile(self.order_q)[0])
        self.predicted[index] = max(1, int(law.quantile(self.reservation_q)[0]))
        return self.predicted[index]

    def on_prediction_over(self, index: int, now: int, elapsed: int) -> int:
        new = _correct(self.corrector, self.laws[index], elapsed, self.predicted[index],
                       int(self.table.requested[index]), self.reservation_q)
        self.predicted[index] = new
        return new

    def on_complete(self, index: int, now: int) -> None:
        self.predictor.observe(index)
        self.laws.pop(index, None)
        self.cdfs.pop(index, None)

    def backfill_key(self, index: int) -> float:
        return self.key[index]

    def ends_by(self, index: int, now: int, shadow: int) -> bool:
        support, cum = self.cdfs[index]  # P(runtime <= shadow - now), the law's cdf read by bisection
        k = bisect_right(support, shadow - now)
        return (cum[k - 1] if k else 0.0) >= 1.0 - self.risk - 1e-12


@dataclass(frozen=True)
class PredictiveRun:
    """Metrics of one prediction-driven scheduler run and its counters."""

    scheduler: str
    metrics: Metrics
    details: dict[str, Any]


def make_policy(name: str, table: JobTable, risk: float = DEFAULT_RISK,
                reservation_q: float = DEFAULT_RESERVATION_Q, corrector: str = "conditional",
                config: LearnedConfig | None = None, order_q: float = 0.5) -> tuple[Any, bool]:
    """The policy of a PREDICTIVE_SCHEDULERS name, and whether it runs pyss's plain-EASY submission rule."""
    if name == "easy-requested":
        return PointPolicy(RequestedTime(), table, sjf=False), True
    if name == "easy-exact":
        return PointPolicy(Exact(), table, sjf=False), True
    if name == "easy-pp":
        return PointPolicy(Tsafrir(), table, sjf=True), False
    if name == "easy-learned":
        predictor = LearnedPredictor(config or LearnedConfig())
        return RiskPolicy(predictor, table, risk, reservation_q, corrector, order_q), False
    raise ValueError(f"scheduler={name!r} must be one of {PREDICTIVE_SCHEDULERS}")


def run_predictive(workload: Workload, table: JobTable, name: str, **options: Any) -> PredictiveRun:
    """Simulate one prediction-driven scheduler and score it with the seed-001 metrics."""
    import time
    policy, plain = make_policy(name, table, **options)
    began = time.perf_counter()
    result: BackfillResult = simulate_backfill(workload, policy, pass_if_new_fits=plain)
    seconds = time.perf_counter() - began
    details: dict[str, Any] = {"passes": result.passes, "backfilled": result.backfilled,
                               "corrections": result.corrections, "seconds": round(seconds, 3), **options}
    if isinstance(policy, RiskPolicy):
        details["engine"] = dict(policy.predictor.stats)
    return PredictiveRun(name, evaluate(workload.jobs, result.starts, workload.nodes), details)
