"""The typed client: deadlines, retries that reuse the request id, typed results and failures."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from clients.client import RetryPolicy, RpcFailure, SchedulerClient, new_request_id
from mechanism.engine import JobView, Quote
from mechanism.events import Event
from server.app import RunningServer, ServerOptions, start_server
from tests.grpc_support import ACME, OP, client, config, running, sow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_retry_delays_grow_exponentially_up_to_the_cap() -> None:
    assert list(RetryPolicy(attempts=5, backoff=0.1, max_backoff=0.3).delays()) == [0.1, 0.2, 0.3, 0.3]
    assert list(RetryPolicy(attempts=1).delays()) == []


def test_request_ids_are_unique() -> None:
    assert len({new_request_id() for _ in range(1000)}) == 1000


def test_a_call_made_before_the_server_is_up_is_retried_until_it_answers(tmp_path: Path) -> None:
    port = free_port()
    servers = []
    starter = threading.Timer(0.4, lambda: servers.append(
        start_server(config(), ServerOptions(store=str(tmp_path / "s.db"), listen=f"127.0.0.1:{port}"))))
    starter.start()
    try:
        c = SchedulerClient(f"127.0.0.1:{port}", ACME, retry=RetryPolicy(attempts=40, backoff=0.05,
                                                                          max_backoff=0.2))
        assert c.submit("j1", sow()).job == "j1"
    finally:
        starter.join()
        for s in servers:
            s.stop(0)


def test_a_timed_out_submit_is_retried_with_its_request_id_and_creates_one_job(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with running(tmp_path / "s.db") as srv:
        engine = srv.scheduler.engine
        real = engine.submit
        calls: list[str] = []

        def slow(job_id: str, s: object) -> Quote:
            calls.append(job_id)
            time.sleep(0.5)
            return real(job_id, s)  # type: ignore[arg-type]

        monkeypatch.setattr(engine, "submit", slow)
        c = client(srv, ACME, timeout=0.35, retry=RetryPolicy(attempts=20, backoff=0.05, max_backoff=0.1))
        quote = c.submit("j1", sow(), request_id="once")
        assert calls == ["acme/j1"]  # the retries found the logged reply
        assert c.submit("j1", sow(), request_id="once") == quote
        assert [s.view.id for s in client(srv, OP).list_jobs()] == ["j1"]


def test_refusals_are_not_retried_and_carry_their_status_code(tmp_path: Path) -> None:
    with running(tmp_path / "s.db") as srv:
        c = client(srv, ACME, retry=RetryPolicy(attempts=5, backoff=60.0, max_backoff=60.0))
        started = time.monotonic()
        with pytest.raises(RpcFailure, match=r"^NOT_FOUND: job 'acme/x' not found") as info:
            c.get_job("x")
        assert time.monotonic() - started < 30  # one retry would first wait 60 s
        assert (info.value.code, info.value.details) == ("NOT_FOUND", "job 'acme/x' not found")


def test_a_dead_server_fails_with_unavailable_after_the_retries() -> None:
    c = SchedulerClient(f"127.0.0.1:{free_port()}", ACME, retry=RetryPolicy(attempts=3, backoff=0.01))
    with pytest.raises(RpcFailure, match=r"^UNAVAILABLE"):
        c.echo(b"x")


def test_results_are_the_mechanisms_types(tmp_path: Path) -> None:
    with running(tmp_path / "s.db") as srv, client(srv, ACME) as c:
        assert isinstance(c.submit("j1", sow()), Quote)
        status = c.report_arrival("j1")
        assert isinstance(status.view, JobView) and status.tenant == "acme"
        assert c.status().platform.C == 8


def test_submit_tenant_returns_the_quote_and_the_tenant_it_was_filed_under(tmp_path: Path) -> None:
    with running(tmp_path / "s.db") as srv, client(srv, OP) as c:
        quote, tenant = c.submit_tenant("j1", sow(), tenant="globex")
        assert isinstance(quote, Quote) and (quote.job, tenant) == ("j1", "globex")
        assert c.submit_tenant("j1", sow())[1] == "operator"  # the operator's own namespace


def test_a_watch_without_follow_ends_after_the_existing_events(tmp_path: Path) -> None:
    with running(tmp_path / "s.db") as srv, client(srv, OP) as c:
        c.submit("j1", sow(), tenant="acme")
        c.submit("j2", sow(), tenant="acme")
        assert [e.job for e in c.watch(follow=False)] == ["j1", "j2"]
        assert list(c.watch(2, follow=False)) == []


def serve_on(port: int, store: Path) -> RunningServer:
    return start_server(config(), ServerOptions(store=str(store), listen=f"127.0.0.1:{port}"))


def test_a_watch_survives_more_restarts_without_events_than_its_retry_budget(tmp_path: Path) -> None:
    port, store = free_port(), tmp_path / "s.db"
    srv = serve_on(port, store)
    seen: list[Event] = []
    failures: list[RpcFailure] = []
    # 10 attempts ride out ~3.7 s of downtime per restart (restarts at load average 6-10 outlasted the ~2.2 s of
    # 8); each server is stopped only once the watch's stream has been open on it for longer than max_backoff, so
    # each restart is a new outage for the watch; 12 restarts cost it 12 or more retries in all, more than one budget
    c = client(port, OP, retry=RetryPolicy(attempts=10, backoff=0.05, max_backoff=0.5))

    def reopened(server: RunningServer) -> None:
        deadline = time.monotonic() + 30
        while server.service.open_streams == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.6)

    def follow() -> None:
        try:
            for e in c.watch(0):
                seen.append(e)
                if len(seen) == 2:
                    return
        except RpcFailure as exc:
            failures.append(exc)

    client(port, OP).submit("j0", sow(), tenant="acme")
    watcher = threading.Thread(target=follow, daemon=True)
    watcher.start()
    try:
        for _ in range(12):  # each restart costs the watch a retry or two; no event restores its budget
            reopened(srv)
            srv.stop(0)
            srv = serve_on(port, store)
        time.sleep(0.2)
        client(port, OP).submit("j1", sow(), tenant="acme")
        watcher.join(5)
    finally:
        srv.stop(0)
    assert failures == []
    assert [(e.seq, e.job) for e in seen] == [(0, "j0"), (1, "j1")]


def test_a_watch_without_follow_has_the_call_deadline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from server import reads

    real = reads.event_batch
    released, answered = threading.Event(), threading.Event()

    def held(*args: Any) -> Any:  # the server answers only once the test lets it
        released.wait(60)
        answered.set()
        return real(*args)

    with running(tmp_path / "s.db") as srv, client(srv, OP, timeout=0.3, retry=RetryPolicy(attempts=1)) as c:
        c.submit("j1", sow(), tenant="acme")
        monkeypatch.setattr(reads, "event_batch", held)
        with pytest.raises(RpcFailure, match=r"^DEADLINE_EXCEEDED"):
            list(c.watch(follow=False))
        assert not answered.is_set()  # the client gave up at its deadline, while the server still held the read
        released.set()


@pytest.mark.parametrize("token", [f"{ACME}\n", "tök", "a\tb"])
def test_a_token_that_cannot_be_sent_as_metadata_is_refused_naming_the_token(token: str) -> None:
    with pytest.raises(ValueError, match=r"^token: .* printable ASCII"):
        SchedulerClient("127.0.0.1:1", token)


def test_a_deadline_beyond_what_grpc_can_represent_is_refused_naming_the_bound() -> None:
    with pytest.raises(ValueError, match=r"^timeout=1e\+10 is above the bound 1e\+09 seconds"):
        SchedulerClient("127.0.0.1:1", ACME, timeout=1e10)


def test_a_watch_without_follow_against_a_hung_server_gives_up_after_its_retries(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from server import reads

    def hang(*args: Any) -> Any:  # past each attempt's deadline (the reads queue on the engine's lock)
        time.sleep(0.5)
        raise AssertionError("the call's deadline has passed")

    outcome: list[str] = []

    def watch_all(c: SchedulerClient) -> None:
        try:
            list(c.watch(follow=False))
        except RpcFailure as exc:
            outcome.append(exc.code)

    with running(tmp_path / "s.db") as srv:
        c = client(srv, OP, timeout=0.2, retry=RetryPolicy(attempts=3, backoff=0.01, max_backoff=0.05))
        c.submit("j1", sow(), tenant="acme")
        monkeypatch.setattr(reads, "event_batch", hang)
        watcher = threading.Thread(target=watch_all, args=(c,), daemon=True)
        watcher.start()
        watcher.join(30)  # three attempts of 0.2 s each; the bound is for liveness on a loaded machine
        assert outcome == ["DEADLINE_EXCEEDED"]
