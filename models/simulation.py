"""In-process simulation: realize each job's true outcome, report it to a scheduler, and total the results."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

from mechanism.engine import Engine, EngineError, OracleKind, Quote, RoundReport
from mechanism.events import Event
from mechanism.jobs import JobState
from mechanism.platform import Platform
from mechanism.sow import Signal, SoW

if TYPE_CHECKING:
    from models.prior import Prior

TERMINAL = ("completed", "evicted", "cancelled", "expired", "not_scheduled")
_END_EVENTS = {"complete": "completed", "evict": "evicted", "cancel": "cancelled", "expire": "expired",
               "not_scheduled": "not_scheduled"}


@dataclass(frozen=True)
class WorkloadJob:
    """A job of a workload: its SoW as reported, and the outcome that really happens."""

    id: str
    birth: int
    sow: SoW
    arrival_offset: int
    duration: int

    @property
    def signal(self) -> Signal:
        """The label the platform observes at the realized arrival (None if the outcome was not declared)."""
        if self.sow.signal_mode == "duration":
            return str(self.duration)
        for o, s in zip(self.sow.outcomes, self.sow.signals, strict=True):
            if (o.arrival_offset, o.duration) == (self.arrival_offset, self.duration):
                return s
        return None


@dataclass(frozen=True)
class Workload:
    name: str
    platform: Platform
    jobs: tuple[WorkloadJob, ...]
    prior: Prior | None = None  # the known F_j the SoWs were drawn from (stochastic variant), if any
    capacity: tuple[int, ...] | None = None  # realized capacity of rounds 0, 1, ... (None: C in every round)


class SchedulerPort(Protocol):
    """What a simulation needs from a scheduler: the in-process Engine, or a gRPC server through a client."""

    def submit(self, job_id: str, sow: SoW) -> Quote: ...

    def report_arrival(self, job_id: str, signal: Signal) -> Any: ...

    def report_completion(self, job_id: str) -> Any: ...

    def advance(self) -> RoundReport: ...


class BatchPort(Protocol):
    """A scheduler that takes a round's submissions at once (a server's SubmitSoWs stream), quoting each exactly as
    `submit` one after another would."""

    def submit_many(self, jobs: list[tuple[str, SoW]]) -> list[Quote]: ...


class CapacityPort(Protocol):
    """A scheduler that takes the capacity feed (ReportCapacity)."""

    def report_capacity(self, round_: int, capacity: int) -> Any: ...


@dataclass(frozen=True)
class JobRecord:
    id: str
    birth: int
    concurrency: int
    state: str
    start: int | None
    duration: int  # realized
    value: float
    charge: float
    failure: float | None  # announced failure estimate of the realized outcome at its planned start
    failure_raw: float | None


@dataclass
class SimulationResult:
    workload: str
    platform: Platform
    rounds: int = 0
    welfare: float = 0.0
    revenue: float = 0.0
    counts: Counter[str] = field(default_factory=Counter)
    busy_node_rounds: int = 0
    events: list[Event] = field(default_factory=list)
    quotes: dict[str, Quote] = field(default_factory=dict)
    jobs: list[JobRecord] = field(default_factory=list)
    running: list[int] = field(default_factory=list)  # per round
    expected_usage: list[float] = field(default_factory=list)  # y per round
    unit_price: list[float] = field(default_factory=list)  # p(y) per round
    rejected_reports: int = 0

    @property
    def utility(self) -> float:
        return self.welfare - self.revenue

    @property
    def evicted_cancelled(self) -> int:
        """Jobs that failed after acceptance: evicted while running or cancelled before their start."""
        return self.counts.get("evicted", 0) + self.counts.get("cancelled", 0)

    @property
    def utilization(self) -> float:
        return self.busy_node_rounds / (self.platform.C * self.rounds) if self.rounds else 0.0

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"workload": self.workload, "jobs": len(self.jobs), "rounds": self.rounds,
                               "welfare": self.welfare, "revenue": self.revenue, "utility": self.utility,
                               "utilization": self.utilization, "rejected_reports": self.rejected_reports}
        out.update({k: self.counts.get(k, 0) for k in TERMINAL})
        return out


def run_simulation(workload: Workload, oracle: OracleKind = "mc") -> SimulationResult:
    """Simulate `workload` against a fresh in-process engine."""
    return drive(workload, Engine(workload.platform, oracle=oracle))


def drive(workload: Workload, port: SchedulerPort) -> SimulationResult:
    """Round by round: report the round's realized capacity (if the workload has a series; past its end the last
    one stays), submit the SoWs born now, report realized arrivals and completions, advance."""
    jobs = sorted(workload.jobs, key=lambda j: j.birth)  # stable: file order within a round
    result = SimulationResult(workload=workload.name, platform=workload.platform)
    ended: dict[str, str] = {}
    starts: dict[str, int | None] = {}
    next_birth = 0
    t = 0
    while next_birth < len(jobs) or len(ended) < len(jobs):
        if workload.capacity is not None and t < len(workload.capacity):
            cast(CapacityPort, port).report_capacity(t, workload.capacity[t])
        born = []
        while next_birth < len(jobs) and jobs[next_birth].birth == t:
            born.append(jobs[next_birth])
            next_birth += 1
        if born and hasattr(port, "submit_many"):  # one stream for the round's SoWs
            quotes = cast(BatchPort, port).submit_many([(job.id, job.sow) for job in born])
        else:
            quotes = [port.submit(job.id, job.sow) for job in born]
        result.quotes.update((job.id, quote) for job, quote in zip(born, quotes, strict=True))
        for job in jobs[:next_birth]:
            if job.id in ended:
                continue
            if job.birth + job.arrival_offset == t and job.id not in starts:
                result.rejected_reports += _try(port.report_arrival, job.id, job.signal)
                starts[job.id] = _planned_start(result.quotes[job.id], t, job.signal)
            start = starts.get(job.id)
            if start is not None and start + job.duration - 1 == t:
                result.rejected_reports += _try(port.report_completion, job.id)
        report = port.advance()
        _record_round(result, report, ended)
        t += 1
    result.rounds = t
    completions = {e.job: e for e in result.events if e.type == "complete"}
    result.jobs = [_job_record(job, result.quotes[job.id], completions.get(job.id), ended) for job in jobs]
    return result


def _try(call: Any, *args: Any) -> int:
    """Report to the scheduler; a refused report counts as rejected and changes nothing."""
    try:
        call(*args)
    except EngineError:
        return 1
    return 0


def _planned_start(quote: Quote, arrival: int, signal: Signal) -> int | None:
    try:
        return quote.plan.start_for(arrival, signal)
    except KeyError:  # arrival outside the declared support: the report was refused
        return None


def _record_round(result: SimulationResult, report: RoundReport, ended: dict[str, str]) -> None:
    for e in report.events:
        if e.type in _END_EVENTS:
            ended[e.job] = _END_EVENTS[e.type]
            result.counts[_END_EVENTS[e.type]] += 1
        if e.type == "complete":
            result.welfare += float(e.data["value"])
            result.revenue += float(e.data["charge"])
    for e in [*_quote_events(result, report), *report.events]:  # the simulation numbers events itself
        result.events.append(Event(seq=len(result.events), round=e.round, type=e.type, job=e.job, data=e.data))
    result.running.append(report.running)
    result.busy_node_rounds += report.running
    result.expected_usage.append(report.expected_usage)
    result.unit_price.append(report.unit_price)


def _quote_events(result: SimulationResult, report: RoundReport) -> list[Event]:
    """Quote events of this round, rebuilt from the quotes (a remote port returns quotes, not events)."""
    out = []
    for job_id, q in result.quotes.items():
        if q.plan.birth == report.round:
            out.append(Event(seq=-1, round=report.round, type="quote", job=job_id,
                             data={"plan": [{"arrival": g.arrival, "signal": g.signal, "start": g.start}
                                            for g in q.plan.groups], "utility": q.plan.utility}))
    return out


def _job_record(job: WorkloadJob, quote: Quote, completion: Event | None, ended: dict[str, str]) -> JobRecord:
    arrival = job.birth + job.arrival_offset
    match = [o for o in quote.plan.outcomes if (o.arrival, o.duration) == (arrival, job.duration)]
    o = match[0] if match else None
    value = float(completion.data["value"]) if completion else 0.0
    charge = float(completion.data["charge"]) if completion else 0.0
    state = ended.get(job.id, JobState.SUBMITTED.value.lower())
    return JobRecord(id=job.id, birth=job.birth, concurrency=job.sow.concurrency, state=state,
                     start=o.start if o else None, duration=job.duration, value=value, charge=charge,
                     failure=o.failure if o else None, failure_raw=o.failure_raw if o else None)
