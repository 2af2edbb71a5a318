"""Faults under `sowsched agent` (a process) with `sowsched serve` (a process) and a real executor: the agent killed
with SIGKILL between the launch and its state write (twice), the server killed and restarted under it, slurmctld
restarted while jobs run. Every payload appends its job id to a file: each started job ran exactly once."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clients.agent_state import LaunchRow
from clients.client import RpcFailure, SchedulerClient
from clients.executors import handle
from tests.clients.agent_support import OUTCOMES, make_executor
from tests.clients.executor_support import array_of, live_work, need_slurm, slurm_jobs, wait_until
from tests.grpc_support import OP, PATIENT, PLATFORM, ROOT, ServerProcess

pytestmark = pytest.mark.slow  # server and agent processes: about 10 s a test
EXEC = "executor-token-0001"
SLURM_DIR = Path(os.environ.get("SOWSCHED_SLURM_DIR", "/var/lib/sowsched-slurm"))


class Cluster:
    """A served store, an agent process and the operator's client."""

    def __init__(self, tmp: Path, kind: str, *serve_args: str, platform: dict[str, Any] | None = None) -> None:
        make_executor(kind, tmp)  # Slurm present (or skip / fail as the run requires)
        self.tmp, self.kind = tmp, kind
        self.server = ServerProcess(tmp, platform, *serve_args)
        with self.server.config.open("a") as f:
            f.write(f'\n[executor]\ntoken = "{EXEC}"\n')
        self.server.start()
        self.op = SchedulerClient(f"127.0.0.1:{self.server.port}", OP, retry=PATIENT)
        self.ran = tmp / "ran.txt"
        self.state = tmp / "agent.db"
        self.agent: subprocess.Popen[bytes] | None = None
        self.log = open(tmp / "agent.log", "ab")  # noqa: SIM115 (closed in close())

    def start_agent(self, crash_after: int = 0) -> None:
        env = {**os.environ, "SOWSCHED_TOKEN": EXEC}
        env.pop("SOWSCHED_AGENT_CRASH_AFTER_LAUNCH", None)
        if crash_after:
            env["SOWSCHED_AGENT_CRASH_AFTER_LAUNCH"] = str(crash_after)
        self.agent = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "agent", "--executor", self.kind, "--state", str(self.state),
             "--server", f"127.0.0.1:{self.server.port}", "--poll", "0.1", "--grace", "1"],
            cwd=ROOT, env=env, stdout=self.log, stderr=self.log)

    def submit(self, job_id: str, script: str, **fields: Any) -> None:
        """A job whose payload appends its id to `ran`, then runs `script`; reported arrived unless it has `after`."""
        sow = {"concurrency": 1, "value_steps": [[8, 40.0]], "outcomes": OUTCOMES, "signal_mode": "none",
               "command": ["sh", "-c", f'echo "$SOWSCHED_JOB_ID" >> {self.ran}; {script}'], **fields}
        self.op.submit(job_id, sow, tenant="acme")
        if "after" not in fields:
            self.op.report_arrival(job_id, tenant="acme")

    def rows(self) -> dict[str, tuple[str, int]]:
        if not self.state.exists():
            return {}
        with sqlite3.connect(self.state) as db:
            return {r[0]: (r[1], r[2]) for r in db.execute("SELECT job_id, status, reported FROM launches")}

    def cursor(self) -> int:
        if not self.state.exists():
            return 0
        with sqlite3.connect(self.state) as db:
            row = db.execute("SELECT next_seq FROM cursor").fetchone()
        return int(row[0]) if row else 0

    def settle(self) -> None:
        """Wait until the agent has handled every event and every launched job's work is over and reported (or the
        agent has died)."""
        events = self.op.status().events
        dead = lambda: self.agent is not None and self.agent.poll() is not None  # noqa: E731
        wait_until(lambda: dead() or self.cursor() >= events, what="the agent reads every event")
        wait_until(lambda: dead() or all(s == "ended" and r == 1 for s, r in self.rows().values()),
                   what="work reported")

    def handle(self, job_id: str) -> str:
        """The agent's name for an acme job in the workload manager (its state file's instance in it)."""
        with sqlite3.connect(self.state) as db:
            instance = db.execute("SELECT value FROM meta WHERE key = 'instance'").fetchone()[0]
        return handle("acme", job_id, instance)

    def row(self, job_id: str) -> LaunchRow | None:
        """The agent's row for an acme job, if it wrote one."""
        with sqlite3.connect(self.state) as db:
            row = db.execute("SELECT * FROM launches WHERE job_id = ? AND tenant = 'acme'", (job_id,)).fetchone()
        return LaunchRow.of(row) if row else None

    def live_work(self, job_id: str) -> list[str]:
        return live_work(self.kind, self.handle(job_id), array_of(self.row(job_id)))

    def slurm_jobs(self, job_id: str) -> dict[str, str]:
        """The Slurm jobs (array elements) that ran or run the job's payload, each sbatch that made one."""
        return slurm_jobs(self.handle(job_id), array_of(self.row(job_id)))

    def runs(self) -> list[str]:
        return sorted(self.ran.read_text().split()) if self.ran.exists() else []

    def states(self, jobs: list[str]) -> list[str]:
        return [self.op.get_job(j, tenant="acme").view.state for j in jobs]

    def cold_replay(self) -> dict[str, Any]:
        """A full replay of the store, beside the running server: its digest, round and event count."""
        out = subprocess.run([sys.executable, "-m", "cli.main", "state-digest", "--store", f"sqlite:///{self.server.store}",
                              "--config", str(self.server.config), "--full-replay", "--json"],
                             cwd=ROOT, capture_output=True, text=True, check=True).stdout
        return dict(json.loads(out))

    def cold_replay_digest(self) -> str:
        return str(self.cold_replay()["digest"])

    def cold_replay_and_live_digests(self) -> tuple[str, str]:
        """Under the wall clock every tick moves the state: the live state is read, the server is stopped (SIGSTOP:
        no tick while the store is replayed, however long that takes), and the replay is paired with it when no tick
        fell between the read and the stop (same round and event count; else read again)."""
        assert self.server.proc is not None
        for _ in range(10):
            live = self.op.status()
            self.server.proc.send_signal(signal.SIGSTOP)
            try:
                cold = self.cold_replay()
            finally:
                self.server.proc.send_signal(signal.SIGCONT)
            if (cold["round"], cold["events"]) == (live.now, live.events):
                return str(cold["digest"]), live.state_digest
        raise AssertionError("a tick fell between the live read and the stop ten times")

    def close(self) -> None:
        if self.agent is not None and self.agent.poll() is None:
            self.agent.send_signal(signal.SIGTERM)
            try:
                self.agent.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.agent.kill()
        self.op.close()
        self.server.close()
        self.log.close()


