"""The executor agent: follows the event stream from a durable cursor, launches each started job exactly once, stops
what is evicted or cancelled, and reports the completion of launched work (docs/executors.md)."""

from __future__ import annotations

import functools
import logging
import os
import queue
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from clients.agent_state import AgentState, LaunchRow
from clients.client import RpcFailure, SchedulerClient, TenantEvent
from clients.executors import Ended, Executor, ExecutorError, Launch, handle
from mechanism.executor import ExecutorInfo
from server.gen.sowsched.v1 import scheduler_pb2 as pb

log = logging.getLogger("sowsched.agent")
STOP_EVENTS = frozenset({"evict", "cancel", "complete", "expire", "not_scheduled"})  # the job holds no nodes
GONE = frozenset({"FAILED_PRECONDITION", "NOT_FOUND", "INVALID_ARGUMENT"})  # the server will never take the report
LAUNCH_WORKERS = 8  # launches (sbatch calls) at once: `sowsched bench agent --workers` (docs/performance.md)
FETCH_WORKERS = 8  # payload fetches and launch reports (RPCs) at once
CRASH_ENV = "SOWSCHED_AGENT_CRASH_AFTER_LAUNCH"  # fault injection: SIGKILL itself after the Nth launch, unrecorded


@dataclass(frozen=True)
class Payload:
    """What a started job runs: its argv (empty: nothing to launch), environment, nodes, longest declared duration."""

    command: tuple[str, ...]
    nodes: int
    max_duration: int  # rounds
    env: dict[str, str] = field(default_factory=dict)


PayloadSource = Callable[[str, str], Payload]  # (tenant, job id) -> payload


@dataclass(frozen=True)
class AgentOptions:
    poll: float = 1.0  # seconds between polls of the executor
    grace: float = 10.0  # seconds between SIGTERM and SIGKILL (local; Slurm uses its KillWait)
    slots: int | None = None  # nodes the agent runs at once (local); None: no bound
    round_seconds: float = 0.0  # the server's round length: a launch's time limit is max_duration rounds of it
    crash_after_launch: int = 0  # >0: SIGKILL itself after that many launches, before recording them (tests)
    launch_workers: int = LAUNCH_WORKERS


