"""Dependencies, payloads and executor reports in the durable scheduler: the server logs a dependent job's arrival
itself (caller `server`), and a cold replay of the store, with or without snapshots, reaches the live digest."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism.engine import EngineError
from server import namespace
from server.config import EXECUTOR, OPERATOR, SERVER, ServerConfig
from server.errors import PermissionDenied, Refused
from server.scheduler import DurableScheduler
from server.service import encode_reply
from server.store import CommandStore
from tests.conftest import small_platform

PLATFORM = small_platform(C=6, S_m=10, samples=300)
CONFIG = ServerConfig(platform=PLATFORM, oracle="mc", tokens={"operator-token": OPERATOR, "acme-token": "acme",
                                                               "exec-token": EXECUTOR}, tenants=("acme",))


def open_scheduler(path: Path, every: int = 1000) -> DurableScheduler:
    return DurableScheduler(CONFIG, CommandStore(path, CONFIG.identity()), encode_reply, snapshot_every=every)


def sow(after: tuple[str, ...] = (), d: int = 1, **extra: Any) -> dict[str, Any]:
    return {"concurrency": 1, "value_steps": [[10, 40.0]], "signal_mode": "none", "after": list(after),
            "outcomes": [[a, d, 1.0 / 9] for a in range(9)], **extra}


def submit(s: DurableScheduler, job: str, **kw: Any) -> None:
    s.execute("acme", None, "submit", {"job_id": job, "tenant": "acme", "sow": sow(**kw)})


def logged(s: DurableScheduler) -> list[tuple[str, str, dict[str, Any]]]:
    return [(c.kind, c.caller, c.body) for c in s.store.commands(after=0)]


def test_the_server_logs_a_dependent_jobs_arrival_in_the_advance_that_completes_its_parent(tmp_path: Path) -> None:
    s = open_scheduler(tmp_path / "s.db")
    submit(s, "p")
    submit(s, "c", after=("p",))
    s.execute("acme", None, "arrive", {"job_id": "p", "tenant": "acme", "signal": None})
    while s.engine.jobs["acme/p"].state.value != "COMPLETED":
        if s.engine._start_if_running_now(s.engine.jobs["acme/p"]) is not None:
            s.execute(EXECUTOR, None, "complete", {"job_id": "p", "tenant": "acme",
                                                   "executor": {"kind": "local", "external_id": "9", "exit_code": 0}})
        s.execute(OPERATOR, None, "advance", {})
    kinds = logged(s)
    assert kinds[-2:] == [("advance", OPERATOR, {}), ("release", SERVER, {"job_id": "c", "tenant": "acme"})]
    assert s.engine.jobs["acme/c"].pending_arrival == (s.engine.now, None)
    digest = s.engine.digest()
    s.close()
    again = open_scheduler(tmp_path / "s.db")
    assert again.engine.digest() == digest and again.replayed == len(kinds)
    again.close()


def test_a_parent_of_another_tenant_is_unknown_and_a_release_cannot_be_sent(tmp_path: Path) -> None:
    s = open_scheduler(tmp_path / "s.db")
    s.execute(OPERATOR, None, "submit", {"job_id": "p", "tenant": OPERATOR, "sow": sow()})
    with pytest.raises(EngineError, match=r"after\[0\]='p' is not a job of the same tenant submitted before"):
        submit(s, "c", after=("p",))
    with pytest.raises(PermissionDenied, match="a dependent job's arrival is reported by the server itself"):
        s.execute(OPERATOR, None, "release", {"job_id": "p", "tenant": OPERATOR})
    with pytest.raises(PermissionDenied, match="the executor token may report arrivals, launches and completions"):
        s.execute(EXECUTOR, None, "submit", {"job_id": "x", "tenant": "acme", "sow": sow()})
    with pytest.raises(Refused, match="a release command names its job by 'tenant' and 'job_id'"):
        s.execute(SERVER, None, "release", {})
    s.close()


@st.composite
def scripts(draw: st.DrawFn) -> list[tuple[str, Any]]:
    """Submissions with random parents and payloads, arrivals, launches, completions (repeated too), rounds."""
    steps: list[tuple[str, Any]] = []
    for _ in range(draw(st.integers(3, 30))):
        steps.append((draw(st.sampled_from(["submit", "arrive", "launch", "complete", "advance"])),
                      draw(st.integers(0, 2**31))))
    return steps


@settings(max_examples=15, deadline=None)
@given(script=scripts(), every=st.sampled_from([0, 1, 3]))
def test_pipelines_with_payloads_and_executor_reports_replay_cold_to_the_live_digest(
        script: list[tuple[str, Any]], every: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.db"
        s = open_scheduler(path, every)
        names: list[str] = []
        for kind, draw in script:
            rng = np.random.default_rng(draw)
            try:
                if kind == "submit":
                    k = int(rng.integers(0, min(3, len(names)) + 1))
                    parents = tuple(rng.choice(names, size=k, replace=False)) if k else ()
                    name = f"j{len(names)}"
                    submit(s, name, after=tuple(map(str, parents)), d=int(rng.integers(1, 3)),
                           command=["sleep", str(draw % 7)], env={"SEED": str(draw)})
                    names.append(name)
                elif names:
                    job = str(rng.choice(names))
                    info = {"kind": "slurm", "external_id": str(draw % 3)}
                    if kind == "arrive":
                        s.execute(EXECUTOR, None, "arrive", {"job_id": job, "tenant": "acme", "signal": None})
                    elif kind == "launch":
                        s.execute(EXECUTOR, None, "launch", {"job_id": job, "tenant": "acme", "executor": info})
                    elif kind == "complete":
                        s.execute(EXECUTOR, None, "complete", {"job_id": job, "tenant": "acme",
                                                               "executor": {**info, "exit_code": 0}})
                if kind == "advance":
                    s.execute(OPERATOR, None, "advance", {})
            except (EngineError, Refused):
                continue
        digest, count = s.engine.digest(), s.store.count()
        views = {n: s.engine.view(namespace.key("acme", n)) for n in names}
        s.close()
        again = open_scheduler(path, 0)  # a cold replay of the whole log
        assert again.engine.digest() == digest and again.replayed == count
        assert {n: again.engine.view(namespace.key("acme", n)) for n in names} == views
        again.close()
        restored = open_scheduler(path, every or 1)  # from the newest snapshot, if any
        assert restored.engine.digest() == digest
        restored.close()
