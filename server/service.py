"""The gRPC servicer: authenticate, translate protobuf to domain calls and back, map refusals to status codes."""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import Any, NoReturn, TypeVar

import grpc

import server.gen  # noqa: F401
from mechanism.engine import BundlesView, CapacityView, Engine, JobView, Quote, RoundReport, check_job_id
from mechanism.executor import ExecutorInfoError
from mechanism.jobs import JobState
from mechanism.sow import SoW
from server import convert, errors, namespace, reads, snapshot
from server.audit import audit_job
from server.config import OPERATOR, Principal
from server.errors import Exhausted, FailedPrecondition, PermissionDenied, Refused, Unauthenticated, Unavailable
from server.gen.sowsched.v1 import scheduler_pb2 as pb
from server.gen.sowsched.v1 import scheduler_pb2_grpc as pb_grpc
from server.limits import (
    DEFAULT_PAGE,
    MAX_JOB_ID,
    MAX_PAGE,
    MAX_REQUEST_ID,
    MAX_WATCHERS,
    STREAM_BATCH,
    WATCH_BATCH,
)
from server.observer import NO_METRICS, Acknowledged, Observer
from server.prediction import Predictions
from server.replay import Result, body_hash
from server.scheduler import DurableScheduler
from server.writer import Command

# Calls whose token is checked again after a reload elsewhere: commands by the writer, streams before each event
# (and a stream's slot is released only once it runs). Every other call only reads, and is checked as it returns.
RECHECKED_ELSEWHERE = ("SubmitSoW", "SubmitSoWs", "ReportArrival", "ReportCompletion", "ReportLaunch", "AdvanceRound",
                       "ReportCapacity", "WatchEvents", "WatchEventBatches")
WATCH_POLL_S = 0.5  # how often a following event stream re-checks its caller's token while no event comes
log = logging.getLogger("sowsched.rpc")
T = TypeVar("T")


def encode_reply(kind: str, result: Result, body: dict[str, Any] | None = None) -> bytes:
    """The reply of a logged command, exactly as sent (the log keeps it for retries and replay checks); a feature
    submission's quote carries the prediction its body logged."""
    if isinstance(result, Quote):
        quote = convert.quote_to_proto(result)
        if body is not None and "prediction" in body:
            convert.prediction_to_proto(body["prediction"], quote.prediction)
        return quote.SerializeToString(deterministic=True)
    if isinstance(result, JobView):
        return convert.job_to_proto(result).SerializeToString(deterministic=True)
    if isinstance(result, CapacityView):
        return convert.capacity_to_proto(result).SerializeToString(deterministic=True)
    if isinstance(result, BundlesView):  # logged only (a window's bundles are the server's own command)
        return json.dumps(result.to_dict(), sort_keys=True).encode()
    assert isinstance(result, RoundReport), kind
    return convert.round_to_proto(result).SerializeToString(deterministic=True)


def legacy_replies(kind: str, result: Result) -> tuple[bytes, ...]:
    """The replies earlier builds logged for the same result, which a replay accepts: before per-tenant job ids, a
    round's events named no tenant (the other replies are the same bytes)."""
    if not isinstance(result, RoundReport):
        return ()
    msg = convert.round_to_proto(result)
    for event in msg.events:
        event.ClearField("tenant")
    return (msg.SerializeToString(deterministic=True),)


class Clock:
    """How rounds advance: by AdvanceRound (simulated) or every `round_seconds` (wall)."""

    def __init__(self, mode: str, round_seconds: float) -> None:
        self.mode = mode
        self.round_seconds = round_seconds


