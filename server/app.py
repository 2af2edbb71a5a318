"""Server assembly: the servicer, health, reflection, TLS, the wall clock, structured logs and clean shutdown."""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

import server.gen  # noqa: F401
from mechanism.warmup import warm
from models.predict.online import EngineConfig
from server import snapshot
from server.config import ConfigError, ServerConfig
from server.errors import Refused
from server.gen.sowsched.v1 import scheduler_pb2 as pb
from server.gen.sowsched.v1 import scheduler_pb2_grpc as pb_grpc
from server.limits import MAX_PORT, MAX_ROUND_SECONDS
from server.metrics import MetricsEndpoint, ServerMetrics, parse_address
from server.observer import NO_METRICS, Observer
from server.prediction import Predictions
from server.scheduler import CLOCK, SNAPSHOT_EVERY, DurableScheduler
from server.service import Clock, SchedulerService, encode_reply, legacy_replies
from server.store import CommandStore, StoreError, store_path

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["Scheduler"].full_name
LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
log = logging.getLogger("sowsched.server")


@dataclass(frozen=True)
class ServerOptions:
    store: str
    listen: str = "127.0.0.1:50051"
    clock: Literal["simulated", "wall"] = "simulated"
    round_seconds: float = 60.0
    tls_cert: Path | None = None
    tls_key: Path | None = None
    max_workers: int = 64
    max_watchers: int | None = None  # open WatchEvents streams at once; None: half of max_workers
    grace_seconds: float = 10.0
    snapshot_every: int = SNAPSHOT_EVERY  # logged commands between state snapshots; 0: never
    metrics_listen: str | None = None  # HOST:PORT of the Prometheus /metrics endpoint; None: no endpoint
    min_ping_interval: float = 10.0  # seconds; clients' keepalive pings may come this often (SchedulerClient: 30 s)
    keepalive_time: float = 60.0  # seconds of quiet on a connection before the server pings the client
    keepalive_timeout: float = 20.0  # seconds the server waits for the ack before it closes the connection


class StartupError(RuntimeError):
    """The server cannot start with these options; the message names the option and its value."""


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message and the record's `fields`."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {"ts": round(record.created, 6), "level": record.levelname.lower(),
                               "logger": record.name, "msg": record.getMessage()}
        out.update(getattr(record, "fields", {}))
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever `sys.stderr` is when a record is emitted, not the one at setup (tests swap it and close
    the old one, and a record logged after that was lost with a '--- Logging error ---' traceback)."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def setup_logging(level: str = "info") -> None:
    handler = _StderrHandler()
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger("sowsched")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False


class WallClock(threading.Thread):
    """Advances the round every `round_seconds` through the same writer as every other command, on ticks fixed from
    its start (no drift). A round that ends after the next tick (a busy writer) skips the ticks it covered instead of
    playing them back to back: a burst of rounds would expire and evict jobs whose owners had no time to report."""

    def __init__(self, scheduler: DurableScheduler, round_seconds: float) -> None:
        super().__init__(name="sowsched-clock", daemon=True)
        self.scheduler = scheduler
        self.round_seconds = round_seconds
        self.halt = threading.Event()

    def run(self) -> None:
        deadline = time.monotonic() + self.round_seconds
        while not self.halt.wait(max(0.0, deadline - time.monotonic())):
            try:
                self.scheduler.execute(CLOCK, None, "advance", {})
            except Refused as exc:
                log.error("round not advanced", extra={"fields": {"error": str(exc)}})
                return
            deadline = self._next_tick(deadline, time.monotonic())

    def _next_tick(self, deadline: float, now: float) -> float:
        """The first tick after `deadline` that is still ahead of `now` (logged when ticks were skipped)."""
        skipped = max(0, math.floor((now - deadline) / self.round_seconds))
        if skipped:
            log.warning("round clock behind: ticks skipped", extra={"fields": {"skipped": skipped,
                                                                                "round_s": self.round_seconds}})
        return deadline + (skipped + 1) * self.round_seconds


