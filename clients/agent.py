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
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from clients.agent_state import AgentState, LaunchRow, StateError
from clients.client import RpcFailure, SchedulerClient, TenantEvent
from clients.executors import (
    ARRAY_MAX,
    ARRAY_SCRIPT_CHARS,
    ArrayExecutor,
    Ended,
    Executor,
    ExecutorError,
    Launch,
    handle,
)
from mechanism.executor import ExecutorInfo
from mechanism.views import Payload
from server.gen.sowsched.v1 import scheduler_pb2 as pb

log = logging.getLogger("sowsched.agent")
STOP_EVENTS = frozenset({"evict", "cancel", "complete", "expire", "not_scheduled"})  # the job holds no nodes
GONE = frozenset({"FAILED_PRECONDITION", "NOT_FOUND", "INVALID_ARGUMENT"})  # the server will never take the report
LAUNCH_WORKERS = 8  # launches (sbatch calls) at once: `sowsched bench agent --workers` (docs/performance.md)
FETCH_WORKERS = 8  # payload fetches and launch reports (RPCs) at once
COALESCE_GAP = 0.005  # seconds the agent waits for the next event behind a start (one array for a round's starts)
COALESCE_MAX = 0.05  # seconds it waits so in all before it handles what it has
CRASH_ENV = "SOWSCHED_AGENT_CRASH_AFTER_LAUNCH"  # fault injection: SIGKILL after the Nth launched job, unrecorded


PayloadSource = Callable[[str, str], Payload]  # (tenant, job id) -> payload: for starts streamed without one


@dataclass(frozen=True)
class AgentOptions:
    poll: float = 1.0  # seconds between polls of the executor
    grace: float = 10.0  # seconds between SIGTERM and SIGKILL (local; Slurm uses its KillWait)
    slots: int | None = None  # nodes the agent runs at once (local); None: no bound
    round_seconds: float = 0.0  # the server's round length: a launch's time limit is max_duration rounds of it
    crash_after_launch: int = 0  # >0: SIGKILL itself once that many jobs are launched, before recording them (tests)
    launch_workers: int = LAUNCH_WORKERS
    array_max: int = ARRAY_MAX  # elements of one array (Slurm); 1: one launch call per job
    event_payloads: bool = True  # launch what a start event carries; False: ask the payload source for every start
    event_batches: bool = True  # follow WatchEventBatches; False: WatchEvents, one message per event