class SchedulerService(pb_grpc.SchedulerServicer):
    def __init__(self, scheduler: DurableScheduler, clock: Clock, metrics: Observer = NO_METRICS,
                 max_watchers: int = MAX_WATCHERS, predictions: Predictions | None = None) -> None:
        self.scheduler = scheduler
        self.predictions = predictions  # the prediction engine of feature submissions (None: outcomes only)
        self.clock = clock
        self.metrics = metrics  # told of every call, as logged
        self.max_watchers = max_watchers  # open event streams at once: each holds a worker thread
        self._watch_slots = threading.BoundedSemaphore(max_watchers)
        self.stopping = threading.Event()
        self._fields = threading.local()  # extra log fields of the call this thread is serving

    # ---- plumbing ----

    def _configured(self, tenant: str) -> None:
        """Refuse a tenant the configuration does not name (new jobs are for configured tenants only)."""
        tenants = self.scheduler.config.tenants
        if tenant not in tenants and tenant != OPERATOR:
            raise Refused(f"tenant={tenant!r} is not configured (configured: {', '.join(tenants) or 'none'})")

    def _known(self, tenant: str) -> None:
        """Refuse a tenant that is neither configured nor owner of any job (a typo, not a tenant taken out since)."""
        if not self.scheduler.known_tenant(tenant):
            tenants = self.scheduler.config.tenants
            raise Refused(f"tenant={tenant!r} is not configured and owns no jobs (configured: "
                          f"{', '.join(tenants) or 'none'})")

    def _call(self, context: grpc.ServicerContext, method: str, body: Callable[[Principal], T]) -> T:
        """Authenticate, run `body`, log one structured line, and turn refusals into status codes."""
        started = time.perf_counter()
        who = "-"
        code = "OK"
        self._fields.extra = {}
        try:
            principal = self._principal(context)
            if principal is None:
                raise Unauthenticated("missing or unknown bearer token in the 'authorization' metadata")
            who = principal.name
            result = body(principal)
            if method not in RECHECKED_ELSEWHERE and not principal.holds(self.scheduler.config):
                raise Unauthenticated(f"the token no longer authenticates {principal.name!r} (the server's "
                                      "configuration changed while the call waited)")
            return result
        except errors.REFUSALS as exc:  # nothing changed: the caller is told why (server/errors.py)
            status, message = errors.status(exc)
            code = status.name
            context.abort(status, message)
        except Exception as exc:
            if context.code() is not None:  # an abort above (grpc raises a plain Exception for it)
                code = code if code != "OK" else str(context.code().name)
                raise
            code = "INTERNAL"
            log.exception("internal error", extra={"fields": {"method": method}})
            context.abort(*errors.status(exc))
        finally:
            elapsed = time.perf_counter() - started
            self.metrics.rpc(method, code, elapsed)
            log.info("rpc", extra={"fields": {"method": method, "caller": who, "code": code,
                                              "ms": round(1000 * elapsed, 3),
                                              **self._fields.extra}})
        raise AssertionError("unreachable")  # context.abort raises

    def _principal(self, context: grpc.ServicerContext) -> Principal | None:
        header = dict(context.invocation_metadata()).get("authorization", "")
        scheme, _, token = str(header).partition(" ")
        return self.scheduler.config.caller(token.strip() if scheme.lower() == "bearer" else None)

    def _command(self, principal: Principal, request_id: str, kind: str, body: dict[str, Any],
                 sow: SoW | None = None) -> bytes:
        if len(request_id) > MAX_REQUEST_ID:
            raise Refused(f"request_id has {len(request_id)} characters, above the bound {MAX_REQUEST_ID}")
        ack = self.scheduler.execute(principal, request_id or None, kind, body, sow)
        self._fields.extra = {"writer_ms": round(ack.writer_ms, 3), "commit_ms": round(ack.commit_ms, 3),
                              "retry": ack.replayed,
                              "request_id": request_id,
                              **({"tenant": body["tenant"], "job_id": body["job_id"]} if "job_id" in body else {})}
        return ack.reply

    # ---- commands ----

    def SubmitSoW(self, request: pb.SubmitSoWRequest, context: grpc.ServicerContext) -> pb.Quote:
        def body(p: Principal) -> pb.Quote:
            command = self._submission(p, request)
            _, kind, data, sow = command
            quote = pb.Quote.FromString(self._command(p, request.request_id, kind, data, sow))
            self._learn(data)
            return quote
        return self._call(context, "SubmitSoW", body)

    def _submission(self, p: Principal, request: pb.SubmitSoWRequest) -> Command:
        """A SubmitSoWRequest as the writer's command, validated (refusals raise, nothing changed)."""
        if p.is_executor:
            raise PermissionDenied("SubmitSoW is not for the executor token: a tenant or the operator submits")
        tenant = _named_tenant(p, request.tenant, self._configured, "submit for")
        check_job_id(request.job_id, MAX_JOB_ID)
        if len(request.request_id) > MAX_REQUEST_ID:
            raise Refused(f"request_id has {len(request.request_id)} characters, above the bound {MAX_REQUEST_ID}")
        if request.HasField("features"):
            if request.HasField("sow"):
                raise Refused("a submission sets exactly one of 'sow' and 'features'; both are set")
            if self.predictions is None:
                raise FailedPrecondition("this server has no prediction engine: submit a SoW with outcomes")
            sow, logged = self.predictions.sow(tenant, convert.features_to_dict(request.features),
                                               self.scheduler.config.platform)
            return request.request_id, "submit", {"job_id": request.job_id, "tenant": tenant,
                                                  "sow": sow.model_dump(mode="json"), **logged}, sow
        sow = SoW.parse(convert.sow_to_dict(request.sow), self.scheduler.config.platform)
        for i, parent in enumerate(sow.after):  # job ids of the same tenant
            if len(parent) > MAX_JOB_ID:
                raise Refused(f"after[{i}] has {len(parent)} characters, above the bound {MAX_JOB_ID}")
        data = {"job_id": request.job_id, "tenant": tenant, "sow": sow.model_dump(mode="json")}
        return request.request_id, "submit", data, sow

    def _learn(self, data: dict[str, Any]) -> None:
        """Tell the prediction engine of an accepted feature submission (it learns the job's duration later)."""
        if self.predictions is not None and "features" in data:
            self.predictions.submitted(data["tenant"], data["job_id"], data)

    def SubmitSoWs(self, requests: Iterable[pb.SubmitSoWRequest],
                   context: grpc.ServicerContext) -> Iterator[pb.SubmitSoWsReply]:
        """Each streamed request answered in order; the requests that have arrived (up to STREAM_BATCH) are applied
        in order and logged in one group commit before any of their replies is sent."""
        principal = self._call(context, "SubmitSoWs", lambda p: p)
        arrived: queue.Queue[pb.SubmitSoWRequest | None] = queue.Queue()
        threading.Thread(target=_read_stream, args=(requests, arrived), name="sowsched-submit-stream",
                         daemon=True).start()
        end = False
        while not end:
            batch: list[pb.SubmitSoWRequest] = []
            item = arrived.get()
            while item is not None:
                batch.append(item)
                if len(batch) >= STREAM_BATCH or arrived.empty():
                    break
                item = arrived.get_nowait()
            end = item is None
            if batch:
                yield from self._submit_batch(principal, batch, context)

    def _submit_batch(self, p: Principal, batch: list[pb.SubmitSoWRequest],
                      context: grpc.ServicerContext) -> Iterator[pb.SubmitSoWsReply]:
        started = time.perf_counter()
        results: list[Acknowledged | BaseException | None] = []  # None: the writer answers it
        commands: list[Command] = []
        try:
            for request in batch:  # a refused item is answered in its place; the others are applied
                try:
                    commands.append(self._submission(p, request))
                    results.append(None)
                except errors.REFUSALS as exc:
                    results.append(exc)
            answers = self.scheduler.execute_many(p, commands)
            for command, answer in zip(commands, answers, strict=True):
                if isinstance(answer, Acknowledged):
                    self._learn(command[2])
            applied = iter(answers)
            results = [next(applied) if r is None else r for r in results]
        except Exception as exc:
            log.exception("internal error", extra={"fields": {"method": "SubmitSoWs"}})
            context.abort(*errors.status(exc))
        acks = [r for r in results if isinstance(r, Acknowledged)]
        log.info("rpc batch", extra={"fields": {
            "method": "SubmitSoWs", "caller": p.name, "items": len(batch), "refused": len(batch) - len(acks),
            "ms": round(1000 * (time.perf_counter() - started), 3),
            "writer_ms": round(sum(r.writer_ms for r in acks), 3),
            "commit_ms": round(sum(r.commit_ms for r in acks), 3)}})
        for r in results:
            if isinstance(r, Acknowledged):
                yield pb.SubmitSoWsReply(quote=pb.Quote.FromString(r.reply))
            else:
                assert r is not None
                code, message = errors.status(r)
                yield pb.SubmitSoWsReply(status=pb.SubmitStatus(code=code.value[0], message=message))

    def ReportArrival(self, request: pb.ReportArrivalRequest, context: grpc.ServicerContext) -> pb.Job:
        def body(p: Principal) -> pb.Job:
            tenant = _named_tenant(p, request.tenant, self._known, "report on the jobs of")
            check_job_id(request.job_id, MAX_JOB_ID)
            data = {"job_id": request.job_id, "tenant": tenant,
                    "signal": request.signal if request.HasField("signal") else None}
            return pb.Job.FromString(self._command(p, request.request_id, "arrive", data))
        return self._call(context, "ReportArrival", body)

    def ReportCompletion(self, request: pb.ReportCompletionRequest, context: grpc.ServicerContext) -> pb.Job:
        def body(p: Principal) -> pb.Job:
            tenant = _named_tenant(p, request.tenant, self._known, "report on the jobs of")
            check_job_id(request.job_id, MAX_JOB_ID)
            data: dict[str, Any] = {"job_id": request.job_id, "tenant": tenant}
            if request.HasField("executor"):
                data["executor"] = _executor(request.executor)
            return pb.Job.FromString(self._command(p, request.request_id, "complete", data))
        return self._call(context, "ReportCompletion", body)

    def ReportLaunch(self, request: pb.ReportLaunchRequest, context: grpc.ServicerContext) -> pb.Job:
        def body(p: Principal) -> pb.Job:
            if not p.acts_for_tenants:
                raise PermissionDenied("ReportLaunch needs the executor or the operator token")
            tenant = _named_tenant(p, request.tenant, self._known, "report on the jobs of")
            check_job_id(request.job_id, MAX_JOB_ID)
            if not request.HasField("executor"):
                raise Refused("executor is required: the kind and external_id of the launched work")
            data = {"job_id": request.job_id, "tenant": tenant,
                    "executor": _executor(request.executor)}
            return pb.Job.FromString(self._command(p, request.request_id, "launch", data))
        return self._call(context, "ReportLaunch", body)

    def AdvanceRound(self, request: pb.AdvanceRoundRequest, context: grpc.ServicerContext) -> pb.RoundReport:
        def body(p: Principal) -> pb.RoundReport:
            if not p.is_operator:
                raise PermissionDenied("AdvanceRound needs the operator token")
            if self.clock.mode != "simulated":
                logged = self._logged_advance(p, request.request_id)
                if logged is None:
                    raise FailedPrecondition("AdvanceRound is for the simulated clock; this server advances "
                                             f"every {self.clock.round_seconds} s (--clock wall)")
                return pb.RoundReport.FromString(logged)
            return pb.RoundReport.FromString(self._command(p, request.request_id, "advance", {}))
        return self._call(context, "AdvanceRound", body)

    def ReportCapacity(self, request: pb.ReportCapacityRequest,
                       context: grpc.ServicerContext) -> pb.CapacityReport:
        def body(p: Principal) -> pb.CapacityReport:
            if not p.is_operator:
                raise PermissionDenied("ReportCapacity needs the operator token")
            data = {"round": request.round, "capacity": request.capacity}
            return pb.CapacityReport.FromString(self._command(p, request.request_id, "capacity", data))
        return self._call(context, "ReportCapacity", body)

    def _logged_advance(self, p: Principal, request_id: str) -> bytes | None:
        """The logged reply of an AdvanceRound the caller sent with `request_id` before (under the simulated clock,
        before a restart with the wall clock), so that its retry is answered as every retry is; None if none."""
        if not request_id or len(request_id) > MAX_REQUEST_ID:
            return None
        with self.scheduler.reading():  # the store's connection is the writer's
            prior = self.scheduler.store.request(p.name, request_id)
        if prior is None or prior[0] != body_hash("advance", {}):
            return None
        self._fields.extra = {"retry": True, "request_id": request_id}
        return prior[1]

    # ---- reads ----

    def AuditJob(self, request: pb.AuditJobRequest, context: grpc.ServicerContext) -> pb.AuditReport:
        def body(p: Principal) -> pb.AuditReport:
            if p.acts_for_tenants and not p.is_operator:
                raise PermissionDenied(f"{p.name!r} cannot audit jobs: the operator audits any job, a tenant its own")
            tenant = _named_tenant(p, request.tenant, self._known, "audit the jobs of")
            check_job_id(request.job_id, MAX_JOB_ID)
            reference = (SoW.parse(convert.sow_to_dict(request.reference), self.scheduler.config.platform)
                         if request.HasField("reference") else None)
            result = audit_job(self.scheduler.config, self.scheduler.store.path, tenant, request.job_id, reference,
                               self.predictions)
            return pb.AuditReport(best_gain=result.best_gain, tried=result.tried,
                                  declared_utility=result.declared_utility,
                                  best_misreport_json="" if result.best_misreport is None else
                                  json.dumps(result.best_misreport, sort_keys=True))
        return self._call(context, "AuditJob", body)

    def GetJob(self, request: pb.GetJobRequest, context: grpc.ServicerContext) -> pb.Job:
        def body(p: Principal) -> pb.Job:
            tenant = _named_tenant(p, request.tenant, self._known, "read the jobs of")
            check_job_id(request.job_id, MAX_JOB_ID)
            key = namespace.key(tenant, request.job_id)
            with self.scheduler.reading() as engine:
                msg = convert.job_to_proto(engine.view(key))
                longest = engine.running_max_duration(key)
            if longest is not None:
                msg.max_duration = longest
            return msg
        return self._call(context, "GetJob", body)

    def ListJobs(self, request: pb.ListJobsRequest, context: grpc.ServicerContext) -> pb.ListJobsResponse:
        def body(p: Principal) -> pb.ListJobsResponse:
            tenant = _visible_tenant(p, request.tenant)
            if tenant:
                self._known(tenant)
            size = _page_size(request.page_size)
            after = _page_token(request.page_token)
            states = set(request.states)
            unknown = sorted(states - {s.value for s in JobState})
            if unknown:
                raise Refused(f"states={unknown} are not job states ({', '.join(s.value for s in JobState)})")
            sched = self.scheduler
            with sched.reading() as engine:
                page = reads.job_page(engine, sched.store.archive, namespace.tenant_of, tenant or None, after,
                                      size, frozenset(states))
            return pb.ListJobsResponse(jobs=[convert.job_to_proto(view) for view, _ in page.jobs],
                                       next_page_token="" if page.next_after is None else str(page.next_after))
        return self._call(context, "ListJobs", body)

    def GetPriceMenu(self, request: pb.GetPriceMenuRequest, context: grpc.ServicerContext) -> pb.PriceMenu:
        def body(p: Principal) -> pb.PriceMenu:
            with self.scheduler.reading() as engine:
                horizon = engine.platform.horizon
                start = request.start if request.HasField("start") else engine.now
                length = request.length if request.length else horizon
                if start < engine.now:
                    raise Refused(f"start={start} is before the current round {engine.now}")
                if start > engine.now + 10 * horizon:  # y is 0 there; reading it would grow the price book
                    raise Refused(f"start={start} is after round {engine.now + 10 * horizon}, 10 horizons ahead of "
                                  f"the current round {engine.now}")
                if not 1 <= length <= 10 * horizon:
                    raise Refused(f"length={length} is outside [1, {10 * horizon}] (10 horizons)")
                y, price = engine.price_menu(start, length)
            return pb.PriceMenu(start=start, expected_usage=y.tolist(), unit_price=price.tolist())
        return self._call(context, "GetPriceMenu", body)

    def GetInvoice(self, request: pb.GetInvoiceRequest, context: grpc.ServicerContext) -> pb.Invoice:
        def body(p: Principal) -> pb.Invoice:
            if p.is_executor:
                raise PermissionDenied("GetInvoice is not for the executor token: a tenant or the operator reads it")
            tenant = _visible_tenant(p, request.tenant) or p.name
            self._known(tenant)
            size, after = _page_size(request.page_size), _page_token(request.page_token)
            from_round = request.from_round if request.HasField("from_round") else None
            to_round = request.to_round if request.HasField("to_round") else None
            if from_round is not None and from_round < 0:
                raise Refused(f"from_round={from_round} is below the bound 0")
            if to_round is not None and to_round <= (from_round or 0):
                raise Refused(f"to_round={to_round} must be above from_round={from_round or 0}")
            sched = self.scheduler
            with sched.reading() as engine:
                page = reads.invoice_page(engine, sched.store.archive, namespace.tenant_of, tenant, after, size,
                                          (from_round or 0, to_round))
                inv = pb.Invoice(tenant=tenant, charge_count=page.count, total=page.total,
                                 next_page_token="" if page.next_after is None else str(page.next_after))
                for _, c in page.charges:
                    inv.charges.add(job_id=namespace.local(c.job), round=c.round, start=c.start, duration=c.duration,
                                    concurrency=c.concurrency, amount=c.amount,
                                    quote=convert.quote_to_proto(engine.quote(c.job)))
                return inv
        return self._call(context, "GetInvoice", body)

    def GetPlatform(self, request: pb.GetPlatformRequest, context: grpc.ServicerContext) -> pb.PlatformInfo:
        def body(p: Principal) -> pb.PlatformInfo:
            with self.scheduler.reading() as engine:
                info = platform_info(engine, self.clock)
                info.own_active_jobs = sum(1 for job in engine.jobs_after(-1, active_only=True)
                                           if namespace.tenant_of(job.id) == p.name)
                if self.predictions is not None:
                    info.prediction_trained = self.predictions.engine.model.trained
                    info.prediction_settled = self.predictions.settled(engine)
                    info.prediction_cold_start = self.predictions.engine.config.cold_start
                    gamma = self.predictions.engine.config.conformal_gamma
                    if gamma is not None:
                        info.prediction_conformal_gamma = gamma
            info.own_max_active_jobs = self.scheduler.config.max_active_jobs.get(p.name, 0)
            if not p.is_operator:  # platform-wide views are the operator's
                for name in ("events", "active_jobs", "state_digest", "capacity_reports"):
                    info.ClearField(name)
            return info
        return self._call(context, "GetPlatform", body)

    def Echo(self, request: pb.EchoRequest, context: grpc.ServicerContext) -> pb.EchoReply:
        return self._call(context, "Echo", lambda p: pb.EchoReply(payload=request.payload))

    @property
    def open_streams(self) -> int:
        """WatchEvents streams open now."""
        return self.max_watchers - self._watch_slots._value

    def WatchEvents(self, request: pb.WatchEventsRequest, context: grpc.ServicerContext) -> Iterator[pb.Event]:
        with contextlib.closing(self._stream("WatchEvents", request, context, batched=False)) as batches:
            for batch in batches:  # closed with this stream, which frees its slot at once
                yield from batch.events

    def WatchEventBatches(self, request: pb.WatchEventsRequest,
                          context: grpc.ServicerContext) -> Iterator[pb.EventBatch]:
        yield from self._stream("WatchEventBatches", request, context, batched=True)

    def _stream(self, method: str, request: pb.WatchEventsRequest, context: grpc.ServicerContext,
                batched: bool) -> Generator[pb.EventBatch, None, None]:
        """An event stream's slot held while it runs; batches of one event each unless `batched`."""
        def open_stream(p: Principal) -> Principal:
            if request.from_seq < 0:
                raise Refused(f"from_seq={request.from_seq} is below the bound 0")
            if not self._watch_slots.acquire(blocking=False):
                raise Exhausted(f"{self.max_watchers} event streams are open, this server's limit (--max-watchers); "
                                "close one or retry later")
            return p

        principal = self._call(context, method, open_stream)
        try:
            yield from self._watch(principal, request.from_seq, request.follow, context, batched)
        finally:  # the stream ended, failed or was cancelled (gRPC drops the generator): free its slot
            self._watch_slots.release()

    def _watch(self, principal: Principal, seq: int, follow: bool, context: grpc.ServicerContext,
               batched: bool = False) -> Iterator[pb.EventBatch]:
        """Events from `seq` on, the caller's own only (tenants); with `follow`, wait for new ones. Each read under the
        lock is one batch if `batched`, else one batch per event (the token is checked again before each batch)."""
        sched = self.scheduler
        broken = None
        while context.is_active() and not self.stopping.is_set():
            renewed = principal.renewed(sched.config)  # None: the configuration was reloaded without this token
            if renewed is None:
                _revoked(context, principal, seq)
            principal = renewed  # authenticated under the configuration now: the checks below stay cheap
            with sched.changed:
                broken = sched.broken
                if broken is not None:  # a failed batch's events are in the engine, not in the log: send none
                    break
                if seq >= sched.engine.history_marks().events:
                    if not follow:
                        return
                    sched.changed.wait(WATCH_POLL_S)
                    continue
                batch, seq = reads.event_batch(sched.engine, sched.store.archive, namespace.tenant_of, seq,
                                               WATCH_BATCH, None if principal.acts_for_tenants else principal.name)
                payloads = reads.start_payloads(sched.engine, batch)  # the reader sees these jobs' payloads
            for part in ([batch] if batched and batch else [[e] for e in batch]):
                if not principal.holds(sched.config):  # revoked while the batch was on the wire: send no more of it
                    _revoked(context, principal, part[0].seq)
                yield pb.EventBatch(events=[convert.event_to_proto(e, payloads.get(e.seq)) for e in part])
        if self.stopping.is_set() or broken is not None:  # not the end of the events: resume elsewhere or later
            reason = "the server is shutting down" if self.stopping.is_set() else broken
            context.abort(*errors.status(Unavailable(f"{reason}; resume from_seq={seq}")))