@pytest.fixture(params=["local", "slurm"])
def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(tmp_path, request.param)
    try:
        yield c
    finally:
        c.close()


def play_until_done(c: Cluster, jobs: list[str], rounds: int = 12) -> None:
    for _ in range(rounds):
        if all(s not in ("SUBMITTED", "WAITING", "RUNNING") for s in c.states(jobs)):
            return
        c.op.advance()
        c.settle()


def test_agent_killed_between_launch_and_state_write_runs_nothing_twice(cluster: Cluster) -> None:
    jobs = ["a", "b", "c"]
    for j in jobs:
        cluster.submit(j, "sleep 0.5")
    cluster.start_agent(crash_after=1)
    cluster.op.advance()  # round 0: a starts; the agent launches it and dies before recording the launch
    assert cluster.agent is not None and cluster.agent.wait(timeout=60) == -signal.SIGKILL
    cluster.start_agent(crash_after=1)  # adopts a; the next launch kills it again
    for _ in range(6):
        cluster.op.advance()
        if cluster.agent.poll() is not None:
            break
        cluster.settle()
    assert cluster.agent.wait(timeout=60) == -signal.SIGKILL
    cluster.start_agent()
    cluster.settle()
    play_until_done(cluster, jobs)
    assert cluster.states(jobs) == ["COMPLETED"] * 3
    assert cluster.runs() == jobs  # each ran exactly once
    assert cluster.cold_replay_digest() == cluster.op.status().state_digest


@pytest.mark.parametrize("kind", ["local", "slurm"])
def test_agent_killed_after_a_rounds_launches_return_and_before_their_state_write_runs_nothing_twice(
        kind: str, tmp_path: Path) -> None:
    """Five jobs start in one round (each worth its value only if it finishes by its one duration). With Slurm they
    go out as one sbatch --array, and the agent SIGKILLs itself once it returns, before writing the launches; locally
    it dies after its first launch. Restarted, it finds the array by its key (locally each launch by its handle) and
    adopts what was launched: each payload runs once, and on Slurm one array made every element."""
    c = Cluster(tmp_path, kind, platform={"C": 1000, "C_m": 1, "D_m": 4, "S_m": 8, "H": 100.0, "samples": 500,
                                           "seed": 1})
    try:
        jobs = [f"r{i}" for i in range(5)]
        for j in jobs:
            c.submit(j, "sleep 0.5", value_steps=[[2, 50.0]], outcomes=[[0, 2, 1.0]])
        c.start_agent(crash_after=1)
        assert len([e for e in c.op.advance().events if e.type == "start"]) == 5  # round 0
        assert c.agent is not None and c.agent.wait(timeout=60) == -signal.SIGKILL
        assert {s for s, _r in c.rows().values()} == {"launching"}  # launched, not recorded
        c.start_agent()
        c.settle()
        play_until_done(c, jobs)
        assert c.states(jobs) == ["COMPLETED"] * 5
        assert c.runs() == jobs  # each ran exactly once
        if kind == "slurm":  # each job's element made by one sbatch (however the round's starts were split)
            assert all(len(c.slurm_jobs(j)) == 1 for j in jobs)
    finally:
        c.close()


