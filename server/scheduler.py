"""The durable scheduler: one writer applies commands to the engine in order and logs each before it is acknowledged."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from mechanism.engine import CHAIN_START, Engine, EngineError
from mechanism.history import ChainPoint, HistoryMarks
from mechanism.sow import SoW
from server import namespace, snapshot
from server.archive import ArchiveError, ChargeCheck
from server.config import CLOCK, OPERATOR, ConfigError, Principal, ServerConfig
from server.errors import FailedPrecondition, LimitReached, PermissionDenied, Refused, Unauthenticated, Unavailable
from server.limits import ActiveLimits
from server.observer import NO_METRICS, Acknowledged, Observer
from server.replay import JOB_COMMANDS, REPORTS, Result, apply_command, body_hash, body_json, upgraded
from server.store import CommandStore, Snapshot, StoreError

Encoder = Callable[[str, Result], bytes]  # (kind, result) -> the reply as sent
LegacyEncoder = Callable[[str, Result], tuple[bytes, ...]]  # the replies earlier builds logged for the same result
SNAPSHOT_EVERY = 1000  # logged commands between snapshots

log = logging.getLogger("sowsched.scheduler")


class ReplayDiverged(StoreError):
    """Replaying the log did not reproduce a logged reply: the log and the code disagree."""


@dataclass
class _Ticket:
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


def _previous_build_hash(t: _Ticket) -> str | None:
    """The body hash the build before per-tenant job ids logged for this request, if a client of that build could have
    sent it: a report in the caller's own namespace (that build's reports named no tenant: the service now fills in
    the caller's own), hashed without its tenant. A retry of it after the upgrade gets its logged reply."""
    if t.kind not in REPORTS or t.body.get("tenant") != t.caller:
        return None
    return body_hash(t.kind, {k: v for k, v in t.body.items() if k != "tenant"})


def _identity_changes(old: dict[str, Any], new: dict[str, Any]) -> Iterator[str]:
    """The fields (`platform.C`, `oracle`, ...) in which two log identities differ, each with both values."""
    for key in sorted(old.keys() | new.keys()):
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            yield from (f"{key}.{inner}" for inner in _identity_changes(a, b))
        elif a != b:
            yield f"{key} ({a!r} -> {b!r})"