@dataclass
class Unit:
    """What one launch call starts: one job (key: its handle), or the elements of one array (key: the batch key
    written in their rows; elements by index)."""

    key: str
    array: bool
    elements: dict[int, Launch]

    @property
    def nodes(self) -> int:
        return sum(spec.nodes for spec in self.elements.values())

    def handles(self) -> list[str]:
        return [spec.handle for spec in self.elements.values()]


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
        self._pending: dict[str, Unit] = {}  # intended launches waiting for slots, known not launched yet
        self._inflight: dict[str, tuple[Unit, Future[dict[str, str] | None]]] = {}  # launches under way in the pool
        # arrays: an executor that has them, not bounded by --slots (an array's nodes may exceed any slot count)
        self._arrays = executor if isinstance(executor, ArrayExecutor) else None
        self._use_arrays = self._arrays is not None and self.options.array_max > 1 and self.options.slots is None
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
        # the cursor is read here: the watch thread never touches the state file (one thread uses its connection)
        threading.Thread(target=self._watch, args=(stop, self.state.next_seq), daemon=True,
                         name="agent-watch").start()
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
        """`first` and the events queued behind it (a round's events arrive together). Behind a start it waits up to
        COALESCE_GAP for the next event (at most COALESCE_MAX in all), so that a round's starts, which reach the
        stream a few at a time, go out in one array rather than several."""
        batch = [first]
        deadline = time.monotonic() + COALESCE_MAX
        while True:
            wait = min(COALESCE_GAP, deadline - time.monotonic()) if batch[-1].event.type == "start" else 0.0
            try:
                batch.append(self.events.get(timeout=wait) if wait > 0 else self.events.get_nowait())
            except queue.Empty:
                return batch

    def _watch(self, stop: threading.Event, seq: int) -> None:
        """Queue every event from `seq` on, reopening the stream from the last one received when it fails. The events
        come in the batches the server read them in (a round's in one message, not one message each)."""
        while not stop.is_set():
            try:
                batches = (self.client.watch_batches(seq, follow=True) if self.options.event_batches
                           else ([te] for te in self.client.watch_tenants(seq, follow=True)))
                for batch in batches:
                    for te in batch:
                        self.events.put(te)
                    seq = batch[-1].event.seq + 1
                    if stop.is_set():
                        return
            except ValueError:  # grpc's "Channel closed!": the agent stopped and closed its client
                if stop.is_set():
                    return
                raise
            except RpcFailure as exc:  # the retries ran out (a long outage): keep trying from the same seq
                log.warning("watch failed (%s); reopening from seq %d", exc, seq)
                stop.wait(self.options.poll)

    # ---- events ----

    def handle_events(self, batch: list[TenantEvent]) -> None:
        """Events in order. A run of consecutive starts is written in transactions of up to `launch_workers`
        starts (with arrays: up to `array_max`, one array per shape), one fsync each, not two per start, each handed
        to the launch pool as soon as it is on disk; the events that need nothing move the cursor once, at the end
        of the batch (read again after a crash, they still need nothing)."""
        run_max = self.options.array_max if self._use_arrays else self.options.launch_workers
        i = 0
        while i < len(batch):
            j = i + 1
            if batch[i].event.type == "start":
                while j < len(batch) and batch[j].event.type == "start" and j - i < run_max:
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
        payloads = self._payloads(list(fresh.values()))
        units = self._units([self._spec(h, te.event.job, p)
                             for (h, te), p in zip(fresh.items(), payloads, strict=True) if p.command])
        where = {spec.handle: (u.key, i) for u in units if u.array for i, spec in u.elements.items()}
        with self.state.transaction():
            for (h, te), payload in zip(fresh.items(), payloads, strict=True):
                self.state.intend(h, te.tenant, te.event.job, te.event.seq, payload.nodes, *where.get(h, (None, None)))
                if not payload.command:
                    self.state.ended(h, None, "no-command", report=False)
            self.state.advance(run[-1].event.seq + 1)
        for u in units:
            self._pending[u.key] = u

    def _payloads(self, starts: list[TenantEvent]) -> list[Payload]:
        """Each start's payload: the one its event carries, else (a server that streams none, or the option off)
        one from the payload source, those fetched at once."""
        given = [te.payload if self.options.event_payloads else None for te in starts]
        fetched = iter(self._rpcs.map(lambda te: self.payloads(te.tenant, te.event.job),
                                      [te for te, p in zip(starts, given, strict=True) if p is None]))
        return [p if p is not None else next(fetched) for p in given]

    def _units(self, specs: list[Launch]) -> list[Unit]:
        """Launch calls for `specs`, in order: one each, or with arrays one array per shape, split where an array
        would pass `array_max` elements or ARRAY_SCRIPT_CHARS of script. Each array gets a random key: no other state
        file (another deployment's agent) can name one alike."""
        if not self._use_arrays or self._arrays is None:
            return [Unit(spec.handle, False, {0: spec}) for spec in specs]
        groups: dict[object, list[list[Launch]]] = {}
        chars: dict[object, int] = {}  # script characters of each shape's last chunk
        for spec in specs:
            shape, size = self._arrays.shape(spec), spec.script_chars()
            chunks = groups.setdefault(shape, [[]])
            if chunks[-1] and (len(chunks[-1]) >= self.options.array_max
                               or chars[shape] + size > ARRAY_SCRIPT_CHARS):
                chunks.append([])
            chars[shape] = (chars[shape] if len(chunks[-1]) else 0) + size
            chunks[-1].append(spec)
        return [Unit(uuid.uuid4().hex[:24], True, dict(enumerate(chunk)))
                for chunks in groups.values() for chunk in chunks]

    def _spec(self, h: str, job_id: str, p: Payload) -> Launch:
        return Launch(h, job_id, p.command, p.nodes, p.max_duration * self.options.round_seconds, p.env)

    def _launch_pending(self) -> None:
        """Hand the intended launches that fit to the launch pool (up to `launch_workers` launch calls at once: they
        are independent). Their rows say 'launching' already, so a crash in between is reconciled like any other."""
        used = sum(self._nodes.values())
        for key, unit in list(self._pending.items()):
            if self.options.slots is not None and used + unit.nodes > self.options.slots:
                break  # first come first served: a later job does not overtake a waiting one
            used += unit.nodes
            del self._pending[key]
            self._nodes.update({spec.handle: spec.nodes for spec in unit.elements.values()})
            self._inflight[key] = (unit, self._launcher.submit(self._try_launch, unit))

    def _collect_launches(self, wait: bool = False) -> None:
        """Record the launches that returned (one transaction), then report them to the server in the background."""
        done = [(key, unit, f) for key, (unit, f) in self._inflight.items() if wait or f.done()]
        if not done:
            return
        launched: list[tuple[str, str, str]] = []  # handle, job id, external id
        for key, unit, f in done:
            del self._inflight[key]
            externals = f.result()
            if externals is None:  # left 'launching': looked up before it is launched again at the next poll
                for h in unit.handles():
                    self._nodes.pop(h, None)
                continue
            before, self._launches = self._launches, self._launches + len(externals)
            if before < self.options.crash_after_launch <= self._launches:
                os.kill(os.getpid(), signal.SIGKILL)  # fault injection: launched, not recorded
            launched += [(spec.handle, spec.job_id, externals[spec.handle]) for spec in unit.elements.values()]
        self._record_launched(launched)

    def _record_launched(self, launched: list[tuple[str, str, str]]) -> None:
        """Write the launches (one transaction), then report them to the server in the background."""
        if not launched:
            return
        with self.state.transaction():
            for h, _job, external in launched:
                self.state.launched(h, external)
        for h, job_id, external in launched:
            self.launched_count += 1
            log.info("launched %s as %s %s", job_id, self.executor.kind, external)
            row = self.state.get(h)
            if row is not None:
                self._rpcs.submit(self._report_launch, (h, row.tenant, row.job_id, external))

    def _try_launch(self, unit: Unit) -> dict[str, str] | None:
        """Each launched job's external id by handle, or None: nothing was launched (retried at the next poll)."""
        try:
            if unit.array and self._arrays is not None:
                ids = self._arrays.launch_array(unit.key, unit.elements)
                return {unit.elements[i].handle: external for i, external in ids.items()}
            return {spec.handle: self.executor.launch(spec) for spec in unit.elements.values()}
        except ExecutorError as exc:
            log.warning("launch of %s failed (%s); retried at the next poll",
                        ", ".join(s.job_id for s in unit.elements.values()), exc)
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
        for _unit, f in [v for v in self._inflight.values() if h in v[0].handles()]:
            f.result()  # a launch under way: let it return, then stop what it launched
            self._collect_launches()
        row = self.state.get(h)
        if row is None or row.status in ("stopping", "ended"):
            return
        external = row.external_id or (None if self._drop_pending(h) else self._find(row))
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

    def _drop_pending(self, h: str) -> bool:
        """Take `h` out of the launches waiting in this process: whether it was one (then it was never launched)."""
        for key, unit in list(self._pending.items()):
            for i, spec in list(unit.elements.items()):
                if spec.handle == h:
                    del unit.elements[i]
                    if not unit.elements:
                        del self._pending[key]
                    return True
        return False

    def _held(self, h: str) -> bool:
        """Whether `h` waits or is under way in this process."""
        return any(h in u.handles() for u in self._pending.values()) or any(
            h in u.handles() for u, _f in self._inflight.values())

    def _find(self, row: LaunchRow) -> str | None:
        """The external id of `row`'s launch made before a crash, looked up in the executor (by its array's key and
        its index, or by its handle), or None: never launched."""
        try:
            if row.batch is not None and row.idx is not None:
                return self._find_array(row.batch, [row.idx]).get(row.idx)
            return self.executor.find(row.handle)
        except ExecutorError as exc:
            raise AgentRetry(f"cannot look up {row.job_id}: {exc}") from exc

    def _find_array(self, key: str, indices: list[int]) -> dict[int, str]:
        if self._arrays is None:
            raise StateError(f"the state file holds launches in array {key}, which the {self.executor.kind} "
                             "executor cannot look up")
        return self._arrays.find_array(key, indices)

    # ---- recovery and polling ----

    def reconcile(self) -> None:
        """After a restart: every launch left half-done is looked up in the executor (found: adopted; not found:
        launched now), so nothing intended is lost and nothing launched runs twice."""
        while True:
            try:
                self._recover_launching()
                return
            except (AgentRetry, RpcFailure) as exc:
                log.warning("reconcile: %s; retrying", exc)
                time.sleep(self.options.poll)

    def _recover_launching(self) -> None:
        """Look up each 'launching' row that this process neither holds nor launches: a launch alone by its handle,
        the launches of one array together by the array's key (Slurm makes an array whole or not at all). Found:
        adopted; not found: launched again, an array under its own key and indices."""
        singles: list[LaunchRow] = []
        arrays: dict[str, list[LaunchRow]] = {}
        for row in self.state.rows("launching"):
            if not self._held(row.handle):
                if row.batch is not None and row.idx is not None:
                    arrays.setdefault(row.batch, []).append(row)
                else:
                    singles.append(row)
        for row in singles:
            external = self._find(row)
            if external is not None:
                log.info("adopted %s: already launched as %s", row.job_id, external)
                self._record_launched([(row.handle, row.job_id, external)])
            else:
                self._pending[row.handle] = Unit(row.handle, False, {0: self._row_spec(row)})
        for key, rows in arrays.items():
            try:
                found = self._find_array(key, [r.idx for r in rows if r.idx is not None])
            except ExecutorError as exc:
                raise AgentRetry(f"cannot look up array {key}: {exc}") from exc
            if found:
                log.info("adopted array %s: %d jobs already launched", key, len(rows))
                self._record_launched([(r.handle, r.job_id, found[r.idx]) for r in rows if r.idx is not None])
            else:
                self._pending[key] = Unit(key, True, {r.idx: self._row_spec(r) for r in rows if r.idx is not None})

    def _row_spec(self, row: LaunchRow) -> Launch:
        return self._spec(row.handle, row.job_id, self.payloads(row.tenant, row.job_id))

    def poll(self) -> None:
        """Launch what waits for slots or a retry, learn which launched work ended, stop what is marked stopping and
        was not stopped by this process (its stop failed, or the agent died between writing and making it), and
        report what ended."""
        try:
            self._recover_launching()
            self._launch_pending()
            held = {r.handle: (r, r.external_id) for r in self.state.rows("running", "stopping")}
            ended = self.executor.ended({h: ext for h, (_r, ext) in held.items() if ext is not None})
        except (ExecutorError, AgentRetry, RpcFailure) as exc:
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
    """Payloads as the server holds them, one GetJob each: for a start streamed without its payload (an older
    server) and a launch written before a restart. The job's command and env, its concurrency, and its longest
    declared duration (GetJob's max_duration, set while the job runs; a job that no longer runs gets
    `fallback_duration`, the platform's D_m: its work is stopped at the event that ended it)."""
    def fetch(tenant: str, job_id: str) -> Payload:
        msg = client._call(client.stub.GetJob, pb.GetJobRequest(job_id=job_id, tenant=tenant))
        longest = int(msg.max_duration) if msg.HasField("max_duration") else fallback_duration
        return Payload(tuple(msg.command), int(msg.concurrency), longest, dict(msg.env))
    return fetch


class AgentRetry(Exception):
    """A look-up the agent needs failed for now (the workload manager is down): tried again later."""