class RunningServer:
    """A started server: its bound ports, and `stop` that lets the command in flight finish."""

    def __init__(self, grpc_server: grpc.Server, port: int, scheduler: DurableScheduler, service: SchedulerService,
                 health_servicer: health.HealthServicer, clock: WallClock | None, grace: float,
                 metrics: MetricsEndpoint | None = None, observer: Observer = NO_METRICS,
                 loopback: bool = True) -> None:
        self.grpc_server = grpc_server
        self.port = port
        self.scheduler = scheduler
        self.service = service
        self._health = health_servicer
        self._clock = clock
        self._grace = grace
        self._stopped = threading.Event()
        self._metrics = metrics
        self._observer = observer
        self._loopback = loopback  # listening on loopback only: a configuration without tokens may serve

    @property
    def metrics_port(self) -> int | None:
        """The bound port of the /metrics endpoint; None when metrics are off."""
        return None if self._metrics is None else self._metrics.port

    def stop(self, grace: float | None = None) -> None:
        """Refuse new calls, finish those in flight (the writer's command included), then close the log."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        self._health.enter_graceful_shutdown()
        if self._clock is not None:
            self._clock.halt.set()
            self._clock.join()
        self.service.stopping.set()
        self.grpc_server.stop(self._grace if grace is None else grace).wait()
        if self.service.predictions is not None:
            self.service.predictions.stop()
        self.scheduler.close()
        gc.unfreeze()  # start's frozen objects back to the collector: a process starting servers again frees this one
        if self._metrics is not None:  # last: scrapes see the shutdown until the end
            self._metrics.stop()
        log.info("stopped", extra={"fields": {"port": self.port}})

    def wait(self) -> None:
        self.grpc_server.wait_for_termination()

    def reload(self, load: Callable[[], ServerConfig]) -> bool:
        """Take a re-read configuration (SIGHUP): its tokens, tenants and max_active_jobs apply from the next call,
        and event streams whose token it no longer holds end with UNAUTHENTICATED. A configuration that does not
        load, changes the platform or the oracle, or has no tokens while the server listens beyond loopback is
        refused (logged, counted): the old one stays. True if applied."""
        old = self.scheduler.config
        try:
            new = load()
            if not new.auth_enabled and not self._loopback:
                raise ConfigError("the new configuration has no tokens, and a server without them listens only on "
                                  "loopback")
            self.scheduler.reconfigure(new)
        except (
            Exception
        ) as exc:  # a ConfigError, a store that cannot record it, or a loader's bug: the server serves on
            self._observer.config_reload("refused")
            expected = isinstance(exc, ConfigError | StoreError)  # its message says it all; a bug gets its traceback
            log.error(
                "configuration reload refused; the previous one stays",
                exc_info=not expected,
                extra={"fields": {"error": str(exc) if expected else repr(exc)}},
            )
            return False
        self._observer.config_reload("applied")
        log.info("configuration reloaded", extra={"fields": config_changes(old, new)})
        return True


def config_changes(old: ServerConfig, new: ServerConfig) -> dict[str, Any]:
    """What a reload changed, for the log: tenants added and removed, whose tokens changed (never the tokens)."""
    def holders(cfg: ServerConfig) -> dict[str, str]:
        return {name: token for token, name in cfg.tokens.items()}

    before, after = holders(old), holders(new)
    return {"tenants_added": sorted(set(new.tenants) - set(old.tenants)),
            "tenants_removed": sorted(set(old.tenants) - set(new.tenants)),
            "tokens_changed": sorted(n for n in before.keys() & after.keys() if before[n] != after[n]),
            "max_active_jobs": dict(sorted(new.max_active_jobs.items())), "auth": new.auth_enabled}


def start_server(config: ServerConfig, options: ServerOptions) -> RunningServer:
    """Replay the log, bind, and start serving; the returned server knows its port (listen on :0 to pick one)."""
    loopback = _check_options(config, options)
    started = time.perf_counter()
    watchers = _max_watchers(options)
    keepalive = _keepalive_options(options)
    metrics = _server_metrics(options)
    observer: Observer = NO_METRICS if metrics is None else metrics
    endpoint = None if metrics is None else _serve_metrics(metrics, options)  # before the store: a port in use
    try:                                                                     # opens nothing; scrapes see the replay
        scheduler = DurableScheduler(config, CommandStore(store_path(options.store), config.identity()),
                                     encode_reply, options.snapshot_every, observer, legacy=legacy_replies)
    except BaseException:
        if endpoint is not None:
            endpoint.stop()
        raise
    if metrics is not None:
        metrics.watch(scheduler)
    log.info("replayed", extra={"fields": {"snapshot_seq": scheduler.restored_from, "commands": scheduler.replayed,
                                           "round": scheduler.engine.now,
                                           "s": round(time.perf_counter() - started, 3)}})
    warming = time.perf_counter()
    warm(config.platform, config.oracle)  # loads the kernels before any client's first quote
    log.info("warmed", extra={"fields": {"s": round(time.perf_counter() - warming, 3)}})
    predictions = Predictions(EngineConfig(cold_start=config.prediction_cold_start,
                                           conformal_gamma=config.prediction_conformal_gamma), options.round_seconds)
    with scheduler.reading() as engine:
        predictions.rebuild(scheduler.store, engine)
    predictions.start(scheduler.reading, scheduler.changed)
    service = SchedulerService(scheduler, Clock(options.clock, options.round_seconds), observer, watchers,
                               predictions)
    grpc_server, health_servicer = _grpc_server(service, options.max_workers, keepalive)
    try:
        port = _bind(grpc_server, options)
    except (StartupError, OSError):  # nothing served yet: release the log before refusing to start
        with contextlib.suppress(StoreError):  # the bind failure is the error to report
            scheduler.not_served()
        scheduler.close()
        if endpoint is not None:
            endpoint.stop()
        raise
    gc.collect()  # then freeze what start-up and replay built: the writer's full collections no longer traverse it
    gc.freeze()
    grpc_server.start()
    ticker = None
    if options.clock == "wall":
        ticker = WallClock(scheduler, options.round_seconds)
        ticker.start()
    log.info("serving", extra={"fields": {"listen": options.listen, "port": port, "clock": options.clock,
                                          "version": snapshot.server_version(), "code": snapshot.code_identity()[:12],
                                          "tls": options.tls_cert is not None, "store": options.store,
                                          "auth": config.auth_enabled,
                                          "metrics_port": None if endpoint is None else endpoint.port}})
    return RunningServer(grpc_server, port, scheduler, service, health_servicer, ticker, options.grace_seconds,
                         endpoint, observer, loopback)


def _check_options(config: ServerConfig, options: ServerOptions) -> bool:
    """Refuse options that cannot serve, before anything is opened; whether the server listens on loopback only."""
    loopback = options.listen.rsplit(":", 1)[0] in LOOPBACK
    if not config.auth_enabled and not loopback:
        raise StartupError(f"listen={options.listen!r}: without tokens in the configuration the server only "
                           "listens on loopback; add [operator] and [[tenants]] tokens")
    if options.clock == "wall" and not 0 < options.round_seconds <= MAX_ROUND_SECONDS:  # nan too
        raise StartupError(f"round_seconds={options.round_seconds} must be positive and at most "
                           f"{MAX_ROUND_SECONDS:g} with --clock wall")
    if options.snapshot_every < 0:
        raise StartupError(f"snapshot_every={options.snapshot_every} is below the bound 0 (0 turns snapshots off)")
    return loopback


def _grpc_server(service: SchedulerService, max_workers: int,
                 keepalive: list[tuple[str, int]]) -> tuple[grpc.Server, health.HealthServicer]:
    """The scheduler service with standard health checking and server reflection, not yet bound."""
    grpc_server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="sowsched-rpc"),
                              options=[("grpc.so_reuseport", 0), *keepalive])  # a port in use is refused
    pb_grpc.add_SchedulerServicer_to_server(service, grpc_server)
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, grpc_server)
    for name in ("", SERVICE_NAME):
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    reflection.enable_server_reflection((SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), grpc_server)
    return grpc_server, health_servicer


def _max_watchers(options: ServerOptions) -> int:
    """Each open event stream holds a worker thread, so streams may take only some of them: unary calls keep the
    rest."""
    if options.max_workers < 2:
        raise StartupError(f"max_workers={options.max_workers} is below the bound 2 (event streams and unary calls "
                           "need a thread each)")
    watchers = options.max_workers // 2 if options.max_watchers is None else options.max_watchers
    if not 1 <= watchers < options.max_workers:
        raise StartupError(f"max_watchers={watchers} is outside [1, {options.max_workers - 1}]: each open event "
                           f"stream holds one of the max_workers={options.max_workers} threads and unary calls "
                           "need at least one")
    return watchers


def _keepalive_options(options: ServerOptions) -> list[tuple[str, int]]:
    """Accept clients' keepalive pings every `min_ping_interval` seconds, with or without calls in flight; gRPC's
    defaults (5 min, and 2 h without calls) answer faster pings with GOAWAY "too_many_pings" after two strikes.

    And ping clients after `keepalive_time` seconds of quiet, closing the connection when the ack takes longer than
    `keepalive_timeout`: a watcher whose client vanished (no FIN, no RST) otherwise holds its stream slot and worker
    thread for gRPC's default 2 hours. gRPC 1.85 bounds the ack's wait by grpc.http2.ping_timeout_ms, so it is set too.
    """
    for name in ("min_ping_interval", "keepalive_time", "keepalive_timeout"):
        value = getattr(options, name)
        if not 0.001 <= value <= 1e9:  # also refuses nan; gRPC counts whole milliseconds
            raise StartupError(f"{name}={value:g} is outside [0.001, 1e9] seconds")
    timeout_ms = round(options.keepalive_timeout * 1000)
    # GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS; gRPC ignores argument names it does not know
    return [("grpc.http2.min_ping_interval_without_data_ms", round(options.min_ping_interval * 1000)),
            ("grpc.keepalive_permit_without_calls", 1),
            ("grpc.keepalive_time_ms", round(options.keepalive_time * 1000)),
            ("grpc.keepalive_timeout_ms", timeout_ms), ("grpc.http2.ping_timeout_ms", timeout_ms),
            ("grpc.http2.max_pings_without_data", 0)]


def _server_metrics(options: ServerOptions) -> ServerMetrics | None:
    """This server's metrics registry, or None when metrics are off; refuses an unparsable --metrics-listen."""
    if options.metrics_listen is None:
        return None
    try:
        return ServerMetrics(*parse_address(options.metrics_listen))
    except ValueError as exc:
        raise StartupError(str(exc)) from None


