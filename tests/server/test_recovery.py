"""Crash recovery: a server SIGKILLed at random points reaches, after restart, the state of a run never killed."""

from __future__ import annotations

import contextlib
import random
import sqlite3
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from clients.client import RetryPolicy, RpcFailure, SchedulerClient
from clients.grpc_sim import GrpcScheduler
from mechanism.engine import Engine
from mechanism.events import Event
from models.simulation import Workload, drive
from models.workloads import make_workload
from server import namespace
from server.app import ServerOptions, start_server
from server.config import ServerConfig
from server.scheduler import DurableScheduler
from server.service import encode_reply
from server.store import CommandStore
from tests.grpc_support import (
    ACME,
    GLOBEX,
    OP,
    PATIENT,
    FailingCommit,
    Namespaced,
    ServerProcess,
    client,
    config,
    local_event,
    running,
    sow,
)

ONCE = RetryPolicy(attempts=1)


def small_overload() -> Workload:
    """The overload workload (LIFO evictions happen) with 2000 samples and 16 rounds, to stay quick."""
    w = make_workload("overload", seed=5)
    platform = w.platform.model_copy(update={"samples": 2000})
    jobs = tuple(j for j in w.jobs if j.birth < 16)
    return Workload(name=w.name, platform=platform, jobs=jobs)


def tenant_of(job_id: str) -> str:
    return "acme" if int(job_id.split("-")[1]) % 2 == 0 else "globex"


class Killer(threading.Thread):
    """SIGKILL the server when its log reaches seeded random lengths (plus a random few ms), then restart it."""

    def __init__(self, proc: ServerProcess, seed: int, total: int, kills: int) -> None:
        super().__init__(daemon=True)
        self.proc, self.rng = proc, random.Random(seed)
        self.at = sorted(self.rng.sample(range(3, total - 3), kills))
        self.done = threading.Event()
        self.killed = 0

    def logged(self) -> int:
        with contextlib.closing(sqlite3.connect(f"file:{self.proc.store}?mode=ro", uri=True, timeout=5)) as db:
            return int(db.execute("SELECT COUNT(*) FROM commands").fetchone()[0])

    def run(self) -> None:
        for threshold in self.at:
            while self.logged() < threshold:
                if self.done.wait(0.002):
                    return
            time.sleep(self.rng.uniform(0.0, 0.01))
            self.proc.kill()
            self.killed += 1
            self.proc.start()


class CountingPort:
    """The in-process engine behind the simulation port, counting the commands it accepts."""

    def __init__(self, engine: Any) -> None:  # an Engine, or one behind tests.grpc_support.Namespaced
        self.engine, self.accepted = engine, 0

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.engine, name)

        def call(*args: Any) -> Any:
            result = method(*args)
            self.accepted += 1
            return result
        return call


