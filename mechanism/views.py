"""What the engine answers with: a quote, a round's report and a job's view (light: no oracle, no solver)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mechanism.events import Event

if TYPE_CHECKING:  # annotations only: a client reading views loads neither numpy nor pydantic
    from mechanism.executor import ExecutorInfo
    from mechanism.plans import LaunchPlan
    from mechanism.sow import Signal


@dataclass(frozen=True)
class Quote:
    job: str
    plan: LaunchPlan

    def to_dict(self) -> dict[str, Any]:
        p = self.plan
        return {
            "job": self.job, "birth": p.birth, "utility": p.utility,
            "plan": [{"arrival": g.arrival, "signal": g.signal, "start": g.start, "utility": g.utility}
                     for g in p.groups],
            "outcomes": [{"arrival": o.arrival, "duration": o.duration, "signal": o.signal,
                          "probability": o.probability, "start": o.start, "price": o.price,
                          "failure_raw": o.failure_raw, "failure": o.failure, "utility": o.utility}
                         for o in p.outcomes],
        }


@dataclass(frozen=True)
class RoundReport:
    """What one `advance` did: its events and the round's running load, expected usage y and unit price."""

    round: int
    events: tuple[Event, ...]
    running: int
    expected_usage: float
    unit_price: float


@dataclass(frozen=True)
class JobView:
    id: str
    seq: int
    state: str
    birth: int
    concurrency: int
    arrival: int | None
    signal: Signal
    start: int | None
    finish: int | None
    ended: int | None
    charge: float
    value: float
    reported_arrival: int | None
    scheduled_start: int | None  # start from the plan once an arrival is known or reported
    # Payload, parents and executor: shown where set (a job without them reads, and hashes, as before they existed).
    command: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    after: tuple[str, ...] = ()
    executor: ExecutorInfo | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k not in OPTIONAL_JOB_FIELDS}
        if self.command:
            out["command"] = list(self.command)
        if self.env:
            out["env"] = dict(self.env)
        if self.after:
            out["after"] = list(self.after)
        if self.executor is not None:
            out["executor"] = self.executor.to_dict()
        return out


OPTIONAL_JOB_FIELDS = ("command", "env", "after", "executor")


@dataclass(frozen=True)
class Payload:
    """What a started job runs: its argv (empty: nothing to launch), nodes, longest declared duration of its
    observed group (rounds: the executor's time limit) and environment."""

    command: tuple[str, ...]
    nodes: int
    max_duration: int
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CapacityView:
    """A round's reported capacity, as accepted."""

    round: int
    capacity: int

    def to_dict(self) -> dict[str, Any]:
        return {"round": self.round, "capacity": self.capacity}


@dataclass(frozen=True)
class BundlesView:
    """A window's bundles, as posted (pricing 'stochastic' with a rolling horizon)."""

    round: int
    bundles: int

    def to_dict(self) -> dict[str, Any]:
        return {"round": self.round, "bundles": self.bundles}
