"""Keepalive: a following watch notices a half-open connection (a TCP proxy that stops forwarding), and the server
accepts the clients' pings instead of answering GOAWAY "too_many_pings"."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from clients.client import Keepalive, RetryPolicy, RpcFailure, SchedulerClient
from mechanism.events import Event
from server.app import ServerOptions, StartupError, start_server
from tests.grpc_support import OP, client, config, running, sow

FAST = Keepalive(time=1.0, timeout=1.0)
SERVER_MIN_PING = 0.5  # the test server accepts the fast pings with margin (pings come a little over 1 s apart)


class Proxy:
    """Forwards 127.0.0.1:`port` to the server; `blackhole()` makes the open connections half-open: their bytes
    are read and dropped in both directions and the sockets stay open (no FIN, no RST). Later connections forward."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.lock = threading.Lock()
        self.links: list[tuple[socket.socket, socket.socket, threading.Event]] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def connections(self) -> int:
        with self.lock:
            return len(self.links)

    def _accept(self) -> None:
        while True:
            try:
                down, _ = self.listener.accept()
            except OSError:  # closed
                return
            try:
                up = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:  # the server has stopped: refuse this one
                down.close()
                continue
            cut = threading.Event()
            with self.lock:
                self.links.append((down, up, cut))
            for src, dst in ((down, up), (up, down)):
                threading.Thread(target=_pump, args=(src, dst, cut), daemon=True).start()

    def blackhole(self) -> None:
        with self.lock:
            for _, _, cut in self.links:
                cut.set()

    def close(self) -> None:
        self.listener.close()
        with self.lock:
            for down, up, _ in self.links:
                for s in (down, up):
                    with suppress(OSError):
                        s.shutdown(socket.SHUT_RDWR)
                    s.close()


def _pump(src: socket.socket, dst: socket.socket, cut: threading.Event) -> None:
    while True:
        try:
            data = src.recv(65536)
            if not data:
                return
            if not cut.is_set():
                dst.sendall(data)
        except OSError:
            return


class Follower:
    """A following watch in a daemon thread: the events it saw, and how it ended."""

    def __init__(self, c: SchedulerClient) -> None:
        self.events: list[Event] = []
        self.times: list[float] = []  # when each event arrived (time.monotonic)
        self.failure: RpcFailure | None = None
        self.failed_at = 0.0
        self.client = c
        self.closing = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(c,), daemon=True)
        self.thread.start()

    def _run(self, c: SchedulerClient) -> None:
        try:
            for e in c.watch(0):
                self.times.append(time.monotonic())
                self.events.append(e)
        except RpcFailure as exc:
            if not self.closing.is_set():  # not the CANCELLED of close()
                self.failed_at = time.monotonic()
                self.failure = exc

    def close(self) -> None:
        """Close the client: the stream ends CANCELLED, the thread with it."""
        self.closing.set()
        self.client.close()
        self.thread.join(2.0)

    def wait_for(self, n: int, within: float) -> bool:
        deadline = time.monotonic() + within
        while len(self.events) < n and self.failure is None and time.monotonic() < deadline:
            time.sleep(0.02)
        return len(self.events) >= n


@contextmanager
def proxied_server(tmp_path: Path) -> Iterator[tuple[Proxy, SchedulerClient]]:
    """A server accepting fast pings, a proxy in front of it, and an operator client talking to it directly."""
    with running(tmp_path / "s.db", min_ping_interval=SERVER_MIN_PING) as srv:
        proxy = Proxy(srv.port)
        try:
            with client(srv, OP) as direct:
                yield proxy, direct
        finally:
            proxy.close()


def test_a_following_watch_on_a_blackholed_connection_reconnects_and_resumes_without_a_gap(
        tmp_path: Path) -> None:
    with proxied_server(tmp_path) as (proxy, direct):
        direct.submit("j0", sow(), tenant="acme")
        c = client(proxy.port, OP, keepalive=FAST, retry=RetryPolicy(attempts=5, backoff=0.05, max_backoff=0.2))
        follower = Follower(c)
        assert follower.wait_for(1, within=5.0)
        proxy.blackhole()
        cut = time.monotonic()
        direct.submit("j1", sow(), tenant="acme")
        resumed = follower.wait_for(2, within=6.0)
        follower.close()
        assert resumed, f"the watch hung on the half-open connection or failed: {follower.failure}"
        assert follower.times[1] - cut < 6.0  # keepalive time + timeout, the reconnection, scheduling slack
        assert [(e.seq, e.job) for e in follower.events] == [(0, "j0"), (1, "j1")]
        assert follower.failure is None and proxy.connections == 2


