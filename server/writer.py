"""The group-commit writer: commands queue, one writer applies a batch, logs it in one transaction, then replies."""

from __future__ import annotations

import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from mechanism.engine import Engine, EngineError
from mechanism.history import HistoryMarks
from mechanism.sow import SoW
from server import namespace
from server.archive import ArchiveError
from server.config import CLOCK, EXECUTOR, OPERATOR, SERVER, Principal, ServerConfig
from server.errors import LimitReached, PermissionDenied, Refused, Unauthenticated, Unavailable
from server.limits import ActiveLimits
from server.observer import Acknowledged, Observer
from server.replay import JOB_COMMANDS, REPORTS, Result, apply_command, body_hash, body_json, repeated_report
from server.store import CommandStore, StoreError


class AppliedNotLogged(RuntimeError):
    """A command changed the engine and then failed before it was logged (a bug): the batch stops the server."""


class Encoder(Protocol):
    """(kind, result, the command's logged body) -> the reply as sent."""

    def __call__(self, kind: str, result: Result, body: dict[str, Any] | None = None) -> bytes: ...


LegacyEncoder = Callable[[str, Result], tuple[bytes, ...]]  # the replies earlier builds logged for the same result

Command = tuple[str | None, str, dict[str, Any], SoW | None]  # (request_id, kind, body, validated sow)

log = logging.getLogger("sowsched.scheduler")
EXECUTOR_COMMANDS = ("arrive", "complete", "launch")  # what the executor may do, on any tenant's job


@dataclass
class Ticket:
    """One queued command and, once its batch is committed, its reply or refusal."""

    caller: str
    principal: Principal | None  # as authenticated (checked again if the configuration changed since); None: internal
    request_id: str | None
    kind: str
    body: dict[str, Any]
    logged: str  # the body's JSON as logged
    hash: str
    sow: SoW | None = None  # body["sow"], already validated
    done: bool = False
    ack: Acknowledged | None = None
    error: BaseException | None = None


def previous_build_hash(t: Ticket) -> str | None:
    """The body hash the build before per-tenant job ids logged for this request, if a client of that build could have
    sent it: a report in the caller's own namespace (that build's reports named no tenant: the service now fills in
    the caller's own), hashed without its tenant. A retry of it after the upgrade gets its logged reply."""
    if t.kind not in REPORTS or t.body.get("tenant") != t.caller:
        return None
    return body_hash(t.kind, {k: v for k, v in t.body.items() if k != "tenant"})


class SchedulerCore(ABC):
    """The state the durable scheduler's parts share, guarded by the writer's lock, and the calls they make on one
    another: the writer (this module), recovery (server/recovery.py), snapshots (server/snapshots.py) and the tenant
    registry (server/tenancy.py) are each a base of `DurableScheduler` (server/scheduler.py), which sets this state."""

    config: ServerConfig
    engine: Engine
    store: CommandStore
    metrics: Observer  # told of every logged command, snapshot and settler pass
    limits: ActiveLimits  # checked on live submissions only, not on replay
    changed: threading.Condition  # notified after every batch and reload (event streams wait on it)
    snapshot_every: int  # logged commands between snapshots; 0: none
    _encode: Encoder
    _legacy: LegacyEncoder | None  # replay also accepts the replies of earlier wire formats for the same result
    _lock: threading.Lock
    _broken: str | None
    _queue: list[Ticket]  # commands waiting for the writer
    _queue_lock: threading.Lock
    _seq: int  # the last logged command applied
    _snapshot_seq: int
    _archived: HistoryMarks  # the engine history the store's archive holds
    _unsettled: threading.Event  # a batch was applied: the engine may have oracle work to do early

    @abstractmethod
    def _maybe_snapshot(self) -> None:
        """Snapshot if the interval since the last one has passed (server/snapshots.py)."""

    @abstractmethod
    def owner(self, job_id: str) -> str | None:
        """The tenant of any job, held or archived (server/tenancy.py)."""

    @abstractmethod
    def reading(self) -> AbstractContextManager[Engine]:
        """The engine between two commands (this module's `Writer`)."""