def test_server_killed_under_the_agent_loses_no_event(cluster: Cluster) -> None:
    jobs = ["a", "b", "c", "d"]
    for j in jobs[:2]:
        cluster.submit(j, "sleep 0.5")
    cluster.start_agent()
    cluster.op.advance()
    cluster.server.kill()
    cluster.server.start()  # the same port and store: the agent reconnects and resumes from its cursor
    for j in jobs[2:]:
        cluster.submit(j, "sleep 0.5")
    play_until_done(cluster, jobs)
    assert cluster.states(jobs) == ["COMPLETED"] * 4
    assert cluster.runs() == jobs
    assert cluster.cursor() == cluster.op.status().events
    assert cluster.cold_replay_digest() == cluster.op.status().state_digest


def test_slurmctld_restarted_while_jobs_run(tmp_path: Path) -> None:
    need_slurm()
    c = Cluster(tmp_path, "slurm")
    try:
        jobs = ["a", "b"]
        for j in jobs:
            c.submit(j, "sleep 2")
        c.start_agent()
        c.op.advance()
        wait_until(lambda: len(c.runs()) >= 1, what="a payload runs")
        pid = int((SLURM_DIR / "slurmctld.pid").read_text())
        os.kill(pid, signal.SIGTERM)  # a restart (a SIGKILLed controller loses the state of its last seconds)
        wait_until(lambda: not Path(f"/proc/{pid}").exists(), what="slurmctld gone")
        subprocess.run(["bash", str(ROOT / "scripts" / "slurm-up")], check=True, capture_output=True)
        play_until_done(c, jobs)
        assert c.states(jobs) == ["COMPLETED"] * 2
        assert c.runs() == jobs
    finally:
        c.close()


@pytest.mark.parametrize("kind", ["local", "slurm"])
def test_wall_clock_releases_a_child_in_the_round_after_its_parent_completes(kind: str, tmp_path: Path) -> None:
    """`serve --clock wall --round-seconds 2` and the agent: nobody advances rounds by hand. The parent's completion,
    reported by the agent in the round its payload ended, is applied at that round's end (finish = that round + 1);
    the server releases the child then, and its payload runs once."""
    # 2-second rounds and a child that may arrive up to S_m - 1 = 7 rounds after its birth: on a loaded machine (the
    # agent's poll, sbatch) a late completion report must not become an overrun or an arrival outside the support;
    # the parent may arrive at 0 or 1, as a tick can fall between its submission and its arrival report (it had
    # expired so in two of seven runs on the loaded machine)
    c = Cluster(tmp_path, kind, "--clock", "wall", "--round-seconds", "2")
    try:
        c.start_agent()
        c.submit("parent", "sleep 0.2", outcomes=[[a, d, p / 2] for a in (0, 1) for d, p in ((1, 0.25), (2, 0.5),
                                                                                             (3, 0.25))])
        c.submit("child", "true", outcomes=[[a, 3, 1 / 7] for a in range(1, 8)], after=["parent"])
        jobs = ["parent", "child"]
        wait_until(lambda: all(s not in ("SUBMITTED", "WAITING", "RUNNING") for s in c.states(jobs)), seconds=60,
                   what="both jobs end")
        assert c.states(jobs) == ["COMPLETED"] * 2
        parent, child = (c.op.get_job(j, tenant="acme").view for j in jobs)
        assert parent.finish is not None and child.arrival == parent.finish
        assert child.start is not None and child.start >= child.arrival
        assert c.runs() == ["child", "parent"]  # each ran once (sorted)
    finally:
        c.close()


def report_capacity_now(c: Cluster, capacity: int) -> None:
    """Report the current round's capacity under the wall clock (a tick between reading the round and the report
    makes it a played round: the next one is reported then)."""
    while True:
        try:
            c.op.report_capacity(c.op.status().now, capacity)
            return
        except RpcFailure as exc:
            if exc.code != "FAILED_PRECONDITION":
                raise


