"""ReportCapacity: operator only, validated (nothing changes on a refusal), logged, and replayed to the same digest;
a remote simulation with a capacity series equals the in-process one."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from clients.client import RetryPolicy, RpcFailure
from clients.grpc_sim import run_remote_simulation
from mechanism.capacity import CapacityModel
from models.capacity_fit import with_capacity
from models.data import AZURE_CAPACITY
from models.simulation import Workload, run_simulation
from models.workloads import make_workload
from server.app import RunningServer, ServerOptions, start_server
from server.config import parse_config
from tests.grpc_support import ACME, CONFIG, OP, PLATFORM, client, sow

ONCE = RetryPolicy(attempts=1)
MODEL = CapacityModel(mean=8.0, phi=0.6, errors=(-2.0, 0.0, 1.0), weights=(0.2, 0.6, 0.2), high=10)


def start(store: Path, platform: dict[str, object] | None = None) -> RunningServer:
    cfg = parse_config({**CONFIG, "platform": platform or {**PLATFORM, "capacity": MODEL.model_dump(mode="json")}})
    return start_server(cfg, ServerOptions(store=str(store), listen="127.0.0.1:0"))


def test_capacity_reports_are_logged_and_replayed_to_the_identical_digest(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    srv = start(store)
    try:
        op, acme = client(srv), client(srv, ACME)
        assert op.report_capacity(0, 6).capacity == 6
        acme.submit("j1", sow(concurrency=4))
        acme.report_arrival("j1")
        op.advance()
        op.report_capacity(1, 3)  # a drop below the running job's 4 nodes: step 3 evicts it
        acme.submit("j2", sow(concurrency=2))
        op.advance()
        op.report_capacity(5, 9)  # a later round, pending in the state
        before = op.status()
    finally:
        srv.stop(0)
    again = start(store)
    try:
        assert again.scheduler.replayed == 8
        assert client(again).status() == before
    finally:
        again.stop(0)


def test_an_adaptive_level_is_rebuilt_by_replay_to_the_identical_digest(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    levelled = {**PLATFORM, "capacity": MODEL.model_copy(update={"level_weight": 0.5}).model_dump(mode="json")}
    srv = start(store, levelled)
    try:
        op, acme = client(srv), client(srv, ACME)
        acme.submit("j1", sow(concurrency=2))
        op.report_capacity(0, 4)
        op.advance()
        op.report_capacity(1, 3)
        acme.submit("j2", sow(concurrency=2))
        op.advance()
        level = srv.scheduler.engine.capacity_level
        before = op.status()
    finally:
        srv.stop(0)
    assert level == 0.5 * (0.5 * 8.0 + 0.5 * 4) + 0.5 * 3
    assert before.capacity_level == level  # GetPlatform shows the level this round's quotes use
    again = start(store, levelled)
    try:
        assert again.scheduler.replayed == 6
        assert again.scheduler.engine.capacity_level == level and client(again).status() == before
    finally:
        again.stop(0)


def test_a_model_with_a_fixed_mean_shows_no_level(tmp_path: Path) -> None:
    srv = start(tmp_path / "s.db")  # lam = 0
    try:
        assert client(srv).status().capacity_level is None
    finally:
        srv.stop(0)


@pytest.mark.parametrize(("round_", "capacity", "code", "match"), [
    (0, -1, "INVALID_ARGUMENT", r"capacity=-1 is outside \[0, 1000000\]"),
    (0, 2_000_000, "INVALID_ARGUMENT", "outside"),
    (0, 4, "FAILED_PRECONDITION", "round=0 has been played"),
    (1, 5, "FAILED_PRECONDITION", r"capacity of round 1 was already reported \(7 nodes\)"),
])
def test_bad_reports_are_refused_with_a_clear_status_and_change_nothing(
        tmp_path: Path, round_: int, capacity: int, code: str, match: str) -> None:
    srv = start(tmp_path / "s.db")
    try:
        op = client(srv, retry=ONCE)
        op.advance()
        op.report_capacity(1, 7)
        before = op.status()
        with pytest.raises(RpcFailure, match=match) as info:
            op.report_capacity(round_, capacity)
        assert info.value.code == code
        assert op.status() == before and srv.scheduler.log_seq == 2
    finally:
        srv.stop(0)


def test_only_the_operator_reports_capacity(tmp_path: Path) -> None:
    srv = start(tmp_path / "s.db")
    try:
        with pytest.raises(RpcFailure, match="ReportCapacity needs the operator token") as info:
            client(srv, ACME, retry=ONCE).report_capacity(0, 3)
        assert info.value.code == "PERMISSION_DENIED" and srv.scheduler.log_seq == 0
    finally:
        srv.stop(0)


def test_a_fixed_platform_server_takes_the_feed_too(tmp_path: Path) -> None:
    srv = start(tmp_path / "s.db", platform=PLATFORM)
    try:
        op = client(srv)
        op.report_capacity(0, 2)
        client(srv, ACME).submit("j1", sow(concurrency=4))
        client(srv, ACME).report_arrival("j1")
        events = op.advance().events
        assert [(e.type, e.data.get("reason")) for e in events if e.job == "j1"][-1] == ("cancel", "overload")
    finally:
        srv.stop(0)


def small(model: str) -> Workload:
    w = make_workload("overload", seed=2, rounds=6)
    w = replace(w, platform=w.platform.model_copy(update={"samples": 1500}))
    return with_capacity(w, f"{AZURE_CAPACITY / 'capacity_azure2019.csv'}:t7str", model, start=30)


@pytest.mark.parametrize("model", ["fixed", "forecast"])
def test_a_remote_simulation_with_a_capacity_series_equals_the_in_process_one(tmp_path: Path, model: str) -> None:
    w = small(model)
    cfg = parse_config({**CONFIG, "platform": w.platform.model_dump(mode="json"),
                        "tenants": [{"name": "acme", "token": ACME}]})
    srv = start_server(cfg, ServerOptions(store=str(tmp_path / "s.db"), listen="127.0.0.1:0"))
    try:
        remote = run_remote_simulation(w, client(srv, OP))
    finally:
        srv.stop(0)
    local = run_simulation(w)
    assert (remote.welfare, remote.revenue, dict(remote.counts)) == (local.welfare, local.revenue, dict(local.counts))
    assert [(e.round, e.type, e.job) for e in remote.events] == [(e.round, e.type, e.job) for e in local.events]