class DurableScheduler:
    """The engine behind one lock, its command log and request ids; replays the log on start."""

    def __init__(self, config: ServerConfig, store: CommandStore, encode: Encoder,
                 snapshot_every: int = SNAPSHOT_EVERY, metrics: Observer = NO_METRICS,
                 legacy: LegacyEncoder | None = None) -> None:
        if snapshot_every < 0:
            raise ValueError(f"snapshot_every={snapshot_every} is below the bound 0 (0 turns snapshots off)")
        self.config = config
        self.engine = Engine(config.platform, oracle=config.oracle)
        self.store = store
        self._encode = encode
        self._legacy = legacy  # replay also accepts the replies of earlier wire formats for the same result
        self.metrics = metrics  # told of every logged command, snapshot and settler pass
        self._lock = threading.Lock()
        self.changed = threading.Condition(self._lock)
        self._broken: str | None = None
        self._queue: list[_Ticket] = []  # commands waiting for the writer
        self._queue_lock = threading.Lock()
        self.snapshot_every = snapshot_every
        self._seq = 0  # the last logged command applied
        self.limits = ActiveLimits(config.max_active_jobs)  # checked on live submissions only, not on replay
        self._archived = HistoryMarks(0, 0, 0)  # the engine history the store's archive holds
        try:
            self.restored_from = self._restore()  # snapshot seq, 0 for none
            self.engine.archive = store.archive
            self._snapshot_seq = self.restored_from
            self.replayed = self._replay()
            self._tenants_before = self.store.configured_tenants() if not store.read_only else None
            self._adopt_tenants(config)
        except BaseException:  # not started: release the log and its one-writer lock
            store.close()
            raise
        self._unsettled = threading.Event()  # a batch was applied: the engine may have oracle work to do early
        self._settler = threading.Thread(target=self._settle_loop, name="sowsched-settle", daemon=True)
        self._settler.start()

    @property
    def log_seq(self) -> int:
        """The last logged command applied."""
        return self._seq

    @property
    def snapshot_seq(self) -> int:
        """The log seq the newest snapshot covers (0: none; after a failed snapshot, the one it attempted)."""
        return self._snapshot_seq

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

    def _restore(self) -> int:
        """Load the newest snapshot this code wrote whose state, with the archived history before its marks,
        reproduces its digest and hash chains; 0 if there is none. Snapshots written after the one used, and the
        history they archived, are dropped (a reader only ignores them)."""
        if not self.snapshot_every:  # snapshots off: replay the whole log and leave the stored ones alone
            return 0
        code = snapshot.code_identity()
        archive = self.store.archive
        for snap in self.store.snapshots():
            if snap.code != code:
                continue
            checked: ChainPoint | None = None  # the point the archive was checked to, once it agrees
            try:
                state = snapshot.load(snap.state)
                engine = state.engine
                ok = state.seq == snap.seq and engine.history_marks() == engine.forgotten == state.marks \
                    and archive.marks().covers(state.marks)
                if ok:
                    archive.show(state.marks)
                    engine.archive = archive
                    checked = self._check_archive(engine, self._checked_before(state.marks))
                    ok = engine.digest() == snap.digest
            except Exception as exc:  # a damaged snapshot only costs a longer replay
                log.warning("snapshot unreadable", extra={"fields": {"seq": snap.seq, "error": repr(exc)}})
                continue
            if not ok or checked is None:
                log.warning("snapshot does not match its digest or the archive",
                            extra={"fields": {"seq": snap.seq}})
                continue
            self.engine, self._seq = engine, state.seq
            self._archived = state.marks
            self._discard_after(code, snap.seq, state.marks)
            self._record_checked(checked)
            return snap.seq
        archive.show(HistoryMarks(0, 0, 0))
        self._discard_after(code, 0, HistoryMarks(0, 0, 0))
        return 0

    def _check_archive(self, engine: Engine, start: ChainPoint) -> ChainPoint | None:
        """Check the archive before the engine's forgotten marks against its chains and announced charges from
        `start`; the point at those marks, or None if the charges disagree (a chain that differs raises). A check from
        a recorded point that fails is redone from the beginning: a damaged point row must not cost good snapshots."""
        try:
            checked = self._check_archive_from(engine, start)
        except ValueError as exc:
            checked, failure = None, repr(exc)
        else:
            failure = "the archived charges are not the announced ones"
        if checked is not None or start.marks == HistoryMarks(0, 0, 0):
            return checked
        log.warning("archive check from the recorded point failed; checking from the beginning",
                    extra={"fields": {"marks": str(start.marks), "error": failure}})
        return self._check_archive_from(engine, CHAIN_START)

    def _check_archive_from(self, engine: Engine, start: ChainPoint) -> ChainPoint | None:
        archive, charges = self.store.archive, ChargeCheck()
        checked = engine.verify_chains(charges.events(archive.all_events(start.marks.events)),
                                       archive.all_jobs(start.marks.retired), start)
        charges.charges(archive.all_charges(start.marks.charges))
        return checked if charges.agree else None

    def _record_checked(self, point: ChainPoint) -> None:
        """Let the next restore hash only what is archived after `point`. A write that fails (a full disk) costs only
        that restore's time: the row left in place is an earlier point, still true of the rows before it, or none."""
        try:
            self.store.save_verified_point(point)
        except StoreError as exc:
            log.warning("checked point not recorded", extra={"fields": {"marks": str(point.marks), "error": str(exc)}})

    def _checked_before(self, marks: HistoryMarks) -> ChainPoint:
        """Where an earlier restore left off checking the archive, if that lies within `marks`; else the beginning.
        The rows before it were checked then; a read-only open (`sowsched state-digest --store`) checks them all."""
        point = None if self.store.read_only else self.store.verified_point()  # a reader (an audit) checks it all
        if point is None or not marks.covers(point.marks):
            return CHAIN_START
        return point

    def _discard_after(self, code: str, seq: int, marks: HistoryMarks) -> None:
        if not self.store.read_only:  # a reader leaves the writer's snapshots and archive alone
            self.store.discard_after(code, seq, marks)

    def _replay(self) -> int:
        n = 0
        tenants = dict.fromkeys(namespace.tenant_of(job) for job in self.engine.jobs)  # of the jobs held (ordered)
        for cmd in self.store.commands(after=self._seq):
            try:
                result = apply_command(self.engine, cmd.kind, upgraded(self.engine, cmd.kind, cmd.body, tenants))
            except (EngineError, ValidationError, ValueError, KeyError, TypeError) as exc:  # it was accepted once
                raise ReplayDiverged(f"store {self.store.path}: replaying command {cmd.seq} ({cmd.kind}) failed with "
                                     f"{exc!r}; the log was written by different code") from exc
            if cmd.kind == "submit":
                tenants.setdefault(cmd.body["tenant"])
            if self._encode(cmd.kind, result) != cmd.reply and \
                    (self._legacy is None or cmd.reply not in self._legacy(cmd.kind, result)):
                raise ReplayDiverged(f"store {self.store.path}: replaying command {cmd.seq} ({cmd.kind}) did not "
                                     "reproduce its logged reply; the log was written by different code")
            self._seq = cmd.seq
            n += 1
            if not self.store.read_only:  # a long replay archives as it goes: memory stays bounded
                self._maybe_snapshot()
        return n

    def snapshot(self) -> int:
        """Save the state now (the writer's lock held, between batches); the seq it covers.

        Only the active part of the engine is written, with the history added since the last snapshot archived in
        the same transaction; then the engine forgets that history (the archive serves it), so memory follows the
        active jobs and the snapshot interval.
        """
        if self._seq == self._snapshot_seq:
            return self._seq  # nothing logged since: that snapshot is this state
        marks = self.engine.history_marks()
        live = self.engine.without_history()
        state = snapshot.SchedulerState(live, self._seq, marks)
        history = self.engine.history_since(self._archived)
        named = {j.id for j in history.jobs} | {e.job for e in history.events} | {c.job for c in history.charges}
        self.store.save_snapshot(Snapshot(self._seq, snapshot.code_identity(), self.engine.digest(),
                                          snapshot.dump(state)), history, {i: namespace.tenant_of(i) for i in named})
        self._snapshot_seq, self._archived = self._seq, marks
        self.engine.forget_history(marks)
        self.store.archive.show(marks)
        return self._seq

    def _maybe_snapshot(self) -> None:
        if not self.snapshot_every or self._seq - self._snapshot_seq < self.snapshot_every:
            return
        started = time.perf_counter()
        try:
            self.snapshot()
        except Exception as exc:  # whatever went wrong, the batch is committed: only restarts get slower
            self._snapshot_seq = self._seq
            log.error("snapshot failed", exc_info=not isinstance(exc, StoreError | OSError),
                      extra={"fields": {"seq": self._seq, "error": repr(exc)}})
            return
        self.metrics.snapshot(time.perf_counter() - started)
        log.info(
            "snapshot", extra={"fields": {"seq": self._seq, "ms": round(1000 * (time.perf_counter() - started), 1)}}
        )

    def known_tenant(self, name: str) -> bool:
        """A tenant the operator may name: configured now, or owning jobs (held or archived) from when it was (a
        tenant taken out of the configuration keeps its jobs, events and invoice)."""
        if name in self.config.tenants or name == OPERATOR:
            return True
        with self.reading():
            return self._owns_jobs(name)

    def _owns_jobs(self, name: str) -> bool:
        """Whether tenant `name` owns a job, held or archived (under the lock, or before the server runs)."""
        return any(namespace.tenant_of(key) == name for key in self.engine.jobs) or self.store.archive.holds_tenant(
            name
        )

    def _adopt_tenants(self, config: ServerConfig) -> None:
        """Record `config`'s tenants as the store's, refusing (ConfigError) a name that the store's last configuration
        did not have and that owns jobs, unless its entry says `reinstate = true`: the name is the namespace, so a
        new tenant given it would own the earlier tenant's jobs, invoices and request ids. A read-only store (an
        offline replay) records nothing; a store that recorded no tenants yet takes these as they are."""
        if self.store.read_only:
            return
        previous = self.store.configured_tenants()
        if previous is not None:
            back = [
                n for n in config.tenants if n not in previous and n not in config.reinstated and self._owns_jobs(n)
            ]
            if back:
                raise ConfigError(
                    f"tenants {', '.join(map(repr, back))}: own jobs but were not in the configuration "
                    "this store last served with: a name is its tenant's namespace for good, "
                     "and a new tenant given it would own "
                    "the earlier one's jobs, invoices and request ids; give a new tenant a new name, or "
                    "set `reinstate = true` in the entry if the same tenant is coming back"
                )
        if previous != frozenset(config.tenants):
            self.store.record_tenants(config.tenants)

    def not_served(self) -> None:
        """Put back the tenant record this start-up replaced, when the server then failed to start (a port in use, a
        TLS key unreadable): a configuration that never served must not decide which names may come back."""
        if not self.store.read_only:
            self.store.record_tenants(self._tenants_before)

    def reconfigure(self, config: ServerConfig) -> None:
        """Serve with new tokens, tenants and limits (platform.toml reloaded); the platform and the oracle are the
        ones the log was written with and cannot change while it is in use."""
        changed = sorted(_identity_changes(self.config.identity(), config.identity()))
        if changed:
            raise ConfigError(
                f"{', '.join(changed)} changed: the log was written with the old value{'s' * (len(changed) > 1)}; "
                "a platform or oracle change needs a new store"
            )
        with self._lock:
            self._adopt_tenants(config)
            self.config = config
            self.limits = ActiveLimits(config.max_active_jobs)
            self.changed.notify_all()  # event streams re-check their callers' tokens now

    def owner(self, job_id: str) -> str | None:
        """The tenant of any job, held or archived; None for an unknown id."""
        held = job_id in self.engine.jobs
        return namespace.tenant_of(job_id) if held else self.store.archive.owner(job_id)

    # ---- commands ----

    def execute(self, caller: Principal | str, request_id: str | None, kind: str,
                body: dict[str, Any], sow: SoW | None = None) -> Acknowledged:
        """Apply `kind` with `body` and log it, or return the logged reply of the same earlier request.

        Group commit: the caller queues its command; whoever holds the writer lock applies every queued command
        in order, logs them in one transaction and commits once, then each caller gets its reply. Nothing is
        acknowledged before the commit that makes it durable, and reads (under the same lock) see only
        committed state.
        """
        if self.store.read_only:
            raise Unavailable(f"store {self.store.path} is open read-only: it takes no commands")
        name = caller.name if isinstance(caller, Principal) else caller
        if kind in JOB_COMMANDS and not all(isinstance(body.get(k), str) for k in ("tenant", "job_id")):
            raise Refused(f"a {kind} command names its job by 'tenant' and 'job_id'; got keys {sorted(body)}")
        logged = body_json(body)
        principal = caller if isinstance(caller, Principal) else None
        ticket = _Ticket(name, principal, request_id or None, kind, body, logged, body_hash(kind, body, logged), sow)
        with self._queue_lock:
            self._queue.append(ticket)
        with self._lock:
            if not ticket.done:
                self._run_batch()
        if ticket.error is not None:
            raise ticket.error
        assert ticket.ack is not None
        return ticket.ack

    def _run_batch(self) -> None:
        with self._queue_lock:
            batch, self._queue = self._queue, []
        started = time.perf_counter()
        logged: list[tuple[_Ticket, bytes]] = []
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

    def _apply(self, t: _Ticket) -> tuple[bytes, bool]:
        """Apply one command and append it to the open transaction; (reply, False) for a repeated request."""
        if t.principal is not None and not t.principal.holds(self.config):  # a reload revoked it while it waited
            raise Unauthenticated(f"the token no longer authenticates {t.caller!r} (the server's configuration "
                                  "changed while the command waited); nothing was done")
        if t.request_id:
            prior = self.store.request(t.caller, t.request_id)  # the log's index: no table in memory
            if prior is not None:
                if prior[0] != t.hash and prior[0] != _previous_build_hash(t):
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
        result = apply_command(self.engine, t.kind, t.body, t.sow)
        if t.kind == "submit":
            self.limits.admitted(self.engine, namespace.key(t.body["tenant"], t.body["job_id"]))
        reply = self._encode(t.kind, result)
        self._seq = self.store.append(t.kind, t.caller, t.request_id, t.body, t.hash, reply, self.engine.now,
                                      t.logged)
        return reply, True

    def _authorize(self, caller: str, kind: str, body: dict[str, Any]) -> None:
        if caller in (OPERATOR, CLOCK):
            return
        if kind == "advance":
            raise PermissionDenied("AdvanceRound needs the operator token")
        if kind == "capacity":
            raise PermissionDenied("ReportCapacity needs the operator token")
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


__all__ = ["Acknowledged", "DurableScheduler", "EngineError", "FailedPrecondition", "LimitReached", "PermissionDenied",
           "Refused", "ReplayDiverged", "Unauthenticated", "Unavailable"]