class Writer(SchedulerCore):
    """Group commit: every command is applied under one lock and logged before it is acknowledged."""

    @property
    def log_seq(self) -> int:
        """The last logged command applied."""
        return self._seq

    def _settle_loop(self) -> None:
        """Between batches, do the oracle work the next quote would start with, while replies are on the wire."""
        while True:
            self._unsettled.wait()
            self._unsettled.clear()
            with self._lock:
                if self._broken is not None:
                    return
                started = time.perf_counter()
                try:
                    worked = self.engine.settle()
                except Exception:  # a bug; the next quote settles again and reports it to its caller
                    log.exception("settling the oracle failed")
                    continue
                if worked:  # it held the writer too: logged so that writer time can be accounted in full
                    self.metrics.settle(time.perf_counter() - started)
                    log.info(
                        "settle", extra={"fields": {"writer_ms": round(1000 * (time.perf_counter() - started), 3)}}
                    )

    def execute(self, caller: Principal | str, request_id: str | None, kind: str,
                body: dict[str, Any], sow: SoW | None = None) -> Acknowledged:
        """Apply `kind` with `body` and log it, or return the logged reply of the same earlier request.

        Group commit: the caller queues its command; whoever holds the writer lock applies every queued command
        in order, logs them in one transaction and commits once, then each caller gets its reply. Nothing is
        acknowledged before the commit that makes it durable, and reads (under the same lock) see only
        committed state.
        """
        ticket = self._ticket(caller, request_id, kind, body, sow)
        self._run([ticket])
        if ticket.error is not None:
            raise ticket.error
        assert ticket.ack is not None
        return ticket.ack

    def execute_many(self, caller: Principal | str, commands: list[Command]) -> list[Acknowledged | BaseException]:
        """Apply and log (request_id, kind, body, sow) commands in order, as `execute` one after another would, in
        the same group commit; each one's reply or refusal, in order (a refusal changes nothing and the rest go on)."""
        tickets: list[Ticket | BaseException] = []
        for request_id, kind, body, sow in commands:
            try:
                tickets.append(self._ticket(caller, request_id, kind, body, sow))
            except Refused as exc:
                tickets.append(exc)
        self._run([t for t in tickets if isinstance(t, Ticket)])
        out: list[Acknowledged | BaseException] = []
        for t in tickets:
            if isinstance(t, BaseException):
                out.append(t)
            else:
                result = t.error if t.error is not None else t.ack
                assert result is not None
                out.append(result)
        return out

    def _ticket(self, caller: Principal | str, request_id: str | None, kind: str, body: dict[str, Any],
                sow: SoW | None) -> Ticket:
        if self.store.read_only:
            raise Unavailable(f"store {self.store.path} is open read-only: it takes no commands")
        name = caller.name if isinstance(caller, Principal) else caller
        if kind in JOB_COMMANDS and not all(isinstance(body.get(k), str) for k in ("tenant", "job_id")):
            raise Refused(f"a {kind} command names its job by 'tenant' and 'job_id'; got keys {sorted(body)}")
        logged = body_json(body)
        if sow is not None:  # the SoW's outcome table, built here in the caller's thread instead of in the writer
            sow.table  # noqa: B018 - a cached property: computed once, kept
        principal = caller if isinstance(caller, Principal) else None
        return Ticket(name, principal, request_id or None, kind, body, logged, body_hash(kind, body, logged), sow)

    def _run(self, tickets: list[Ticket]) -> None:
        """Queue the tickets together (in order) and wait until a batch has applied and committed them."""
        with self._queue_lock:
            self._queue.extend(tickets)
        with self._lock:
            if not all(t.done for t in tickets):
                self._run_batch()

    def _run_batch(self) -> None:
        with self._queue_lock:
            batch, self._queue = self._queue, []
        started = time.perf_counter()
        logged: list[tuple[Ticket, bytes]] = []
        try:
            if self._broken is not None:
                raise Unavailable(self._broken)
            with self.store.transaction():
                for t in batch:
                    try:
                        reply, fresh = self._apply(t)
                    except (Refused, EngineError, ValueError) as exc:  # refused: nothing changed
                        t.error = exc
                        continue
                    if fresh:
                        logged.append((t, reply))
                    else:
                        t.ack = Acknowledged(reply, replayed=True)
                applied = time.perf_counter()  # the rest of the block is the commit
        except Unavailable as exc:
            for t in batch:
                t.error = exc
        except Exception as exc:
            # The log failed, or a command failed half-way (a bug): the engine has applied commands the log does
            # not hold and the batch is rolled back. Stop serving; a restart replays the log.
            # Callers (tenants too) get no store path or SQLite detail: those are in the operator's log.
            if isinstance(exc, StoreError | ArchiveError):
                self._broken = "the command log failed (see the server log); the server must be restarted"
            else:
                self._broken = f"a command failed unexpectedly ({type(exc).__name__}); the server must be restarted"
            log.critical("command batch failed", exc_info=not isinstance(exc, StoreError | ArchiveError),
                         extra={"fields": {"error": repr(exc)}})
            for t in batch:
                if t.error is None:
                    t.ack, t.error = None, Unavailable(self._broken)
        else:
            now, n = time.perf_counter(), max(len(batch), 1)
            for t, reply in logged:
                t.ack = Acknowledged(reply, replayed=False, writer_ms=1000 * (now - started) / n,
                                     commit_ms=1000 * (now - applied) / n)
                self.metrics.command(t.kind, t.ack)
            self.changed.notify_all()
            self._maybe_snapshot()
            self._unsettled.set()
        finally:
            for t in batch:
                t.done = True

    def _apply(self, t: Ticket) -> tuple[bytes, bool]:
        """Apply one command and append it to the open transaction; (reply, False) for a repeated request."""
        if t.principal is not None and not t.principal.holds(self.config):  # a reload revoked it while it waited
            raise Unauthenticated(f"the token no longer authenticates {t.caller!r} (the server's configuration "
                                  "changed while the command waited); nothing was done")
        if t.request_id:
            prior = self.store.request(t.caller, t.request_id)  # the log's index: no table in memory
            if prior is not None:
                if prior[0] != t.hash and prior[0] != previous_build_hash(t):
                    raise Refused(f"request_id={t.request_id!r} was already used for a different {t.kind} "
                                  "request; use a new request id")
                return prior[1], False
        self._authorize(t.caller, t.kind, t.body)
        if t.kind == "submit" and t.principal is not None and t.body["tenant"] not in (*self.config.tenants, OPERATOR):
            raise Refused(f"tenant={t.body['tenant']!r} is not configured (the server's configuration changed while "
                          "the command waited; new jobs are for configured tenants only); nothing was done")
        if t.kind == "submit" and t.body["tenant"] in self.config.max_active_jobs \
                and self.owner(namespace.key(t.body["tenant"], t.body["job_id"])) is None:  # a taken id: ALREADY_EXISTS
            refusal = self.limits.refusal(self.engine, t.body["tenant"])
            if refusal is not None:
                raise LimitReached(refusal)
        again = repeated_report(self.engine, t.kind, t.body)
        if again is not None:  # a report accepted before: the same answer, nothing logged
            return self._encode(t.kind, again), False
        result = apply_command(self.engine, t.kind, t.body, t.sow)
        try:  # the engine has changed: a refusal from here on would leave it ahead of the log
            if t.kind == "submit":
                self.limits.admitted(self.engine, namespace.key(t.body["tenant"], t.body["job_id"]))
            reply = self._encode(t.kind, result, t.body)
        except Exception as exc:
            raise AppliedNotLogged(f"{t.kind} was applied but its reply could not be built: {exc!r}") from exc
        self._seq = self.store.append(t.kind, t.caller, t.request_id, t.body, t.hash, reply, self.engine.now,
                                      t.logged)
        if t.kind == "advance":
            self._roll_bundles()
            self._release_ready(None)
        elif t.kind == "submit":  # parents that had all completed already: it arrives now
            self._release_ready([namespace.key(t.body["tenant"], t.body["job_id"])])
        return reply, True

    def _release_ready(self, among: list[str] | None) -> None:
        """Report the arrival of every job (of `among`, default all) whose parents have all completed, each as a
        command of its own logged in this transaction (caller `server`): a replay applies the logged arrivals and
        never derives them (docs/workloads-and-sows.md)."""
        for key in self.engine.ready_to_release(among):
            body = namespace.named(key)
            logged = body_json(body)
            reply = self._encode("release", apply_command(self.engine, "release", body))
            self._seq = self.store.append("release", SERVER, None, body, body_hash("release", body, logged), reply,
                                          self.engine.now, logged)

    def _roll_bundles(self) -> None:
        """At the start of a rolling horizon's window (pricing 'stochastic', bundle_window W, round a multiple of
        W) solve the window's bundles and log them as a command of their own, in the advance's transaction: a
        replay applies the logged bundles and never re-solves the LP (docs/stochastic.md)."""
        engine = self.engine
        if engine.bundles is None or not engine.platform.bundle_window:
            return
        from models.stochastic.rolling import window_bundles, window_due  # the LP's solvers: a rolling horizon only

        if not window_due(engine):
            return
        try:
            bundles = window_bundles(engine.bundles, engine.platform, engine.now)
        except RuntimeError as exc:  # HiGHS failed, or the allocation broke Definition 1: this window adds none
            log.error("window bundles not solved", extra={"fields": {"round": engine.now, "error": repr(exc)}})
            bundles = ()
        body = {"round": engine.now, "bundles": [b.model_dump(mode="json") for b in bundles]}
        logged = body_json(body)
        reply = self._encode("bundles", apply_command(engine, "bundles", body))
        self._seq = self.store.append("bundles", OPERATOR, None, body, body_hash("bundles", body, logged), reply,
                                      engine.now, logged)

    def _authorize(self, caller: str, kind: str, body: dict[str, Any]) -> None:
        if kind == "bundles":
            raise PermissionDenied("a window's bundles are posted by the server itself, at the window's start")
        if kind == "release" and caller != SERVER:
            raise PermissionDenied("a dependent job's arrival is reported by the server itself")
        if caller in (OPERATOR, CLOCK, SERVER):
            return
        if caller == EXECUTOR:
            if kind not in EXECUTOR_COMMANDS:
                raise PermissionDenied(f"the executor token may report arrivals, launches and completions only, "
                                       f"not {kind}")
            return
        if kind == "advance":
            raise PermissionDenied("AdvanceRound needs the operator token")
        if kind == "capacity":
            raise PermissionDenied("ReportCapacity needs the operator token")
        if kind == "launch":
            raise PermissionDenied("ReportLaunch needs the executor or the operator token")
        if body["tenant"] != caller:  # a tenant acts in its own namespace only
            raise PermissionDenied(f"tenant {caller!r} cannot {kind} in tenant {body['tenant']!r}'s namespace")

    # ---- reads ----

    @property
    def broken(self) -> str | None:
        """Why the engine may no longer be read (it may hold commands the log does not), or None; read it holding
        `changed`."""
        return self._broken

    @contextmanager
    def reading(self) -> Iterator[Engine]:
        """The engine between two commands: never half-way through a round."""
        with self._lock:
            if self._broken is not None:
                raise Unavailable(self._broken)
            yield self.engine

    def close(self) -> None:
        with self._lock:
            self._broken = self._broken or "the server is shutting down"
            self.changed.notify_all()
            self.store.close()
        self._unsettled.set()  # the settler sees the server broken and ends
