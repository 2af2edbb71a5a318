"""The executor agent: follows the event stream from a durable cursor, launches each started job exactly once, stops
what is evicted or cancelled, and reports the completion of launched work (docs/executors.md)."""

from __future__ import annotations

import logging
import os
import queue
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from clients.agent_state import AgentState, LaunchRow
from clients.client import RpcFailure, SchedulerClient, TenantEvent
from clients.executors import Ended, Executor, ExecutorError, Launch, handle
from mechanism.executor import ExecutorInfo
from server.gen.sowsched.v1 import scheduler_pb2 as pb

log = logging.getLogger("sowsched.agent")
STOP_EVENTS = frozenset({"evict", "cancel", "complete", "expire", "not_scheduled"})  # the job holds no nodes
GONE = frozenset({"FAILED_PRECONDITION", "NOT_FOUND", "INVALID_ARGUMENT"})  # the server will never take the report
LAUNCH_WORKERS = 16  # launches (sbatch calls) at once
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
        self._nodes: dict[str, int] = {}  # nodes of each launch that holds them (local slots)
        self._launches = 0
        self.launched_count = 0
        self._nodes.update({r.handle: r.nodes for r in state.rows("running", "stopping")})

    # ---- the loop ----

    def run(self, stop: threading.Event) -> None:
        self.reconcile()
        threading.Thread(target=self._watch, args=(stop,), daemon=True, name="agent-watch").start()
        next_poll = time.monotonic()
        while not stop.is_set():
            try:
                ev = self.events.get(timeout=max(0.0, min(self.options.poll, next_poll - time.monotonic())))
            except queue.Empty:
                ev = None
            if ev is not None:
                self.handle_event(ev)
                if self.events.empty():
                    self._launch_pending()
            if time.monotonic() >= next_poll:
                self.poll()
                next_poll = time.monotonic() + self.options.poll

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

    def handle_event(self, te: TenantEvent) -> None:
        ev = te.event
        if ev.seq < self.state.next_seq:
            return
        h = handle(te.tenant, ev.job)
        while True:
            try:
                if ev.type == "start":
                    self._start(h, te.tenant, ev.job, ev.seq)
                elif ev.type in STOP_EVENTS:
                    self._stop(h, ev.type)
                break
            except (AgentRetry, RpcFailure) as exc:  # the server or the workload manager is away: same event again
                log.warning("event %d (%s %s): %s; retrying", ev.seq, ev.type, ev.job, exc)
                time.sleep(self.options.poll)
        self.state.advance(ev.seq + 1)

    def _start(self, h: str, tenant: str, job_id: str, seq: int) -> None:
        if self.state.get(h) is not None:
            return  # launched (or being launched) already: a redelivered event
        payload = self.payloads(tenant, job_id)
        self.state.intend(h, tenant, job_id, seq, payload.nodes)
        if not payload.command:
            self.state.ended(h, None, "no-command", report=False)
            return
        self._pending[h] = self._spec(h, job_id, payload)  # launched once the events at hand are read

    def _spec(self, h: str, job_id: str, p: Payload) -> Launch:
        return Launch(h, job_id, p.command, p.nodes, p.max_duration * self.options.round_seconds, p.env)

    def _launch_pending(self) -> None:
        """Launch the intended jobs that fit, up to LAUNCH_WORKERS at once (sbatch calls are independent); their
        rows say 'launching' already, so a crash in between is reconciled like any other."""
        batch: list[tuple[str, Launch]] = []
        used = sum(self._nodes.values())
        for h, spec in self._pending.items():
            if self.options.slots is not None and used + spec.nodes > self.options.slots:
                break  # first come first served: a later job does not overtake a waiting one
            used += spec.nodes
            batch.append((h, spec))
        if not batch:
            return
        with ThreadPoolExecutor(max_workers=min(LAUNCH_WORKERS, len(batch))) as pool:
            results = list(pool.map(self._try_launch, [spec for _h, spec in batch]))
        for (h, spec), external in zip(batch, results, strict=True):
            del self._pending[h]
            if external is None:
                continue  # left 'launching': looked up before it is launched again at the next poll
            self._launches += 1
            if self.options.crash_after_launch and self._launches == self.options.crash_after_launch:
                os.kill(os.getpid(), signal.SIGKILL)  # fault injection: launched, not recorded
            self.state.launched(h, external)
            self._nodes[h] = spec.nodes
            self.launched_count += 1
            log.info("launched %s as %s %s", spec.job_id, self.executor.kind, external)
        with ThreadPoolExecutor(max_workers=min(LAUNCH_WORKERS, len(batch))) as pool:
            list(pool.map(self._report_launch, [(r.handle, r.tenant, r.job_id, r.external_id) for r in
                                                (self.state.get(h) for h, _s in batch) if r and r.external_id]))

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
        row = self.state.get(h)
        if row is None or row.status in ("stopping", "ended"):
            return
        self._pending.pop(h, None)
        external = row.external_id or self._find(row)
        if external is None:
            self.state.ended(h, None, "stopped", report=False)  # never launched
            return
        self.state.stopping(h)
        self._stop_external(row.job_id, external, why)

    def _stop_external(self, job_id: str, external: str, why: str) -> None:
        try:
            self.executor.stop(external, self.options.grace)
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
                    if row.handle in self._pending:
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
        """Launch what waits for slots or a retry, learn which launched work ended, and report it."""
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
        self._report()

    def _retry_launching(self) -> None:
        for row in self.state.rows("launching"):
            if row.handle not in self._pending:
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
