"""The simulation's SchedulerPort over gRPC: the in-process driver runs unchanged against a server."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from clients.client import JobStatus, RpcFailure, SchedulerClient, Submission
from mechanism.engine import (
    CapacityView,
    DuplicateJob,
    EngineError,
    InvalidReport,
    OracleKind,
    Quote,
    RoundReport,
    UnknownJob,
)
from mechanism.sow import Signal, SoW
from models.simulation import SimulationResult, Workload, drive
from server import convert

T = TypeVar("T")
R = TypeVar("R")

# A refusal the engine would have raised in process, by status code; every other failure propagates.
_REFUSALS: dict[str, type[EngineError]] = {"NOT_FOUND": UnknownJob, "ALREADY_EXISTS": DuplicateJob,
                                           "FAILED_PRECONDITION": InvalidReport, "INVALID_ARGUMENT": EngineError}


class RemoteSchedulerError(RuntimeError):
    """The server cannot run this simulation (different platform or oracle, or not fresh)."""


class GrpcScheduler:
    """Submit, report and advance through a client; refusals come back as the engine's own exceptions."""

    def __init__(self, client: SchedulerClient, tenant_of: Callable[[str], str] | None = None) -> None:
        self.client = client
        self.tenant_of = tenant_of

    def submit(self, job_id: str, sow: SoW) -> Quote:
        return _refusals_as_engine_errors(lambda: self.client.submit(job_id, sow, tenant=self._tenant(job_id)))

    def submit_many(self, jobs: list[tuple[str, SoW]]) -> list[Quote]:
        """The round's SoWs on one SubmitSoWs stream; the first refusal is raised as the engine's exception."""
        answers = _refusals_as_engine_errors(lambda: self.client.submit_many(
            [Submission(job_id, sow, self._tenant(job_id)) for job_id, sow in jobs]))
        quotes = []
        for answer in answers:
            if isinstance(answer, RpcFailure):
                error = _as_engine_error(answer)
                raise error from (None if error is answer else answer)
            quotes.append(answer[0])
        return quotes

    def report_arrival(self, job_id: str, signal: Signal) -> JobStatus:
        return _refusals_as_engine_errors(
            lambda: self.client.report_arrival(job_id, signal, tenant=self._tenant(job_id)))

    def report_completion(self, job_id: str) -> JobStatus:
        return _refusals_as_engine_errors(lambda: self.client.report_completion(job_id, tenant=self._tenant(job_id)))

    def _tenant(self, job_id: str) -> str:
        """The tenant whose namespace holds the workload's job (empty: the operator's own)."""
        return self.tenant_of(job_id) if self.tenant_of else ""

    def advance(self) -> RoundReport:
        return self.client.advance()

    def report_capacity(self, round_: int, capacity: int) -> CapacityView:
        return _refusals_as_engine_errors(lambda: self.client.report_capacity(round_, capacity))


class FeatureGrpcScheduler(GrpcScheduler):
    """Jobs submitted by features (`features[job_id]`) as the operator's own; after each command the port waits
    until the server's prediction engine is settled, so its fits happen where a synchronous engine's would
    (server/feature_sim.py)."""

    def __init__(self, client: SchedulerClient, features: dict[str, dict[str, Any]],
                 settle_timeout: float = 120.0) -> None:
        super().__init__(client)
        self.features = features
        self.settle_timeout = settle_timeout
        self.laws: dict[str, dict[str, Any]] = {}  # job id -> the prediction its quote carried (seconds, probs)

    def submit(self, job_id: str, sow: SoW) -> Quote:
        msg = _refusals_as_engine_errors(lambda: self.client.submit_raw(job_id, {"features": self.features[job_id]}))
        p = msg.prediction
        self.laws[job_id] = {"seconds": list(p.seconds), "probabilities": list(p.probabilities),
                             "model_version": p.model_version, "trained": p.trained}
        return convert.quote_from_proto(msg)

    def submit_many(self, jobs: list[tuple[str, SoW]]) -> list[Quote]:
        return [self.submit(job_id, sow) for job_id, sow in jobs]

    def report_arrival(self, job_id: str, signal: Signal) -> JobStatus:
        return self._settled(super().report_arrival(job_id, signal))

    def report_completion(self, job_id: str) -> JobStatus:
        return self._settled(super().report_completion(job_id))

    def advance(self) -> RoundReport:
        return self._settled(super().advance())

    def _settled(self, reply: R) -> R:
        deadline = time.monotonic() + self.settle_timeout
        while not self.client.status().prediction_settled:
            if time.monotonic() > deadline:
                raise RemoteSchedulerError(f"the server's prediction engine did not settle in {self.settle_timeout} s")
            time.sleep(0.02)
        return reply


def _refusals_as_engine_errors(call: Callable[[], T]) -> T:
    try:
        return call()
    except RpcFailure as exc:
        error = _as_engine_error(exc)
        if error is exc:
            raise
        raise error from exc


def _as_engine_error(failure: RpcFailure) -> Exception:
    """The engine's own exception for a refusal it would have raised in process; other failures as they are."""
    kind = _REFUSALS.get(failure.code)
    return failure if kind is None else kind(failure.details)


def check_server(client: SchedulerClient, workload: Workload, oracle: OracleKind) -> None:
    """The server must run the workload's platform and oracle, and not have started yet."""
    status = client.status()
    if not status.state_digest:  # the operator-only fields are absent: submitting would work, advancing not
        raise RemoteSchedulerError("a simulation needs the operator token (it plays every round); nothing was sent")
    if status.platform != workload.platform:
        raise RemoteSchedulerError(f"the server's platform {status.platform.model_dump()} differs from the "
                                   f"workload's {workload.platform.model_dump()}; start it with that platform")
    if status.oracle != oracle:
        raise RemoteSchedulerError(f"the server uses oracle={status.oracle!r}, the simulation asks for {oracle!r}")
    if status.clock != "simulated":
        raise RemoteSchedulerError(f"the server's clock is {status.clock!r}; a simulation needs --clock simulated")
    if status.now != 0 or status.events != 0:
        raise RemoteSchedulerError(f"the server is at round {status.now} with {status.events} events; "
                                   "a simulation needs a fresh store")


def run_remote_simulation(workload: Workload, client: SchedulerClient, oracle: OracleKind = "mc",
                          tenant_of: Callable[[str], str] | None = None) -> SimulationResult:
    """Simulate `workload` against the server behind `client` (operator token; simulated clock)."""
    check_server(client, workload, oracle)
    return drive(workload, GrpcScheduler(client, tenant_of))
