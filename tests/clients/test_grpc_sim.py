"""The simulation over gRPC equals the in-process simulation for the same workload and seed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from clients.client import RetryPolicy, RpcFailure, SchedulerClient
from clients.grpc_sim import GrpcScheduler, RemoteSchedulerError, check_server, run_remote_simulation
from mechanism.engine import Engine, EngineError, InvalidReport, UnknownJob
from mechanism.sow import SoW
from models.simulation import Workload, drive, run_simulation
from models.workloads import make_workload
from server.app import RunningServer, ServerOptions, start_server
from server.config import ServerConfig
from tests.grpc_support import ACME, OP, Namespaced, sow


def quick(name: str, seed: int, rounds: int = 20) -> Workload:
    w = make_workload(name, seed=seed)
    platform = w.platform.model_copy(update={"samples": 2000})
    return Workload(name=w.name, platform=platform, jobs=tuple(j for j in w.jobs if j.birth < rounds))


def serve(workload: Workload, store: Path, **kw: object) -> RunningServer:
    tenants = ("acme", "globex")
    cfg = ServerConfig(platform=workload.platform, oracle="mc", tokens={OP: "operator"}, tenants=tenants)
    return start_server(cfg, ServerOptions(store=str(store), listen="127.0.0.1:0", **kw))  # type: ignore[arg-type]


@pytest.fixture()
def overload(tmp_path: Path) -> Iterator[tuple[Workload, SchedulerClient]]:
    w = quick("overload", seed=2)
    srv = serve(w, tmp_path / "s.db")
    try:
        yield w, SchedulerClient(f"127.0.0.1:{srv.port}", OP)
    finally:
        srv.stop(0)


@pytest.mark.parametrize(("name", "seed"), [("toy", 0), ("overload", 1), ("pipelines", 3)])
def test_grpc_simulation_equals_the_in_process_one(tmp_path: Path, name: str, seed: int) -> None:
    w = quick(name, seed)
    srv = serve(w, tmp_path / "s.db")
    try:
        with SchedulerClient(f"127.0.0.1:{srv.port}", OP) as op:
            remote = run_remote_simulation(w, op)
            engine = Engine(w.platform)
            local = drive(w, engine)
            assert remote.summary() == local.summary()
            assert remote.events == local.events
            assert remote.quotes == local.quotes
            assert list(op.watch(follow=False)) == engine.events
            keyed = Engine(w.platform)  # the server keys the operator's jobs "operator/<id>" (server/namespace.py)
            drive(w, Namespaced(keyed))
            assert op.status().state_digest == keyed.digest()
    finally:
        srv.stop(0)


def test_per_tenant_invoices_add_up_to_the_revenue(overload: tuple[Workload, SchedulerClient]) -> None:
    w, op = overload
    result = run_remote_simulation(w, op, tenant_of=lambda j: ("acme", "globex")[int(j.split("-")[1]) % 2])
    invoices = [op.invoice(t) for t in ("acme", "globex")]
    assert all(i.lines for i in invoices)
    assert sum(i.total for i in invoices) == pytest.approx(result.revenue)
    assert result.revenue == pytest.approx(run_simulation(w).revenue)


def test_refused_reports_come_back_as_the_engines_exceptions(overload: tuple[Workload, SchedulerClient]) -> None:
    _, op = overload
    port = GrpcScheduler(op)
    with pytest.raises(UnknownJob, match="'operator/ghost' not found"):
        port.report_arrival("ghost", None)
    port.submit("j", SoW.parse(sow(), op.status().platform))
    with pytest.raises(InvalidReport, match="does not run in round 0"):
        port.report_completion("j")
    with pytest.raises(EngineError, match="outside its declared support"):
        port.report_arrival("j", "late")


def test_transport_failures_are_not_mistaken_for_refusals(tmp_path: Path) -> None:
    dead = SchedulerClient("127.0.0.1:1", OP, retry=RetryPolicy(attempts=1))
    with pytest.raises(RpcFailure, match=r"^UNAVAILABLE"):
        GrpcScheduler(dead).report_arrival("j", None)


def test_a_simulation_needs_a_fresh_server_with_the_workloads_platform_and_oracle(
        overload: tuple[Workload, SchedulerClient]) -> None:
    w, op = overload
    other = quick("toy", 0)
    with pytest.raises(RemoteSchedulerError, match=r"platform .* differs from the workload's"):
        check_server(op, other, "mc")
    with pytest.raises(RemoteSchedulerError, match="oracle='mc', the simulation asks for 'exact'"):
        check_server(op, w, "exact")
    op.advance()
    with pytest.raises(RemoteSchedulerError, match="at round 1 with 0 events; a simulation needs a fresh store"):
        check_server(op, w, "mc")


def test_a_simulation_needs_the_simulated_clock(tmp_path: Path) -> None:
    w = quick("toy", 0)
    srv = serve(w, tmp_path / "w.db", clock="wall", round_seconds=3600.0)
    try:
        with pytest.raises(RemoteSchedulerError, match="clock is 'wall'"):
            check_server(SchedulerClient(f"127.0.0.1:{srv.port}", OP), w, "mc")
    finally:
        srv.stop(0)


def test_sowsched_simulate_with_server_prints_the_in_process_numbers(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cli.main import main

    w = make_workload("toy", seed=4)
    srv = serve(w, tmp_path / "s.db")
    try:
        target = f"127.0.0.1:{srv.port}"
        assert main(["simulate", "--workload", "toy", "--seed", "4", "--json"]) == 0
        local = capsys.readouterr().out
        assert main(["simulate", "--workload", "toy", "--seed", "4", "--json", "--server", target, "--token", OP]) == 0
        assert capsys.readouterr().out == local
        assert main(["simulate", "--workload", "toy", "--seed", "4", "--server", target, "--token", OP]) == 1
        assert "a simulation needs a fresh store" in capsys.readouterr().err
    finally:
        srv.stop(0)


def test_a_tenant_token_is_refused_before_anything_is_submitted(tmp_path: Path) -> None:
    w = quick("toy", 0)
    cfg = ServerConfig(platform=w.platform, oracle="mc", tokens={OP: "operator", ACME: "acme"}, tenants=("acme",))
    srv = start_server(cfg, ServerOptions(store=str(tmp_path / "s.db"), listen="127.0.0.1:0"))
    try:
        with SchedulerClient(f"127.0.0.1:{srv.port}", ACME) as acme, \
                pytest.raises(RemoteSchedulerError, match="a simulation needs the operator token"):
            run_remote_simulation(w, acme)
        with SchedulerClient(f"127.0.0.1:{srv.port}", OP) as op:
            assert op.status().events == 0
    finally:
        srv.stop(0)