def _read_stream(requests: Iterable[pb.SubmitSoWRequest], arrived: queue.Queue[pb.SubmitSoWRequest | None]) -> None:
    """Hand each streamed request to the servicer as it arrives, then None when the stream ends (or fails)."""
    try:
        for request in requests:
            arrived.put(request)
    except Exception:  # cancelled or broken by the client: what arrived is answered, then the call ends
        log.debug("submission stream ended early", exc_info=True)
    finally:
        arrived.put(None)


def platform_info(engine: Engine, clock: Clock) -> pb.PlatformInfo:
    pl = engine.platform
    return pb.PlatformInfo(
        C=pl.C,
        C_m=pl.C_m,
        D_m=pl.D_m,
        S_m=pl.S_m,
        H=pl.H,
        epsilon=pl.epsilon,
        eps0=pl.eps0,
        delta0=pl.delta0,
        seed=pl.seed,
        samples=pl.sample_count,
        oracle=engine.oracle_kind,
        clock=clock.mode,
        round_seconds=clock.round_seconds,
        now=engine.now,
        events=engine.history_marks().events,
        active_jobs=engine.active_jobs,
        state_digest=engine.digest(),
        platform_json=pl.model_dump_json(),
        server_version=snapshot.server_version(),
        code_identity=snapshot.code_identity(),
        capacity=engine.capacity_of(engine.now),
        capacity_reports=[pb.CapacityReport(round=r, capacity=c) for r, c in sorted(engine.capacity_feed.items())
                          if r > engine.now],
        capacity_level=engine.capacity_level,
    )


