"""Shared set-up for the gRPC tests: a small platform, tokens, and servers on 127.0.0.1 port 0."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from clients.client import RetryPolicy, SchedulerClient
from mechanism.engine import Engine, Quote, RoundReport
from mechanism.events import Event
from mechanism.sow import Signal, SoW
from server import namespace
from server.app import RunningServer, ServerOptions, start_server
from server.config import OPERATOR, ServerConfig, parse_config

ROOT = Path(__file__).resolve().parent.parent
OP = "operator-token-0001"
ACME = "acme-token-000001"
GLOBEX = "globex-token-0001"
PLATFORM: dict[str, Any] = {"C": 8, "C_m": 4, "D_m": 4, "S_m": 8, "H": 50.0, "samples": 2000, "seed": 3}
CONFIG: dict[str, Any] = {"platform": PLATFORM, "operator": {"token": OP},
                          "tenants": [{"name": "acme", "token": ACME}, {"name": "globex", "token": GLOBEX}]}
PATIENT = RetryPolicy(attempts=60, backoff=0.05, max_backoff=0.5)


def config() -> ServerConfig:
    return parse_config(CONFIG)


def sow(concurrency: int = 2, value: float = 20.0, outcomes: list[list[Any]] | None = None,
        signal_mode: str = "explicit") -> dict[str, Any]:
    return {"concurrency": concurrency, "value_steps": [[6, value]],
            "outcomes": outcomes or [[0, 2, 0.5], [1, 3, 0.5]], "signal_mode": signal_mode}


@contextmanager
def running(store: Path, **options: Any) -> Iterator[RunningServer]:
    srv = start_server(config(), ServerOptions(store=str(store), listen="127.0.0.1:0", **options))
    try:
        yield srv
    finally:
        srv.stop(0)


def client(srv_or_port: RunningServer | int, token: str | None = OP, **kw: Any) -> SchedulerClient:
    port = srv_or_port if isinstance(srv_or_port, int) else srv_or_port.port
    return SchedulerClient(f"127.0.0.1:{port}", token, **kw)


class FailingCommit:
    """A store's sqlite3 connection whose COMMIT fails (a full or failing disk), everything else passed through."""

    def __init__(self, db: Any) -> None:
        self._db = db

    def execute(self, sql: str, *args: Any) -> Any:
        if sql == "COMMIT":
            raise sqlite3.OperationalError("disk I/O error")
        return self._db.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)


def toml_text(platform: dict[str, Any]) -> str:
    lines = ["[platform]", *(f"{k} = {v!r}" for k, v in platform.items() if v is not None), "",
             "[operator]", f'token = "{OP}"']
    for name, token in (("acme", ACME), ("globex", GLOBEX)):
        lines += ["", "[[tenants]]", f'name = "{name}"', f'token = "{token}"']
    return "\n".join(lines) + "\n"


class ServerProcess:
    """`sowsched serve` in a subprocess on a fixed port, to be killed and restarted."""

    def __init__(self, tmp: Path, platform: dict[str, Any] | None = None, *extra: str) -> None:
        self.tmp = tmp
        self.config = tmp / "platform.toml"
        self.config.write_text(toml_text(platform or PLATFORM))
        self.store = tmp / "log.db"
        self.port = 0
        self.extra = extra
        self.proc: subprocess.Popen[bytes] | None = None
        self.module = "cli.commands.server"  # or "cli.main", the `sowsched` entry point
        self.log = open(tmp / "server.log", "ab")  # noqa: SIM115 (closed in close())

    def start(self) -> int:
        port_file = self.tmp / "port"
        port_file.unlink(missing_ok=True)
        cmd = [sys.executable, "-m", self.module, "serve", "--listen", f"127.0.0.1:{self.port}",
               "--store", str(self.store), "--config", str(self.config), "--port-file", str(port_file),
               "--log-level", "warning", *self.extra]
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=self.log, stderr=self.log, env=dict(os.environ))
        deadline = time.monotonic() + 60
        while not port_file.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"server did not start: {(self.tmp / 'server.log').read_text()[-2000:]}")
            time.sleep(0.02)
        self.port = int(port_file.read_text())
        return self.port

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def terminate(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=60)

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.kill()
        self.log.close()


class Namespaced:
    """The in-process engine as a simulation port, holding every job under the key the server gives it
    ('<tenant>/<id>', server/namespace.py; tenant_of(id), or the operator's own), answering with plain ids: its
    digest is then the server's for the same commands."""

    def __init__(self, engine: Engine, tenant_of: Callable[[str], str] | None = None) -> None:
        self.engine, self.tenant_of = engine, tenant_of

    def key(self, job_id: str) -> str:
        return namespace.key(self.tenant_of(job_id) if self.tenant_of else OPERATOR, job_id)

    def submit(self, job_id: str, sow: SoW) -> Quote:
        return replace(self.engine.submit(self.key(job_id), sow), job=job_id)

    def report_arrival(self, job_id: str, signal: Signal) -> None:
        self.engine.report_arrival(self.key(job_id), signal)

    def report_completion(self, job_id: str) -> None:
        self.engine.report_completion(self.key(job_id))

    def advance(self) -> RoundReport:
        r = self.engine.advance()
        return replace(r, events=tuple(local_event(e) for e in r.events))


def local_event(e: Event) -> Event:
    """The event as a client sees it: the job's own id, without its tenant."""
    return replace(e, job=namespace.local(e.job))
