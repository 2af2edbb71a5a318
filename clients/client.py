"""Typed Python client for the sowsched gRPC service: deadlines, bearer tokens, retries with the same request id."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import grpc

import server.gen  # noqa: F401
from mechanism.events import Event
from mechanism.executor import ExecutorInfo
from mechanism.ledger import Charge
from mechanism.views import CapacityView, JobView, Payload, Quote, RoundReport
from server import convert
from server.gen.sowsched.v1 import scheduler_pb2 as pb
from server.gen.sowsched.v1 import scheduler_pb2_grpc as pb_grpc

if TYPE_CHECKING:  # loaded where used: the verbs that need no SoW or platform model skip pydantic and numpy
    from mechanism.platform import Platform
    from mechanism.sow import Signal, SoW

RETRYABLE = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})
CHANNEL_OPTIONS = [("grpc.initial_reconnect_backoff_ms", 100), ("grpc.min_reconnect_backoff_ms", 100),
                   ("grpc.max_reconnect_backoff_ms", 1000), ("grpc.max_receive_message_length", 64 << 20)]
MAX_TIMEOUT = 1e9  # seconds; gRPC fails a call with a deadline past about 9.2e9 s (2**63 ns) at once
MIN_KEEPALIVE = 0.001  # seconds: gRPC counts keepalive in whole milliseconds
T = TypeVar("T")
_CODE_NAMES = {code.value[0]: code.name for code in grpc.StatusCode}


class RpcFailure(Exception):
    """The server refused the call, or it failed after every retry; `code` is the gRPC status name."""

    def __init__(self, code: str, details: str) -> None:
        super().__init__(f"{code}: {details}")
        self.code = code
        self.details = details


@dataclass(frozen=True)
class Submission:
    """One SoW for `submit_many`: its job id, the tenant (operator only; empty: the caller's own) and its request id
    (default: a new one, kept for every retry of the stream)."""

    job_id: str
    sow: SoW | dict[str, Any]
    tenant: str = ""
    request_id: str | None = None


@dataclass(frozen=True)
class JobStatus:
    view: JobView
    tenant: str


@dataclass(frozen=True)
class TenantEvent:
    """An event and the tenant whose job it is (the job id in `event` is that tenant's own)."""

    event: Event
    tenant: str
    payload: Payload | None = None  # a start event's payload, as the server streams it (absent: ask GetJob)


@dataclass(frozen=True)
class InvoiceLine(Charge):
    """A ledger charge as the server reports it, with the quote it was billed from."""

    quote: Quote


@dataclass(frozen=True)
class Invoice:
    tenant: str
    lines: tuple[InvoiceLine, ...]
    total: float


@dataclass(frozen=True)
class PriceMenu:
    start: int
    expected_usage: tuple[float, ...]
    unit_price: tuple[float, ...]


@dataclass(frozen=True)
class ServerStatus:
    """GetPlatform: the configured platform, the oracle in use, the clock and the state digest."""

    platform_data: dict[str, Any]  # the platform as the server sent it (JSON); `platform` validates it
    samples: int
    oracle: str
    clock: str
    round_seconds: float
    now: int
    events: int
    active_jobs: int
    state_digest: str
    own_active_jobs: int = 0  # the caller's own active jobs
    own_max_active_jobs: int | None = None  # the caller's max_active_jobs; None: no limit
    server_version: str = ""  # the package version the server runs ("" from a server older than the field)
    code_identity: str = ""  # SHA-256 of the server's mechanism and server sources
    capacity: int = 0  # this round's capacity (nodes) as its step 3 will evict against it
    capacity_reports: tuple[CapacityView, ...] = ()  # reports for later rounds (the operator's view; tenants: none)
    capacity_level: float | None = None  # the capacity model's level mu_t when it tracks the feed, else None
    # The prediction engine's moment, not replayed state (compare=False: a restart rebuilds the model of the last
    # logged quote and catches up at once): completions its model in force learned; every completion read and no
    # fit due (docs/prediction.md).
    prediction_trained: int = dataclass_field(default=0, compare=False)
    prediction_settled: bool = dataclass_field(default=False, compare=False)
    prediction_conformal_gamma: float | None = dataclass_field(default=None, compare=False)  # None: off
    prediction_cold_start: int = dataclass_field(default=0, compare=False)  # 0: no prediction engine

    @cached_property
    def platform(self) -> Platform:
        """The configured platform as a model (pydantic loads on first use: `sowsched status` needs only the data)."""
        from mechanism.platform import Platform

        return Platform.model_validate(self.platform_data)


@dataclass(frozen=True)
class RetryPolicy:
    """Retry UNAVAILABLE and DEADLINE_EXCEEDED `attempts - 1` times, backing off exponentially up to `max_backoff`."""

    attempts: int = 8
    backoff: float = 0.05
    max_backoff: float = 2.0

    def delays(self) -> Iterator[float]:
        d = self.backoff
        for _ in range(self.attempts - 1):
            yield d
            d = min(2 * d, self.max_backoff)


@dataclass(frozen=True)
class Keepalive:
    """HTTP/2 pings that find a half-open connection: after `time` seconds without traffic the client pings, and
    closes the connection when the ack takes over `timeout` seconds (calls on it fail UNAVAILABLE, then retry).

    The server must accept pings this often (its `min_ping_interval`, 10 s by default), or it answers GOAWAY
    "too_many_pings"."""

    time: float = 30.0
    timeout: float = 10.0

    def __post_init__(self) -> None:
        for field in ("time", "timeout"):
            value = getattr(self, field)
            if not (MIN_KEEPALIVE <= value <= MAX_TIMEOUT):  # also refuses nan
                raise ValueError(f"keepalive {field}={value:g} is outside [{MIN_KEEPALIVE:g}, {MAX_TIMEOUT:g}] "
                                 "seconds")

    def channel_options(self) -> list[tuple[str, int]]:
        """The channel arguments; gRPC 1.85 bounds the keepalive ack's wait by `ping_timeout_ms` (default 60 s)
        as well as `keepalive_timeout_ms`, so both are set."""
        timeout_ms = round(self.timeout * 1000)
        return [("grpc.keepalive_time_ms", round(self.time * 1000)), ("grpc.keepalive_timeout_ms", timeout_ms),
                ("grpc.http2.ping_timeout_ms", timeout_ms), ("grpc.keepalive_permit_without_calls", 1),
                ("grpc.http2.max_pings_without_data", 0)]  # 0: keepalive pings never wait for data


class SchedulerClient:
    """One channel to a server; every mutating call carries a request id, reused on every retry."""

    def __init__(self, target: str, token: str | None = None, *, tls_ca: Path | None = None,
                 timeout: float = 30.0, retry: RetryPolicy | None = None,
                 keepalive: Keepalive | None = None) -> None:
        if timeout > MAX_TIMEOUT:
            raise ValueError(f"timeout={timeout:g} is above the bound {MAX_TIMEOUT:g} seconds")
        self.target = target
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.keepalive = keepalive or Keepalive()
        bad = [i for i, ch in enumerate(token or "") if not " " <= ch <= "~"]  # gRPC metadata values
        if bad:  # the token itself is a secret: name the position, not the text
            raise ValueError(f"token: character {bad[0] + 1} of {len(token or '')} is outside printable ASCII "
                             "(a newline?)")
        self._metadata = (("authorization", f"Bearer {token}"),) if token else ()
        options = CHANNEL_OPTIONS + self.keepalive.channel_options()
        if tls_ca is not None:
            creds = grpc.ssl_channel_credentials(root_certificates=Path(tls_ca).read_bytes())
            self.channel = grpc.secure_channel(target, creds, options=options)
        else:
            self.channel = grpc.insecure_channel(target, options=options)
        self.stub = pb_grpc.SchedulerStub(self.channel)

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> SchedulerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: Callable[..., T], request: Any, timeout: float | None = None) -> T:
        delays = self.retry.delays()
        while True:
            try:
                return method(request, timeout=timeout or self.timeout, metadata=self._metadata)
            except grpc.RpcError as exc:
                code = exc.code()
                delay = next(delays, None) if code in RETRYABLE else None
                if delay is None:
                    raise RpcFailure(code.name, exc.details() or "") from None
                time.sleep(delay)

    # ---- commands ----

    def submit_raw(self, job_id: str, sow: SoW | dict[str, Any], *, request_id: str | None = None,
                   tenant: str = "") -> pb.Quote:
        return self._call(self.stub.SubmitSoW, submit_request(job_id, sow, request_id, tenant))

    def submit(self, job_id: str, sow: SoW | dict[str, Any], *, request_id: str | None = None,
               tenant: str = "") -> Quote:
        """Submit a SoW born in the current round; the binding quote."""
        return self.submit_tenant(job_id, sow, request_id=request_id, tenant=tenant)[0]

    def submit_tenant(self, job_id: str, sow: SoW | dict[str, Any], *, request_id: str | None = None,
                      tenant: str = "") -> tuple[Quote, str]:
        """Submit a SoW born in the current round; the binding quote and the tenant whose job it is."""
        msg = self.submit_raw(job_id, sow, request_id=request_id, tenant=tenant)
        return convert.quote_from_proto(msg), msg.tenant

    def submit_many(self, submissions: Iterable[Submission]) -> list[tuple[Quote, str] | RpcFailure]:
        """Submit many SoWs on one stream (SubmitSoWs): for each, in order, its quote and tenant or its refusal, as
        the same `submit_tenant` calls one after another would give."""
        return list(self.submit_stream(submissions))

    def submit_stream(self, submissions: Iterable[Submission]) -> Iterator[tuple[Quote, str] | RpcFailure]:
        """`submit_many`, each answer yielded as it arrives. If the stream fails (UNAVAILABLE, DEADLINE_EXCEEDED),
        the items not yet answered are sent again on a new stream with their request ids, so none is applied twice;
        RpcFailure is raised when the retries are spent or the call itself is refused."""
        requests = [submit_request(s.job_id, s.sow, s.request_id, s.tenant) for s in submissions]
        answered = 0
        delays = self.retry.delays()
        while answered < len(requests):
            try:
                for r in self.stub.SubmitSoWs(iter(requests[answered:]), timeout=self.timeout,
                                              metadata=self._metadata):
                    answered += 1
                    yield ((convert.quote_from_proto(r.quote), r.quote.tenant) if r.HasField("quote") else
                           RpcFailure(_CODE_NAMES.get(r.status.code, str(r.status.code)), r.status.message))
                code, details = grpc.StatusCode.UNAVAILABLE, "the stream ended before every submission was answered"
            except grpc.RpcError as exc:
                code, details = exc.code(), exc.details() or ""
            delay = next(delays, None) if code in RETRYABLE and answered < len(requests) else None
            if delay is None and answered < len(requests):
                raise RpcFailure(code.name, details)
            time.sleep(delay or 0.0)

    def report_arrival(self, job_id: str, signal: Signal = None, *, request_id: str | None = None,
                       tenant: str = "") -> JobStatus:
        """The job is ready now; `tenant` (operator only) names whose job, empty for the caller's own."""
        req = pb.ReportArrivalRequest(request_id=request_id or new_request_id(), job_id=job_id, tenant=tenant,
                                      **convert.signal_field(signal))
        return _status(self._call(self.stub.ReportArrival, req))

    def report_completion(self, job_id: str, *, request_id: str | None = None, tenant: str = "",
                          executor: ExecutorInfo | None = None) -> JobStatus:
        """The job's work ends in this round; `tenant` (operator or executor) names whose job, empty for the caller's
        own; `executor` says where it ran (a repeat with the same info answers OK with no second effect)."""
        req = pb.ReportCompletionRequest(request_id=request_id or new_request_id(), job_id=job_id, tenant=tenant)
        if executor is not None:
            req.executor.CopyFrom(convert.executor_to_proto(executor))
        return _status(self._call(self.stub.ReportCompletion, req))

    def report_launch(self, job_id: str, executor: ExecutorInfo, *, request_id: str | None = None,
                      tenant: str = "") -> JobStatus:
        """Where a running job's work was launched (executor or operator); repeated with the same kind and
        external_id it answers OK with no second effect."""
        req = pb.ReportLaunchRequest(request_id=request_id or new_request_id(), job_id=job_id, tenant=tenant,
                                     executor=convert.executor_to_proto(executor))
        return _status(self._call(self.stub.ReportLaunch, req))

    def advance(self, *, request_id: str | None = None) -> RoundReport:
        """Play the current round (operator, simulated clock); its report, without the tenant of each event."""
        return self.advance_tenants(request_id=request_id)[0]

    def advance_tenants(self, *, request_id: str | None = None) -> tuple[RoundReport, tuple[str, ...]]:
        """Play the current round; its report and, for each of its events, the tenant whose job it is."""
        req = pb.AdvanceRoundRequest(request_id=request_id or new_request_id())
        msg = self._call(self.stub.AdvanceRound, req)
        return convert.round_from_proto(msg), tuple(e.tenant for e in msg.events)

    def report_capacity(self, round_: int, capacity: int, *, request_id: str | None = None) -> CapacityView:
        """The capacity of `round_` (now or later) in nodes (operator): that round's step 3 evicts against it."""
        req = pb.ReportCapacityRequest(request_id=request_id or new_request_id(), round=round_, capacity=capacity)
        return convert.capacity_from_proto(self._call(self.stub.ReportCapacity, req))

    # ---- reads ----

    def get_job(self, job_id: str, tenant: str = "") -> JobStatus:
        """One job; `tenant` (operator only) names whose job, empty for the caller's own."""
        return _status(self._call(self.stub.GetJob, pb.GetJobRequest(job_id=job_id, tenant=tenant)))

    def audit_job(self, job_id: str, tenant: str = "", reference: SoW | dict[str, Any] | None = None) -> dict[str, Any]:
        """What a misreport would have gained the job at its birth's menu: {"best_gain", "best_misreport", "tried",
        "declared_utility"}, under `reference` (None: the job's quoted law)."""
        from mechanism.sow import SoW

        req = pb.AuditJobRequest(job_id=job_id, tenant=tenant)
        if reference is not None:
            req.reference.CopyFrom(convert.sow_to_proto(
                reference.model_dump(mode="json") if isinstance(reference, SoW) else reference))
        msg = self._call(self.stub.AuditJob, req)
        return {"best_gain": msg.best_gain, "tried": msg.tried, "declared_utility": msg.declared_utility,
                "best_misreport": json.loads(msg.best_misreport_json) if msg.best_misreport_json else None}

    def list_jobs_page(self, *, states: tuple[str, ...] = (), tenant: str = "", page_size: int = 0,
                       page_token: str = "") -> tuple[list[JobStatus], str]:
        req = pb.ListJobsRequest(states=list(states), tenant=tenant, page_size=page_size, page_token=page_token)
        resp = self._call(self.stub.ListJobs, req)
        return [_status(j) for j in resp.jobs], resp.next_page_token

    def list_jobs(self, *, states: tuple[str, ...] = (), tenant: str = "", page_size: int = 0) -> Iterator[JobStatus]:
        """Every visible job in birth order, page by page."""
        token = ""
        while True:
            jobs, token = self.list_jobs_page(states=states, tenant=tenant, page_size=page_size, page_token=token)
            yield from jobs
            if not token:
                return

    def price_menu(self, start: int | None = None, length: int = 0) -> PriceMenu:
        """y and p(y) for rounds [start, start + length); start defaults to now, length to the horizon."""
        req = pb.GetPriceMenuRequest(length=length, **({} if start is None else {"start": start}))
        resp = self._call(self.stub.GetPriceMenu, req)
        return PriceMenu(resp.start, tuple(resp.expected_usage), tuple(resp.unit_price))

    def invoice_page(self, tenant: str = "", *, page_size: int = 0, page_token: str = "",
                     from_round: int | None = None, to_round: int | None = None) -> tuple[Invoice, str]:
        """One page of the charges billed in [from_round, to_round) (the total covers the whole period)."""
        rounds = {k: v for k, v in (("from_round", from_round), ("to_round", to_round)) if v is not None}
        req = pb.GetInvoiceRequest(tenant=tenant, page_size=page_size, page_token=page_token, **rounds)
        resp = self._call(self.stub.GetInvoice, req)
        lines = tuple(InvoiceLine(c.job_id, c.round, c.start, c.duration, c.concurrency, c.amount,
                                  convert.quote_from_proto(c.quote)) for c in resp.charges)
        return Invoice(resp.tenant, lines, resp.total), resp.next_page_token

    def invoice(self, tenant: str = "", *, from_round: int | None = None, to_round: int | None = None,
                page_size: int = 0) -> Invoice:
        """Every charge billed in [from_round, to_round) (default: all), page by page, with the period's total."""
        lines: list[InvoiceLine] = []
        token = ""
        while True:
            page, token = self.invoice_page(tenant, page_size=page_size, page_token=token, from_round=from_round,
                                            to_round=to_round)
            lines += page.lines
            if not token:
                return Invoice(page.tenant, tuple(lines), page.total)

    def status(self) -> ServerStatus:
        r = self._call(self.stub.GetPlatform, pb.GetPlatformRequest())
        return ServerStatus(platform_data=json.loads(r.platform_json), samples=r.samples,
                            oracle=r.oracle, clock=r.clock, round_seconds=r.round_seconds, now=r.now,
                            events=r.events, active_jobs=r.active_jobs, state_digest=r.state_digest,
                            own_active_jobs=r.own_active_jobs, own_max_active_jobs=r.own_max_active_jobs or None,
                            server_version=r.server_version, code_identity=r.code_identity, capacity=r.capacity,
                            capacity_reports=tuple(convert.capacity_from_proto(c) for c in r.capacity_reports),
                            capacity_level=r.capacity_level if r.HasField("capacity_level") else None,
                            prediction_trained=r.prediction_trained, prediction_settled=r.prediction_settled,
                            prediction_conformal_gamma=r.prediction_conformal_gamma
                            if r.HasField("prediction_conformal_gamma") else None,
                            prediction_cold_start=r.prediction_cold_start)

    def echo(self, payload: bytes = b"") -> bytes:
        return self._call(self.stub.Echo, pb.EchoRequest(payload=payload)).payload

    def watch(self, from_seq: int = 0, *, follow: bool = True, resume: bool = True) -> Generator[Event, None, None]:
        """Events from `from_seq` on, as `watch_tenants` gives them, without the tenant of each job."""
        for e in self.watch_tenants(from_seq, follow=follow, resume=resume):
            yield e.event

    def watch_tenants(self, from_seq: int = 0, *, follow: bool = True,
                      resume: bool = True) -> Generator[TenantEvent, None, None]:
        """Events from `from_seq` on, each with its job's tenant (the operator sees every tenant's, and job ids
        are per tenant); after a disconnect, reopen from the last seen seq + 1 (no gaps, no repeats).

        Without `follow` each stream has the call deadline (a cut stream resumes like a disconnected one).
        The retry budget counts failed reopenings in a row: an event, or a following stream that stayed open for
        `max_backoff` seconds, restores it, so a follow survives any number of server restarts."""
        for batch in self._watch(from_seq, follow, resume, batched=False):
            yield from batch

    def watch_batches(self, from_seq: int = 0, *, follow: bool = True,
                      resume: bool = True) -> Generator[list[TenantEvent], None, None]:
        """`watch_tenants`' events in the batches the server read them in (WatchEventBatches: a round's events in
        one message); from a server without that call (UNIMPLEMENTED), one event a batch."""
        yield from self._watch(from_seq, follow, resume, batched=True)

    def _watch(self, from_seq: int, follow: bool, resume: bool,
               batched: bool) -> Generator[list[TenantEvent], None, None]:
        seq = from_seq
        delays = self.retry.delays()
        while True:
            request = pb.WatchEventsRequest(from_seq=seq, follow=follow)
            call = self.stub.WatchEventBatches if batched else self.stub.WatchEvents
            stream = call(request, timeout=None if follow else self.timeout, metadata=self._metadata)
            opened = time.monotonic()
            try:
                for msg in stream:
                    batch = [TenantEvent(convert.event_from_proto(m), m.tenant, convert.payload_from_proto(m))
                             for m in (msg.events if batched else [msg])]
                    seq = batch[-1].event.seq + 1
                    delays = self.retry.delays()
                    yield batch
                return
            except grpc.RpcError as exc:
                if batched and exc.code() == grpc.StatusCode.UNIMPLEMENTED:  # an older server: one event a message
                    batched = False
                    continue
                if follow and time.monotonic() - opened >= self.retry.max_backoff:  # connected: a new outage
                    delays = self.retry.delays()
                delay = next(delays, None) if resume and exc.code() in RETRYABLE else None
                if delay is None:
                    raise RpcFailure(exc.code().name, exc.details() or "") from None
                time.sleep(delay)
            finally:
                stream.cancel()


def _status(msg: pb.Job) -> JobStatus:
    return JobStatus(convert.job_from_proto(msg), msg.tenant)


def new_request_id() -> str:
    return uuid.uuid4().hex


def submit_request(job_id: str, sow: SoW | dict[str, Any], request_id: str | None, tenant: str) -> pb.SubmitSoWRequest:
    """A SubmitSoWRequest of a SoW, or of a {"features": ...} document (the prediction engine builds the SoW)."""
    from mechanism.sow import SoW

    data = sow.model_dump(mode="json") if isinstance(sow, SoW) else sow
    req = pb.SubmitSoWRequest(request_id=request_id or new_request_id(), job_id=job_id, tenant=tenant)
    if "features" in data:
        req.features.CopyFrom(convert.features_to_proto(data["features"]))
    else:
        req.sow.CopyFrom(convert.sow_to_proto(data))
    return req
