"""Feature submissions through the in-process engine with the server's own prediction engine, fits in step.

The simulation's port for jobs submitted by features: each SoW is built by `Predictions.sow` as the server builds
it (the operator's own jobs, as a simulation driving a server submits them), every completion of a feature job is
learned after the command that made it, and a fit that is due runs at once. A server runs its fits off the writer;
a client that waits, after each command, until the server's engine is settled (`prediction_settled`) sees the same
models at the same submissions, so both runs quote the same SoWs (`clients/grpc_sim.py`, FeatureGrpcScheduler).
"""

from __future__ import annotations

from typing import Any

from mechanism.engine import Engine, OracleKind, Quote, RoundReport
from mechanism.platform import Platform
from mechanism.sow import Signal, SoW
from models.predict.online import EngineConfig
from server import namespace
from server.config import OPERATOR
from server.prediction import Predictions


class FeatureEngine:
    """An in-process engine whose jobs are submitted by features (`features[job_id]`: the SoW JSON's `features`)."""

    def __init__(self, platform: Platform, features: dict[str, dict[str, Any]], config: EngineConfig,
                 round_seconds: float, oracle: OracleKind = "mc") -> None:
        self.engine = Engine(platform, oracle=oracle)
        self.features = features
        self.predictions = Predictions(config, round_seconds)
        self.laws: dict[str, dict[str, Any]] = {}  # job id -> the prediction its quote carried (seconds, probs)

    def submit(self, job_id: str, sow: SoW) -> Quote:
        """Submit job `job_id` by its features (`sow`, the workload's own, is not used)."""
        built, logged = self.predictions.sow(OPERATOR, self.features[job_id], self.engine.platform)
        quote = self.engine.submit(job_id, built)
        self.predictions.submitted(OPERATOR, job_id, logged)
        self.laws[job_id] = logged["prediction"]
        return quote

    def report_arrival(self, job_id: str, signal: Signal) -> Any:
        return self._learning(self.engine.report_arrival(job_id, signal))

    def report_completion(self, job_id: str) -> Any:
        return self._learning(self.engine.report_completion(job_id))

    def advance(self) -> RoundReport:
        return self._learning(self.engine.advance())

    def _learning(self, reply: Any) -> Any:
        """Learn the completions the command made and fit when due, as a settled server has."""
        self.predictions.catch_up(self.engine, key=lambda job: namespace.key(OPERATOR, job))
        if self.predictions.refit_due():
            self.predictions.engine.refit()
        return reply
