"""A real server, a real executor and an agent in a thread, driven round by round (simulated clock)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from clients.agent import Agent, AgentOptions, Payload, PayloadSource, server_payloads
from clients.agent_state import AgentState, LaunchRow
from clients.client import TenantEvent
from clients.executors import Executor, LocalExecutor, SlurmExecutor
from server.app import RunningServer, ServerOptions, start_server
from server.config import parse_config
from tests.clients.executor_support import need_slurm, wait_until
from tests.grpc_support import CONFIG, PATIENT, PLATFORM, client, running

OUTCOMES = [[0, 2, 0.5], [0, 3, 0.5]]  # arrives at once, runs 2 or 3 rounds


def make_executor(kind: str, tmp: Path) -> Executor:
    if kind == "slurm":
        need_slurm()
        return SlurmExecutor(tmp / "slurm-out")
    return LocalExecutor(tmp / "local-run")


class Bed:
    """Jobs of tenant acme submitted by the operator, each with a payload that appends its id to `ran`."""

    def __init__(self, port: int, executor: Executor, tmp: Path, from_server: bool = False, **options: Any) -> None:
        self.port = port
        self.from_server = from_server  # payloads the events lack fetched with GetJob (clients.agent.server_payloads)
        self.op = client(port)
        self.tmp = tmp
        self.ran = tmp / "ran.txt"
        self.commands: dict[str, tuple[str, ...]] = {}
        self.state_path = tmp / "agent.db"
        self.executor = executor
        self.options = AgentOptions(**{"poll": 0.1, "grace": 1.0, **options})
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None
        self.agent: Agent | None = None
        self.fetched: list[str] = []  # jobs whose payload the agent asked its payload source for (not the event)

    def payload(self, tenant: str, job_id: str) -> Payload:
        return Payload(self.commands.get(job_id, ()), 1, 3)

    def start_agent(self, first: list[TenantEvent] | None = None) -> None:
        """Start the agent in a thread; with `first`, it handles those events as one batch before it runs (as it
        handles a round's events when they reach it together: no timing decides how they are split)."""
        self.stop = threading.Event()
        state = AgentState(self.state_path, self.executor.kind)
        agent_client = client(self.port, retry=PATIENT)
        source: PayloadSource = (server_payloads(agent_client, PLATFORM["D_m"]) if self.from_server
                                 else self.payload)

        def counted(tenant: str, job_id: str) -> Payload:
            self.fetched.append(job_id)
            return source(tenant, job_id)
        self.agent = Agent(agent_client, self.executor, state, counted, self.options)
        if first:
            self.agent.handle_events(first)
        self.thread = threading.Thread(target=self.agent.run, args=(self.stop,), daemon=True)
        self.thread.start()

    def stop_agent(self) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(timeout=30)
        if self.agent is not None:
            self.agent.client.close()
            self.agent.state.close()

    def submit(self, job_id: str, script: str, concurrency: int = 1, value: float = 40.0, **fields: Any) -> None:
        """A job whose payload appends its id to `ran`, then runs `script` (sh); `fields` replace the SoW's."""
        self.commands[job_id] = ("sh", "-c", f'echo "$SOWSCHED_JOB_ID" >> {self.ran}; {script}')
        sow = {"concurrency": concurrency, "value_steps": [[6, value]], "outcomes": OUTCOMES, "signal_mode": "none",
               "command": list(self.commands[job_id]), **fields}
        self.op.submit(job_id, sow, tenant="acme")
        self.op.report_arrival(job_id, tenant="acme")

    def state(self, job_id: str) -> str:
        return self.op.get_job(job_id, tenant="acme").view.state

    def runs(self) -> list[str]:
        return self.ran.read_text().split() if self.ran.exists() else []

    def launch(self, job_id: str) -> LaunchRow:
        """The agent's row for the job (read from its state file)."""
        with sqlite3.connect(self.state_path) as db:
            row = db.execute("SELECT * FROM launches WHERE job_id = ?", (job_id,)).fetchone()
        assert row is not None, f"no launch of {job_id}"
        return LaunchRow.of(row)

    def recorded(self, job_id: str) -> LaunchRow:
        """The job's row once its launch is recorded (a payload can run before the agent writes its launch)."""
        wait_until(lambda: self.launch(job_id).status != "launching", what=f"{job_id}'s launch recorded")
        return self.launch(job_id)

    def rows(self) -> dict[str, tuple[str, int]]:
        """job id -> (status, reported) in the agent's state file."""
        with sqlite3.connect(self.state_path) as db:
            return {r[0]: (r[1], r[2]) for r in db.execute("SELECT job_id, status, reported FROM launches")}

    def wait_reported(self, job_id: str) -> None:
        wait_until(lambda: self.rows().get(job_id, ("", 0))[1] == 1 and self.rows()[job_id][0] == "ended",
                   what=f"{job_id}'s completion reported")

    def play(self, rounds: int) -> list[str]:
        """Advance `rounds` rounds; after each, wait until the work of each job it started is over and reported
        (payloads here end quickly). The jobs started, in order."""
        started: list[str] = []
        for _ in range(rounds):
            for e in self.op.advance().events:
                if e.type == "start":
                    started.append(e.job)
                    self.wait_reported(e.job)
        return started

    def wait_ended(self, job_id: str) -> None:
        wait_until(lambda: self.rows().get(job_id, ("", 0))[0] == "ended", what=f"{job_id}'s work over")


@contextmanager
def served(store: Path, platform: dict[str, Any] | None) -> Iterator[RunningServer]:
    """tests.grpc_support's server, on `platform` if given."""
    if platform is None:
        with running(store) as srv:
            yield srv
        return
    srv = start_server(parse_config({**CONFIG, "platform": platform}), ServerOptions(store=str(store),
                                                                                     listen="127.0.0.1:0"))
    try:
        yield srv
    finally:
        srv.stop(0)


@contextmanager
def bed(kind: str, tmp: Path, from_server: bool = False, platform: dict[str, Any] | None = None,
        **options: Any) -> Iterator[Bed]:
    executor = make_executor(kind, tmp)
    with served(tmp / "log.db", platform) as srv:
        b = Bed(srv.port, executor, tmp, from_server, **options)
        b.start_agent()
        try:
            yield b
        finally:
            b.stop_agent()
            b.op.close()