class Watcher(threading.Thread):
    """Follow the event stream across the kills, resuming from the last seen sequence number."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.client = SchedulerClient(f"127.0.0.1:{port}", OP, retry=PATIENT)
        self.events: list[Event] = []

    def run(self) -> None:
        with contextlib.suppress(RpcFailure):  # CANCELLED when `stop` closes the channel
            for e in self.client.watch(0, follow=True):
                self.events.append(e)

    def stop_at(self, count: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.events) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        self.client.close()
        self.join(timeout)


@pytest.mark.slow
def test_sigkill_at_random_points_loses_no_acknowledged_command_and_reaches_the_unkilled_digest(
        tmp_path: Path) -> None:
    workload = small_overload()
    reference = Engine(workload.platform)
    counted = CountingPort(Namespaced(reference, tenant_of))
    expected = drive(workload, counted)
    proc = ServerProcess(tmp_path, workload.platform.model_dump(), "--snapshot-every", "5")  # restarts use them
    port = proc.start()
    watcher = Watcher(port)
    watcher.start()
    killer = Killer(proc, seed=11, total=counted.accepted, kills=3)
    try:
        with SchedulerClient(f"127.0.0.1:{port}", OP, retry=PATIENT) as op:
            killer.start()
            result = drive(workload, GrpcScheduler(op, tenant_of))
            killer.join(timeout=120)
            assert killer.killed == 3
            status = op.status()
            watcher.stop_at(status.events)
            # Every acknowledged SoW and report is there: the quotes, every job's state and the digest.
            assert result.summary() == expected.summary() and result.events == expected.events
            assert {q: result.quotes[q] for q in result.quotes} == expected.quotes
            views = {(s.tenant, s.view.id): s.view for s in op.list_jobs()}
            assert views == {
                namespace.split(j): replace(reference.view(j), id=namespace.local(j)) for j in reference.jobs
            }
            assert status.state_digest == reference.digest()
    finally:
        killer.done.set()
        proc.close()
    assert watcher.events == [local_event(e) for e in reference.events]  # resumed across every kill: no gap, no repeat
    assert offline_digest(proc.store, workload) == reference.digest()  # the whole log, every reply checked


def offline_digest(store: Path, workload: Workload) -> str:
    cfg = ServerConfig(platform=workload.platform, oracle="mc", tokens={OP: "operator"}, tenants=("acme", "globex"))
    sched = DurableScheduler(cfg, CommandStore(store, cfg.identity()), encode_reply, snapshot_every=0)
    try:
        return sched.engine.digest()
    finally:
        sched.close()


def test_a_restart_replays_the_log_to_the_same_state_and_request_ids(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    with running(store) as srv:
        acme = client(srv, ACME)
        quote = acme.submit("j1", sow(), request_id="r1")
        acme.report_arrival("j1", request_id="r2")
        client(srv).advance(request_id="r3")
        before = client(srv).status()
    with running(store) as srv:
        assert srv.scheduler.replayed == 3
        assert client(srv).status() == before
        assert client(srv, ACME).submit("j1", sow(), request_id="r1") == quote
        assert client(srv).advance(request_id="r3").round == 0
        assert client(srv).status().now == 1


def test_stop_lets_the_command_in_flight_finish_and_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "s.db"
    srv = start_server(config(), ServerOptions(store=str(store), listen="127.0.0.1:0"))
    engine = srv.scheduler.engine
    real_submit = engine.submit
    entered = threading.Event()

    def slow_submit(job_id: str, s: object) -> object:
        entered.set()
        time.sleep(0.5)
        return real_submit(job_id, s)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "submit", slow_submit)
    replies: list[object] = []
    caller = threading.Thread(target=lambda: replies.append(client(srv, GLOBEX).submit("slow", sow())))
    caller.start()
    assert entered.wait(10)
    srv.stop(grace=5)
    caller.join()
    assert replies and getattr(replies[0], "job", None) == "slow"
    with running(store) as again:
        assert client(again).get_job("slow", tenant="globex").tenant == "globex"


def test_sigterm_shuts_the_server_down_cleanly(tmp_path: Path) -> None:
    proc = ServerProcess(tmp_path)
    try:
        port = proc.start()
        with SchedulerClient(f"127.0.0.1:{port}", ACME) as acme:
            acme.submit("j1", sow())
        assert proc.terminate() == 0
        proc.start()
        with SchedulerClient(f"127.0.0.1:{proc.port}", ACME, retry=PATIENT) as acme:
            assert acme.get_job("j1").view.state == "SUBMITTED"
    finally:
        proc.close()


def test_a_failing_log_stops_the_server_from_serving(tmp_path: Path) -> None:
    with running(tmp_path / "s.db") as srv:
        srv.scheduler.store.close()  # every append now fails
        with pytest.raises(Exception, match="UNAVAILABLE: the command log failed"):
            client(srv, ACME, retry=ONCE).submit("j1", sow())
        with pytest.raises(Exception, match="UNAVAILABLE: the command log failed"):
            client(srv, ACME, retry=ONCE).status()


def test_watch_resumes_after_a_disconnect_without_gaps_or_repeats(tmp_path: Path) -> None:
    proc = ServerProcess(tmp_path)
    try:
        port = proc.start()
        op = SchedulerClient(f"127.0.0.1:{port}", OP, retry=PATIENT)
        op.submit("a", sow(), tenant="acme")
        stream = op.watch(0, follow=True)
        first = next(stream)
        proc.kill()
        proc.start()
        op.submit("b", sow(), tenant="globex")
        second = next(stream)
        assert [(first.seq, first.job), (second.seq, second.job)] == [(0, "a"), (1, "b")]
        stream.close()
    finally:
        proc.close()


def test_a_following_watch_is_told_to_resume_when_the_server_shuts_down(tmp_path: Path) -> None:
    srv = start_server(config(), ServerOptions(store=str(tmp_path / "s.db"), listen="127.0.0.1:0"))
    op = client(srv, OP, retry=ONCE)
    op.submit("a", sow(), tenant="acme")
    stream = op.watch(0, follow=True)
    assert next(stream).job == "a"
    threading.Timer(0.2, srv.stop).start()
    with pytest.raises(RpcFailure, match=r"^UNAVAILABLE: the server is shutting down; resume from_seq=1"):
        next(stream)


def test_after_a_failed_commit_the_restart_serves_the_committed_state_and_the_retry_applies_once(
    tmp_path: Path,
) -> None:
    store = tmp_path / "s.db"
    with running(store) as srv:
        acme = client(srv, ACME, retry=ONCE)
        acme.submit("j1", sow(), request_id="r1")
        committed = client(srv).status().state_digest
        srv.scheduler.store._db = FailingCommit(srv.scheduler.store._db)  # type: ignore[assignment]
        with pytest.raises(RpcFailure, match=r"^UNAVAILABLE: the command log failed"):
            acme.submit("j2", sow(value=30.0), request_id="r2")
        with pytest.raises(RpcFailure, match=r"^UNAVAILABLE: the command log failed"):
            acme.get_job("j2")
    with running(store) as srv:
        assert client(srv).status().state_digest == committed
        acme = client(srv, ACME, retry=ONCE)
        with pytest.raises(RpcFailure, match=r"^NOT_FOUND"):
            acme.get_job("j2")
        quote = acme.submit("j2", sow(value=30.0), request_id="r2")  # the client's retry, after the restart
        assert acme.submit("j2", sow(value=30.0), request_id="r2") == quote
        assert [s.view.id for s in client(srv).list_jobs()] == ["j1", "j2"]