def _revoked(context: grpc.ServicerContext, principal: Principal, seq: int) -> NoReturn:
    """End an event stream whose token a reload revoked, telling the seq to resume from."""
    log.info("stream closed: token revoked", extra={"fields": {"caller": principal.name, "seq": seq}})
    context.abort(*errors.status(Unauthenticated(f"the token no longer authenticates {principal.name!r} (the "
                                                 f"server's configuration changed); resume from_seq={seq} with a "
                                                 "valid token")))
    raise AssertionError("unreachable")  # context.abort raises


def _named_tenant(p: Principal, requested: str, check: Callable[[str], None], verb: str) -> str:
    """The namespace a job id is read in (server/namespace.py): a tenant's own, or for the operator the tenant it
    names (its own when it names none), which `check` refuses if it is unknown; the executor names it as the
    operator does."""
    if not p.acts_for_tenants:
        if requested and requested != p.name:
            raise PermissionDenied(f"tenant {p.name!r} cannot {verb} tenant {requested!r}")
        return p.name
    if requested:
        check(requested)
    return requested or OPERATOR


def _visible_tenant(p: Principal, requested: str) -> str:
    """Whose jobs a read covers: a tenant sees only its own; the operator and the executor every tenant's, or the
    one they name."""
    if p.acts_for_tenants:
        return requested
    if requested and requested != p.name:
        raise PermissionDenied(f"tenant {p.name!r} cannot read tenant {requested!r}: platform-wide views need "
                               "the operator token")
    return p.name


def _executor(msg: pb.ExecutorInfo) -> dict[str, Any]:
    """A request's executor info as logged; a broken rule is refused (INVALID_ARGUMENT) naming the field."""
    try:
        return convert.executor_from_proto(msg).to_dict()
    except ExecutorInfoError as exc:
        raise Refused(str(exc)) from None


def _page_size(n: int) -> int:
    if n < 0 or n > MAX_PAGE:
        raise Refused(f"page_size={n} is outside [0, {MAX_PAGE}] (0 means {DEFAULT_PAGE})")
    return n or DEFAULT_PAGE


def _page_token(token: str) -> int:
    if not token:
        return -1
    if not (token.isascii() and token.isdigit()) or len(token) > 19:  # the seqs and indices this server returns
        raise Refused(f"page_token={token!r} is not a token this server returned")
    return int(token)