class Agent:
    """One agent; `run` until `stop` is set. Every decision is written to `state` before the cursor moves past the
    event that caused it, so a restart replays only what it has not finished."""

    def __init__(self, client: SchedulerClient, executor: Executor, state: AgentState, payloads: PayloadSource,
                 options: AgentOptions | None = None) -> None:
        self.client = client
        self.executor = executor
        self.state = state
        self.payloads = payloads
        self.options = options or AgentOptions()
        self.events: queue.Queue[TenantEvent] = queue.Queue()
        self._pending: dict[str, Launch] = {}  # intended launches waiting for slots, known not launched yet
        self._inflight: dict[str, tuple[Launch, Future[str | None]]] = {}  # launches under way in the pool
        self._launcher = ThreadPoolExecutor(max_workers=self.options.launch_workers, thread_name_prefix="launch")
        self._rpcs = ThreadPoolExecutor(max_workers=FETCH_WORKERS, thread_name_prefix="agent-rpc")
        self._nodes: dict[str, int] = {}  # nodes of each launch that holds them (local slots)
        self._launches = 0
        self._stops_sent: set[str] = set()  # stops made by this process; a 'stopping' row without one gets one
        self.launched_count = 0
        self._nodes.update({r.handle: r.nodes for r in state.rows("running", "stopping")})

    # ---- the loop ----

    def run(self, stop: threading.Event) -> None:
        self.reconcile()
        threading.Thread(target=self._watch, args=(stop,), daemon=True, name="agent-watch").start()
        next_poll = time.monotonic()
        try:
            while not stop.is_set():
                wait = max(0.0, min(self.options.poll, next_poll - time.monotonic()))
                try:
                    ev = self.events.get(timeout=min(wait, 0.01) if self._inflight else wait)
                except queue.Empty:
                    ev = None
                if ev is not None:
                    self.handle_events(self._drain(ev))
                self._launch_pending()
                self._collect_launches()
                if time.monotonic() >= next_poll:
                    self.poll()
                    next_poll = time.monotonic() + self.options.poll
        finally:
            self._collect_launches(wait=True)
            self._launcher.shutdown(wait=True)
            self._rpcs.shutdown(wait=True)

    def _drain(self, first: TenantEvent) -> list[TenantEvent]:
        """`first` and the events already queued behind it (a round's events arrive together)."""
        batch = [first]
        while True:
            try:
                batch.append(self.events.get_nowait())
            except queue.Empty:
                return batch

    def _watch(self, stop: threading.Event) -> None:
        seq = self.state.next_seq
        while not stop.is_set():
            try:
                for te in self.client.watch_tenants(seq, follow=True):
                    self.events.put(te)
                    seq = te.event.seq + 1
                    if stop.is_set():
                        return
            except RpcFailure as exc:  # the retries ran out (a long outage): keep trying from the same seq
                log.warning("watch failed (%s); reopening from seq %d", exc, seq)
                stop.wait(self.options.poll)

    # ---- events ----

    def handle_events(self, batch: list[TenantEvent]) -> None:
        """Events in order. A run of consecutive starts is written in transactions of up to `launch_workers`
        starts (one fsync each, not two per start), each handed to the launch pool as soon as it is on disk; the
        events that need nothing move the cursor once, at the end of the batch (read again after a crash, they
        still need nothing)."""
        i = 0
        while i < len(batch):
            j = i + 1
            if batch[i].event.type == "start":
                while j < len(batch) and batch[j].event.type == "start" and j - i < self.options.launch_workers:
                    j += 1
                self._retrying(batch[i], functools.partial(self._start, batch[i:j]))
                self._launch_pending()
            elif batch[i].event.type in STOP_EVENTS:
                self.handle_event(batch[i])
            i = j
        if batch[-1].event.seq >= self.state.next_seq:
            self.state.advance(batch[-1].event.seq + 1)

    def handle_event(self, te: TenantEvent) -> None:
        ev = te.event
        if ev.seq < self.state.next_seq:
            return
        if ev.type == "start":
            self._retrying(te, lambda: self._start([te]))
            return
        if ev.type in STOP_EVENTS:
            self._retrying(te, lambda: self._stop(handle(te.tenant, ev.job, self.state.instance), ev.type))
        self.state.advance(ev.seq + 1)

    def _retrying(self, te: TenantEvent, step: Callable[[], None]) -> None:
        while True:
            try:
                step()
                return
            except (AgentRetry, RpcFailure) as exc:  # the server or the workload manager is away: same event again
                log.warning("event %d (%s %s): %s; retrying", te.event.seq, te.event.type, te.event.job, exc)
                time.sleep(self.options.poll)

    def _start(self, run: list[TenantEvent]) -> None:
        """Rows 'launching' for the run's new starts and the cursor past the run, in one transaction; the launches
        follow (_launch_pending). A start whose row exists is a redelivered event: skipped."""
        fresh: dict[str, TenantEvent] = {}
        for te in run:
            h = handle(te.tenant, te.event.job, self.state.instance)
            if te.event.seq >= self.state.next_seq and h not in fresh and self.state.get(h) is None:
                fresh[h] = te
        if not fresh:
            self.state.advance(run[-1].event.seq + 1)
            return
        payloads = list(self._rpcs.map(lambda te: self.payloads(te.tenant, te.event.job), fresh.values()))
        with self.state.transaction():
            for (h, te), payload in zip(fresh.items(), payloads, strict=True):
                self.state.intend(h, te.tenant, te.event.job, te.event.seq, payload.nodes)
                if not payload.command:
                    self.state.ended(h, None, "no-command", report=False)
            self.state.advance(run[-1].event.seq + 1)
        for (h, te), payload in zip(fresh.items(), payloads, strict=True):
            if payload.command:
                self._pending[h] = self._spec(h, te.event.job, payload)

    def _spec(self, h: str, job_id: str, p: Payload) -> Launch:
        return Launch(h, job_id, p.command, p.nodes, p.max_duration * self.options.round_seconds, p.env)

    def _launch_pending(self) -> None:
        """Hand the intended jobs that fit to the launch pool (up to `launch_workers` sbatch calls at once: they are
        independent). Their rows say 'launching' already, so a crash in between is reconciled like any other."""
        used = sum(self._nodes.values())
        for h, spec in list(self._pending.items()):
            if self.options.slots is not None and used + spec.nodes > self.options.slots:
                break  # first come first served: a later job does not overtake a waiting one
            used += spec.nodes
            del self._pending[h]
            self._nodes[h] = spec.nodes
            self._inflight[h] = (spec, self._launcher.submit(self._try_launch, spec))

    def _collect_launches(self, wait: bool = False) -> None:
        """Record the launches that returned (one transaction), then report them to the server in the background."""
        done = [(h, spec, f) for h, (spec, f) in self._inflight.items() if wait or f.done()]
        if not done:
            return
        launched: list[tuple[str, Launch, str]] = []
        for h, spec, f in done:
            del self._inflight[h]
            external = f.result()
            if external is None:
                self._nodes.pop(h, None)  # left 'launching': looked up before it is launched again at the next poll
                continue
            self._launches += 1
            if self.options.crash_after_launch and self._launches == self.options.crash_after_launch:
                os.kill(os.getpid(), signal.SIGKILL)  # fault injection: launched, not recorded
            launched.append((h, spec, external))
        with self.state.transaction():
            for h, _spec, external in launched:
                self.state.launched(h, external)
        for h, spec, external in launched:
            self.launched_count += 1
            log.info("launched %s as %s %s", spec.job_id, self.executor.kind, external)
            row = self.state.get(h)
            if row is not None:
                self._rpcs.submit(self._report_launch, (h, row.tenant, row.job_id, external))

    def _try_launch(self, spec: Launch) -> str | None:
        try:
            return self.executor.launch(spec)
        except ExecutorError as exc:
            log.warning("launch of %s failed (%s); retried at the next poll", spec.job_id, exc)
            return None

    def _report_launch(self, launch: tuple[str, str, str, str]) -> None:
        """Tell the server where the job runs (idempotent; a job that no longer runs has nothing to record)."""
        h, tenant, job_id, external = launch
        try:
            self.client.report_launch(job_id, ExecutorInfo(self.executor.kind, external), tenant=tenant,
                                      request_id=f"agent-launch-{h}")
        except RpcFailure as exc:
            log.info("launch of %s not recorded by the server: %s", job_id, exc)

    def _stop(self, h: str, why: str) -> None:
        if h in self._inflight:
            self._inflight[h][1].result()  # a launch under way: let it return, then stop what it launched
            self._collect_launches()
        row = self.state.get(h)
        if row is None or row.status in ("stopping", "ended"):
            return
        self._pending.pop(h, None)
        external = row.external_id or self._find(row)
        if external is None:
            self.state.ended(h, None, "stopped", report=False)  # never launched
            return
        self.state.stopping(h, external)
        self._stop_external(h, row.job_id, external, why)

    def _stop_external(self, h: str, job_id: str, external: str, why: str) -> None:
        try:
            self.executor.stop(external, self.options.grace)
            self._stops_sent.add(h)
            log.info("stopped %s (%s %s) on %s", job_id, self.executor.kind, external, why)
        except ExecutorError as exc:
            log.warning("stop of %s failed (%s); retried at the next poll", job_id, exc)

    def _find(self, row: LaunchRow) -> str | None:
        if row.handle in self._pending:
            return None  # intended in this process and not launched yet
        try:
            return self.executor.find(row.handle)
        except ExecutorError as exc:
            raise AgentRetry(f"cannot look up {row.job_id}: {exc}") from exc

    # ---- recovery and polling ----

    def reconcile(self) -> None:
        """After a restart: every launch left half-done is looked up in the executor (found: adopted; not found:
        launched now), so nothing intended is lost and nothing launched runs twice."""
        while True:
            try:
                for row in self.state.rows("launching"):
                    if row.handle in self._pending or row.handle in self._inflight:
                        continue
                    external = self._find(row)
                    if external is not None:
                        self.state.launched(row.handle, external)
                        log.info("adopted %s: already launched as %s", row.job_id, external)
                        self._report_launch((row.handle, row.tenant, row.job_id, external))
                    else:
                        self._pending[row.handle] = self._spec(row.handle, row.job_id,
                                                               self.payloads(row.tenant, row.job_id))
                return
            except (AgentRetry, RpcFailure) as exc:
                log.warning("reconcile: %s; retrying", exc)
                time.sleep(self.options.poll)

    def poll(self) -> None:
        """Launch what waits for slots or a retry, learn which launched work ended, stop what is marked stopping and
        was not stopped by this process (its stop failed, or the agent died between writing and making it), and
        report what ended."""
        try:
            self._retry_launching()
            self._launch_pending()
            held = {r.handle: (r, r.external_id) for r in self.state.rows("running", "stopping")}
            ended = self.executor.ended({h: ext for h, (_r, ext) in held.items() if ext is not None})
        except (ExecutorError, AgentRetry) as exc:
            log.warning("poll: %s", exc)
            return
        for h, end in ended.items():
            row = held[h][0]
            self._nodes.pop(h, None)
            report = row.status == "running" and end.how != "timeout"
            self.state.ended(h, end.exit_code, end.how, report=report)
        for h, (row, external) in held.items():  # a stop that failed, or was written before a crash, is made now
            if row.status == "stopping" and h not in ended and h not in self._stops_sent and external is not None:
                self._stop_external(h, row.job_id, external, "a stop not yet made")
        self._report()

    def _retry_launching(self) -> None:
        for row in list(self.state.rows("launching")):
            if row.handle not in self._pending and row.handle not in self._inflight:
                external = self._find(row)
                if external is not None:
                    self.state.launched(row.handle, external)
                    self._report_launch((row.handle, row.tenant, row.job_id, external))
                else:
                    self._pending[row.handle] = self._spec(row.handle, row.job_id,
                                                           self.payloads(row.tenant, row.job_id))

    def _report(self) -> None:
        for row in self.state.unreported():
            try:
                self.report(row, Ended(row.exit_code, row.how or "exited"))
            except RpcFailure as exc:
                if exc.code in GONE:  # the job no longer runs (evicted in the same round): nothing to report
                    log.info("completion of %s not taken: %s", row.job_id, exc)
                else:
                    log.warning("completion of %s not reported yet: %s", row.job_id, exc)
                    return
            self.state.reported(row.handle)

    def report(self, row: LaunchRow, end: Ended) -> None:
        info = ExecutorInfo(self.executor.kind, row.external_id or "unknown", end.exit_code)
        self.client.report_completion(row.job_id, tenant=row.tenant, executor=info,
                                      request_id=f"agent-complete-{row.handle}")
        log.info("reported completion of %s (exit %s, %s)", row.job_id, end.exit_code, end.how)


def server_payloads(client: SchedulerClient, fallback_duration: int) -> PayloadSource:
    """Payloads as the server holds them: the job's command and env, its concurrency, and its longest declared
    duration (GetJob's max_duration, set while the job runs; a job that no longer runs gets `fallback_duration`,
    the platform's D_m: its work is stopped at the event that ended it)."""
    def fetch(tenant: str, job_id: str) -> Payload:
        msg = client._call(client.stub.GetJob, pb.GetJobRequest(job_id=job_id, tenant=tenant))
        longest = int(msg.max_duration) if msg.HasField("max_duration") else fallback_duration
        return Payload(tuple(msg.command), int(msg.concurrency), longest, dict(msg.env))
    return fetch


class AgentRetry(Exception):
    """A look-up the agent needs failed for now (the workload manager is down): tried again later."""