def _serve_metrics(metrics: ServerMetrics, options: ServerOptions) -> MetricsEndpoint:
    """Start the /metrics endpoint (the scheduler's gauges join it once the log is replayed), or refuse to start."""
    try:
        return metrics.serve()
    except OSError as exc:
        raise StartupError(f"metrics_listen={options.metrics_listen!r}: cannot bind ({exc})") from None


def _bind(grpc_server: grpc.Server, options: ServerOptions) -> int:
    if (options.tls_cert is None) != (options.tls_key is None):
        raise StartupError("TLS needs both a certificate (--tls-cert) and a key (--tls-key)")
    creds = None
    if options.tls_cert is not None and options.tls_key is not None:
        creds = grpc.ssl_server_credentials([(options.tls_key.read_bytes(), options.tls_cert.read_bytes())])
    _, _, port_text = options.listen.rpartition(":")
    if port_text.isdigit() and int(port_text) > MAX_PORT:  # gRPC would bind a random port instead
        raise StartupError(f"listen={options.listen!r}: port {port_text} is above the bound {MAX_PORT}")
    try:
        if creds is not None:
            port = grpc_server.add_secure_port(options.listen, creds)
        else:
            port = grpc_server.add_insecure_port(options.listen)
    except RuntimeError:  # gRPC's "Failed to bind": a malformed address or a port in use
        port = 0
    if port == 0:
        tls = "" if creds is None else ", or the TLS certificate and key are not a matching PEM pair"
        raise StartupError(f"listen={options.listen!r}: cannot bind (the port is in use, the address is not "
                           f"HOST:PORT{tls})")
    return port