@pytest.mark.parametrize("kind", ["local", "slurm"])
def test_through_agent_and_server_kills_and_a_capacity_drop_each_start_runs_once_and_unevicted_ones_complete(
        kind: str, tmp_path: Path) -> None:
    """The walkthrough of docs/executors.md, under `serve --clock wall --round-seconds 2` with nobody advancing
    rounds: jobs with payloads, two pipelines (a child `after` its parent); the agent SIGKILLed twice (once between a
    launch and its state write, once just after a capacity drop), the server SIGKILLed once while payloads run, each
    restarted; a capacity drop to 0 that evicts the running work. Then every job with a start and no eviction ran
    exactly once and is COMPLETED and charged, every evicted job's work is gone, no job ran twice, nothing unstarted
    ran, a child started only after its parent completed, and a cold replay of the store gives the live digest.
    Supports are wide (arrival at 0 or 1, durations 1-4 rounds; a child arrives 1-12 rounds after its birth, with
    S_m = 16) so that a slow restart makes a late or evicted job, not a failed test."""
    c = Cluster(tmp_path, kind, "--clock", "wall", "--round-seconds", "2", platform={**PLATFORM, "S_m": 16})
    tag = uuid.uuid4().hex[:6]  # fresh job ids: the Slurm test bed keeps finished jobs (and their handles) an hour
    jobs: list[str] = []

    def submit(name: str, script: str, after: str | None = None) -> str:
        job = f"{tag}-{name}"
        if after is None:
            c.submit(job, script, value_steps=[[4, 40.0], [8, 20.0]],
                     outcomes=[[a, d, 1 / 8] for a in (0, 1) for d in (1, 2, 3, 4)])
        else:
            c.submit(job, script, value_steps=[[8, 40.0], [16, 20.0]], outcomes=[[a, 2, 1 / 12] for a in range(1, 13)],
                     after=[f"{tag}-{after}"])
        jobs.append(job)
        return job

    def over(names: list[str]) -> bool:
        return all(s not in ("SUBMITTED", "WAITING", "RUNNING") for s in c.states(names))

    try:
        # the agent SIGKILLs itself after its second launch, before recording it; restarted, it adopts or launches
        c.start_agent(crash_after=2)
        for name in ("a1", "a2", "p1"):
            submit(name, "sleep 0.5")
        submit("c1", "true", after="p1")
        assert c.agent is not None and c.agent.wait(timeout=60) == -signal.SIGKILL
        c.start_agent()
        # the server SIGKILLed while payloads run, and restarted on the same store and port
        b1 = submit("b1", "sleep 3")
        submit("p2", "sleep 1")
        submit("c2", "sleep 0.5", after="p2")
        wait_until(lambda: b1 in c.runs(), what="b1's payload runs")
        c.server.kill()
        c.server.start()
        wait_until(lambda: over(jobs), seconds=90, what="the first jobs end")
        # a capacity drop to 0 evicts the running work; the agent is SIGKILLed at once and restarted
        hangs = [submit(name, "sleep 300") for name in ("h1", "h2")]
        wait_until(lambda: set(hangs) & set(c.runs()), what="a hanging payload runs")
        report_capacity_now(c, 0)
        c.agent.kill()
        c.agent.wait()
        c.start_agent()
        wait_until(lambda: over(jobs), seconds=90, what="every job ends")
        c.settle()

        views = {j: c.op.get_job(j, tenant="acme").view for j in jobs}
        events = [te.event for te in c.op.watch_tenants(0, follow=False)]
        started = {e.job for e in events if e.type == "start"}
        evicted = {e.job: e.data.get("reason") for e in events if e.type == "evict"}
        runs = c.runs()
        assert len(runs) == len(set(runs)), runs  # no job ran twice
        for j, v in views.items():
            if j not in started:
                assert j not in runs, j  # nothing unstarted ran
            elif j not in evicted:
                assert (j, v.state, runs.count(j)) == (j, "COMPLETED", 1) and v.charge > 0, v
        wait_until(lambda: not any(c.live_work(j) for j in evicted), what="evicted work gone")
        started_hangs = [h for h in hangs if h in started]
        assert started_hangs and {evicted.get(h) for h in started_hangs} == {"overload"}  # by the capacity drop
        if kind == "slurm":  # one Slurm job per payload that ran, at most one for the others: nothing sbatched twice
            submitted = {j: len(c.slurm_jobs(j)) for j in views}
            assert all(n == 1 if j in runs else n <= 1 for j, n in submitted.items()), submitted
        for child, parent in ((f"{tag}-c1", f"{tag}-p1"), (f"{tag}-c2", f"{tag}-p2")):
            if child in started:
                assert views[parent].state == "COMPLETED" and views[child].arrival == views[parent].finish
        cold, live = c.cold_replay_and_live_digests()
        assert cold == live
    finally:
        c.close()
