"""Prometheus metrics: RPC, writer, snapshot and settle timings, and state gauges read fresh at every scrape."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Histogram, Info, ProcessCollector, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from server import snapshot
from server.errors import Unavailable
from server.limits import MAX_PORT
from server.observer import Observer

if TYPE_CHECKING:
    from server.observer import Acknowledged
    from server.scheduler import DurableScheduler

# Seconds, from 0.1 ms (a cheap read) to 30 s (a snapshot of a large state).
BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
           10.0, 30.0)




def parse_address(text: str) -> tuple[str, int]:
    """HOST:PORT (IPv6 hosts in brackets) as (host, port); ValueError naming metrics_listen otherwise."""
    host, sep, port = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or int(port) > MAX_PORT:
        raise ValueError(f"metrics_listen={text!r} is not HOST:PORT with PORT in [0, {MAX_PORT}] "
                         "(e.g. 127.0.0.1:9464; port 0 picks a free one)")
    return host, int(port)


class StateCollector:
    """Gauges read under the scheduler's read lock at scrape time: O(active jobs), never O(history)."""

    def __init__(self, scheduler: DurableScheduler) -> None:
        self.scheduler = scheduler

    def collect(self) -> Iterator[Metric]:
        sched = self.scheduler
        try:
            with sched.reading() as engine:
                values = {"round": ("The current round.", engine.now),
                          "active_jobs": ("Jobs not yet finished (waiting, arrived or running).", engine.active_jobs),
                          "log_seq": ("Sequence number of the last logged command applied.", sched.log_seq),
                          "snapshot_seq": ("Log sequence number covered by the newest state snapshot "
                                           "(0: none; after a failed snapshot, the one it attempted).",
                                           sched.snapshot_seq),
                          "ended_jobs": ("Jobs ended since the log began.", engine.history_marks().retired),
                          "events": ("Events emitted since the log began.", engine.history_marks().events),
                          "held_ended_jobs": ("Ended jobs held in memory (the rest are in the store's archive).",
                                              len(engine.retired)),
                          "held_events": ("Events held in memory (the rest are in the store's archive).",
                                          len(engine.events))}
        except Unavailable:  # closed or broken (logged by the scheduler): no state to report
            return
        for name, (doc, value) in values.items():
            yield GaugeMetricFamily(f"sowsched_{name}", doc, value=value)


@dataclass
class MetricsEndpoint:
    """prometheus_client's HTTP server for one registry, on its own thread."""

    httpd: WSGIServer
    thread: threading.Thread

    @property
    def port(self) -> int:
        return int(self.httpd.server_port)

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


class ServerMetrics(Observer):
    """One server's metrics in its own registry (several servers in one process share nothing) and their address."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port  # where serve() listens; port 0 picks a free one
        self.registry = CollectorRegistry()
        reg = self.registry
        ProcessCollector(registry=reg)  # process_resident_memory_bytes, process_cpu_seconds_total, open fds, ...
        Info("sowsched_build", "The build serving: package version and code identity (as GetPlatform).",
             registry=reg).info({"version": snapshot.server_version(), "code": snapshot.code_identity()})
        self.rpc_total = Counter("sowsched_rpc", "RPCs answered, by method and gRPC status code.",
                                 ("method", "code"), registry=reg)
        self.rpc_seconds = Histogram("sowsched_rpc_seconds", "RPC handling time, by method.", ("method",),
                                     registry=reg, buckets=BUCKETS)
        self.commands_total = Counter("sowsched_commands", "Commands applied and logged, by kind.", ("kind",),
                                      registry=reg)
        self.writer_seconds = Histogram("sowsched_writer_seconds", "Time a logged command held the writer "
                                        "(apply, encode, its share of the commit), by kind.", ("kind",),
                                        registry=reg, buckets=BUCKETS)
        self.commit_seconds = Histogram("sowsched_commit_seconds", "A logged command's share of its batch's "
                                        "log commit (the fsync).", registry=reg, buckets=BUCKETS)
        self.snapshot_seconds = Histogram("sowsched_snapshot_seconds", "Time to save a state snapshot.",
                                          registry=reg, buckets=BUCKETS)
        self.settle_seconds = Histogram("sowsched_settle_seconds", "Settler passes that did oracle work: time "
                                        "holding the writer.", registry=reg, buckets=BUCKETS)
        self.config_reloads_total = Counter("sowsched_config_reloads", "Configuration reloads (SIGHUP), by outcome "
                                            "(applied, refused).", ("outcome",), registry=reg)

    def watch(self, scheduler: DurableScheduler) -> None:
        """Report the scheduler's round, active jobs, log and snapshot sequence numbers at every scrape."""
        self.registry.register(StateCollector(scheduler))

    def serve(self) -> MetricsEndpoint:
        """Serve /metrics on host:port; OSError if it cannot bind."""
        httpd, thread = start_http_server(self.port, self.host, registry=self.registry)
        return MetricsEndpoint(httpd, thread)

    def rpc(self, method: str, code: str, seconds: float) -> None:
        self.rpc_total.labels(method, code).inc()
        self.rpc_seconds.labels(method).observe(seconds)

    def command(self, kind: str, ack: Acknowledged) -> None:
        self.commands_total.labels(kind).inc()
        self.writer_seconds.labels(kind).observe(ack.writer_ms / 1000)
        self.commit_seconds.observe(ack.commit_ms / 1000)

    def snapshot(self, seconds: float) -> None:
        self.snapshot_seconds.observe(seconds)

    def settle(self, seconds: float) -> None:
        self.settle_seconds.observe(seconds)

    def config_reload(self, outcome: str) -> None:
        self.config_reloads_total.labels(outcome).inc()