def serve_until_signalled(config: ServerConfig, options: ServerOptions, port_file: Path | None = None,
                          reload: Callable[[], ServerConfig] | None = None) -> int:
    """Run until SIGTERM or SIGINT, then shut down cleanly (the command in flight completes and is logged). With
    `reload` (it re-reads platform.toml), SIGHUP swaps in the configuration it returns (RunningServer.reload).

    Signals reach the loop through a wake-up pipe that the interpreter writes at C level (signal.set_wakeup_fd); the
    Python handlers only note the signal in a set. A handler that took a lock (threading.Event.set) could interrupt
    the main thread while it held that very lock, and the loop would never wake again."""
    readable, writable = os.pipe()
    os.set_blocking(writable, False)  # set_wakeup_fd's requirement: a burst of signals must never block the writer
    previous = signal.set_wakeup_fd(writable, warn_on_full_buffer=False)  # _Caught keeps what a full pipe drops
    try:
        return _serve(config, options, port_file, reload, readable)
    finally:
        signal.set_wakeup_fd(previous)
        os.close(readable)
        os.close(writable)


class _Caught:
    """Which signals the Python handlers saw since the loop last looked: a set changed by single C calls, which
    take no lock. The pipe's bytes wake the loop; this record keeps a signal whose byte a full pipe dropped."""

    def __init__(self) -> None:
        self._seen: set[int] = set()

    def handler(self, signum: int, frame: object) -> None:
        self._seen.add(signum)

    def take(self, wakeups: int) -> set[int]:
        """Block until a signal's number is in the pipe; the signals it and the handlers reported (each once)."""
        caught = set(os.read(wakeups, 512))  # several at once in a burst
        noted = set(self._seen)
        self._seen -= noted  # a signal noted in between stays for the next take
        return caught | noted


def _serve(config: ServerConfig, options: ServerOptions, port_file: Path | None,
           reload: Callable[[], ServerConfig] | None, wakeups: int) -> int:
    caught = _Caught()
    if reload is not None:  # before the replay: a SIGHUP during it is served after, not the default (terminate)
        signal.signal(signal.SIGHUP, caught.handler)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGHUP})  # held by the CLI until now (cli/main.py)
    running = start_server(config, options)
    if port_file is not None:
        tmp = port_file.with_suffix(port_file.suffix + ".tmp")
        tmp.write_text(str(running.port))
        tmp.replace(port_file)
    stops = {signal.SIGTERM, signal.SIGINT}
    for sig in stops:
        signal.signal(sig, caught.handler)
    while True:
        signals = caught.take(wakeups)
        if signals & stops:
            break
        if signal.SIGHUP in signals and reload is not None:  # one reload serves a burst of SIGHUPs
            running.reload(reload)
    log.info("signal received: shutting down", extra={"fields": {"grace_s": options.grace_seconds}})
    running.stop()
    return 0
