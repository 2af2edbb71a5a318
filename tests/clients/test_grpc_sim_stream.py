"""The simulation client submits each round's SoWs on one SubmitSoWs stream, and a refused item comes back as the
engine's own exception."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from clients.client import SchedulerClient
from clients.grpc_sim import GrpcScheduler, run_remote_simulation
from mechanism.engine import DuplicateJob, EngineError
from mechanism.sow import SoW
from server.app import ServerOptions, start_server
from server.config import ServerConfig
from tests.clients.test_grpc_sim import quick
from tests.grpc_support import OP


def test_a_remote_simulation_streams_each_rounds_submissions(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    w = quick("overload", seed=1)
    cfg = ServerConfig(platform=w.platform, oracle="mc", tokens={OP: "operator"}, tenants=())
    srv = start_server(cfg, ServerOptions(store=str(tmp_path / "s.db"), listen="127.0.0.1:0"))
    try:
        with caplog.at_level(logging.INFO, logger="sowsched.rpc"), SchedulerClient(f"127.0.0.1:{srv.port}", OP) as op:
            run_remote_simulation(w, op)
    finally:
        srv.stop(0)
    methods = [getattr(r, "fields", {}).get("method") for r in caplog.records if r.name == "sowsched.rpc"]
    births = len({j.birth for j in w.jobs})
    assert "SubmitSoW" not in methods and methods.count("SubmitSoWs") >= 2 * births  # the call and its batches


def test_a_refused_streamed_submission_is_the_engines_exception(tmp_path: Path) -> None:
    w = quick("overload", seed=0)
    cfg = ServerConfig(platform=w.platform, oracle="mc", tokens={OP: "operator"}, tenants=())
    srv = start_server(cfg, ServerOptions(store=str(tmp_path / "s.db"), listen="127.0.0.1:0"))
    try:
        with SchedulerClient(f"127.0.0.1:{srv.port}", OP) as op:
            port = GrpcScheduler(op)
            one = w.jobs[0].sow
            assert len(port.submit_many([("a", one), ("b", one)])) == 2
            with pytest.raises(DuplicateJob, match="job id 'operator/a' already exists"):
                port.submit_many([("c", one), ("a", one)])
            with pytest.raises(EngineError, match="concurrency=99"):
                port.submit_many([("d", SoW.model_validate({**one.model_dump(), "concurrency": 99}))])
    finally:
        srv.stop(0)