def test_a_following_watch_without_retries_fails_unavailable_on_a_blackholed_connection(tmp_path: Path) -> None:
    with proxied_server(tmp_path) as (proxy, direct):
        direct.submit("j0", sow(), tenant="acme")
        c = client(proxy.port, OP, keepalive=FAST, retry=RetryPolicy(attempts=1))
        follower = Follower(c)
        assert follower.wait_for(1, within=5.0)
        proxy.blackhole()
        cut = time.monotonic()
        follower.thread.join(6.0)
        assert not follower.thread.is_alive(), "the watch hung on the half-open connection"
        assert follower.failure is not None and follower.failure.code == "UNAVAILABLE"
        assert follower.failed_at - cut < 6.0  # keepalive time + timeout, plus scheduling slack


def test_the_server_accepts_keepalive_pings_on_a_quiet_stream_instead_of_goaway_too_many_pings(
        tmp_path: Path) -> None:
    with running(tmp_path / "s.db", min_ping_interval=SERVER_MIN_PING) as srv, client(srv, OP) as direct:
        c = client(srv, OP, keepalive=FAST, retry=RetryPolicy(attempts=1))
        follower = Follower(c)  # one attempt: a GOAWAY would end the watch with UNAVAILABLE "Too many pings"
        # five pings without data (gRPC sends them at most about once a second); gRPC's default policy (5 min
        # between pings, 2 strikes) answers the 4th with GOAWAY too_many_pings, so does a misspelt channel argument
        time.sleep(5.5)
        direct.submit("j0", sow(), tenant="acme")
        delivered = follower.wait_for(1, within=3.0)
        follower.close()
        assert delivered and follower.failure is None, f"the watch ended: {follower.failure}"


def test_the_client_default_pings_no_faster_than_the_server_default_accepts_with_margin() -> None:
    assert Keepalive().time >= 2 * ServerOptions(store="x").min_ping_interval


def test_keepalive_channel_arguments_are_whole_milliseconds() -> None:
    assert dict(Keepalive(time=1.5, timeout=0.25).channel_options()) == {
        "grpc.keepalive_time_ms": 1500, "grpc.keepalive_timeout_ms": 250, "grpc.http2.ping_timeout_ms": 250,
        "grpc.keepalive_permit_without_calls": 1, "grpc.http2.max_pings_without_data": 0}


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"time": 0.0}, r"^keepalive time=0 is outside \[0\.001, 1e\+09\] seconds"),
    ({"timeout": -1.0}, r"^keepalive timeout=-1 is outside \[0\.001, 1e\+09\] seconds"),
    ({"time": float("nan")}, r"^keepalive time=nan is outside"),
    ({"timeout": 2e9}, r"^keepalive timeout=2e\+09 is outside"),
])
def test_a_keepalive_outside_its_bounds_is_refused_naming_the_field(kwargs: dict[str, float], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Keepalive(**kwargs)


@pytest.mark.parametrize("name", ["min_ping_interval", "keepalive_time", "keepalive_timeout"])
@pytest.mark.parametrize("interval", [0.0, float("nan"), 1e10])
def test_a_server_keepalive_option_outside_its_bounds_is_refused_naming_the_option(
        tmp_path: Path, name: str, interval: float) -> None:
    changes: dict[str, Any] = {name: interval}
    options = replace(ServerOptions(store=str(tmp_path / "s.db"), listen="127.0.0.1:0"), **changes)
    with pytest.raises(StartupError, match=rf"^{name}=.* is outside \[0\.001, 1e9\] seconds"):
        start_server(config(), options)


def test_the_server_frees_the_stream_slot_of_a_watcher_whose_connection_went_half_open(tmp_path: Path) -> None:
    # one stream slot: while the vanished watcher held it, every other watch was RESOURCE_EXHAUSTED for 2 hours
    with running(tmp_path / "s.db", max_watchers=1, min_ping_interval=SERVER_MIN_PING, keepalive_time=0.5,
                 keepalive_timeout=0.5) as srv:
        proxy = Proxy(srv.port)
        try:
            with client(srv, OP) as direct:
                direct.submit("j1", sow(), tenant="acme")
                gone = Follower(SchedulerClient(f"127.0.0.1:{proxy.port}", OP))  # the client's own keepalive: 30 s
                assert gone.wait_for(1, within=5)
                with pytest.raises(RpcFailure, match=r"^RESOURCE_EXHAUSTED: 1 event streams are open"):
                    list(direct.watch(0, follow=False, resume=False))
                proxy.blackhole()
                deadline, seen = time.monotonic() + 8, None
                while seen is None and time.monotonic() < deadline:
                    with suppress(RpcFailure):
                        seen = list(direct.watch(0, follow=False, resume=False))
                    time.sleep(0.1)
                assert seen is not None and [e.job for e in seen] == ["j1"]
                gone.close()
        finally:
            proxy.close()
