"""Payloads and parents over gRPC: shown to the job's tenant, the operator and the executor, to no other tenant;
bad ones refused with INVALID_ARGUMENT naming the field, the value and the bound."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clients.client import RpcFailure
from mechanism.executor import ExecutorInfo
from server.app import RunningServer, ServerOptions, start_server
from server.config import parse_config
from server.limits import MAX_JOB_ID
from tests.grpc_support import ACME, CONFIG, GLOBEX, OP, client, sow

EXEC = "executor-token-0001"
PAYLOAD: dict[str, Any] = {"command": ["sleep", "2"], "env": {"RUN": "7"}}


@pytest.fixture()
def srv(tmp_path: Path) -> Iterator[RunningServer]:
    s = start_server(parse_config({**CONFIG, "executor": {"token": EXEC}}),
                     ServerOptions(store=str(tmp_path / "s.db"), listen="127.0.0.1:0"))
    try:
        yield s
    finally:
        s.stop(0)


def test_the_payload_is_shown_to_the_tenant_the_operator_and_the_executor_only(srv: RunningServer) -> None:
    client(srv, ACME).submit("j", {**sow(), **PAYLOAD})
    for token, tenant in ((ACME, ""), (OP, "acme"), (EXEC, "acme")):
        view = client(srv, token).get_job("j", tenant=tenant).view
        assert view.command == ("sleep", "2") and view.env == (("RUN", "7"),)
    globex = client(srv, GLOBEX)
    with pytest.raises(RpcFailure, match=r"^NOT_FOUND: job 'globex/j' not found"):
        globex.get_job("j")
    with pytest.raises(RpcFailure, match=r"^PERMISSION_DENIED: tenant 'globex' cannot read the jobs of tenant 'acme'"):
        globex.get_job("j", tenant="acme")
    assert list(globex.list_jobs()) == [] and list(globex.watch(follow=False)) == []
    assert [j.view.command for j in client(srv, EXEC).list_jobs()] == [("sleep", "2")]


def test_a_child_shows_its_parents_and_waits_for_them(srv: RunningServer) -> None:
    acme = client(srv, ACME)
    acme.submit("p", sow(signal_mode="none", outcomes=[[0, 1, 1.0]]))
    acme.submit("c", {**sow(signal_mode="none", outcomes=[[1, 1, 0.5], [2, 1, 0.5]]), "after": ["p"]})
    assert acme.get_job("c").view.after == ("p",)
    with pytest.raises(RpcFailure, match=r"^FAILED_PRECONDITION: .*waits for its parents \(after\)"):
        acme.report_arrival("c")


@pytest.mark.parametrize("extra, match", [
    ({"after": ["p"], "signal_mode": "explicit"}, r"signal_mode='explicit' with after"),
    ({"after": ["c"]}, r"after\[0\]='c' names the job itself \(a cycle\)"),
    ({"after": ["nope"]}, r"after\[0\]='nope' is not a job of the same tenant"),
    ({"after": ["x" * (MAX_JOB_ID + 1)]}, rf"after\[0\] has {MAX_JOB_ID + 1} characters, above the bound {MAX_JOB_ID}"),
    ({"env": {"SOWSCHED_NODES": "1"}}, r"env name 'SOWSCHED_NODES' is reserved"),
    ({"command": [""]}, r"command\[0\]='' is empty"),
])
def test_bad_payloads_and_parents_are_invalid_arguments(srv: RunningServer, extra: dict[str, Any],
                                                        match: str) -> None:
    data = {**sow(signal_mode="none"), **extra}
    with pytest.raises(RpcFailure, match=rf"^INVALID_ARGUMENT: .*{match}"):
        client(srv, ACME).submit("c", data)


def test_a_parent_of_another_tenant_is_refused_as_unknown(srv: RunningServer) -> None:
    client(srv, GLOBEX).submit("p", sow())
    with pytest.raises(RpcFailure, match=r"^INVALID_ARGUMENT: after\[0\]='p' is not a job of the same tenant"):
        client(srv, ACME).submit("c", {**sow(signal_mode="none"), "after": ["p"]})


def test_a_pipeline_run_by_the_executor_replays_cold_to_the_live_digest(tmp_path: Path) -> None:
    config = parse_config({**CONFIG, "executor": {"token": EXEC}})
    store = str(tmp_path / "p.db")
    srv = start_server(config, ServerOptions(store=store, listen="127.0.0.1:0", snapshot_every=2))
    try:
        op, acme, ex = client(srv, OP), client(srv, ACME), client(srv, EXEC)
        acme.submit("p", {**sow(signal_mode="none", outcomes=[[0, 1, 1.0]]), **PAYLOAD})
        acme.submit("c", {**sow(signal_mode="none", outcomes=[[a, 1, 0.25] for a in range(1, 5)]), "after": ["p"]})
        ex.report_arrival("p", tenant="acme")
        ex.report_completion("p", tenant="acme", executor=ExecutorInfo("local", "1", 0))
        op.advance()  # p arrives, starts and completes in round 0: the server releases c in round 1
        assert ex.get_job("c", tenant="acme").view.reported_arrival == 1
        op.advance()
        c = ex.get_job("c", tenant="acme").view
        assert c.arrival == 1 and c.start is not None
        live = op.status().state_digest
    finally:
        srv.stop(0)
    cold = start_server(config, ServerOptions(store=store, listen="127.0.0.1:0", snapshot_every=0))
    try:
        assert client(cold, OP).status().state_digest == live
    finally:
        cold.stop(0)


def test_get_job_gives_a_running_job_its_longest_declared_duration_for_its_observed_arrival(
        srv: RunningServer) -> None:
    """The executor's time limit: the longest duration of the arrived group (3 here), not D_m (4) nor another
    group's (4); absent while the job does not run."""
    from server.gen.sowsched.v1 import scheduler_pb2 as pb

    acme = client(srv, ACME)
    acme.submit("j", {**sow(signal_mode="none", outcomes=[[0, 2, 0.4], [0, 3, 0.3], [1, 4, 0.3]]), **PAYLOAD})
    executor = client(srv, EXEC)

    def get() -> Any:
        return executor.stub.GetJob(pb.GetJobRequest(job_id="j", tenant="acme"), metadata=executor._metadata)

    assert not get().HasField("max_duration")  # submitted, not running
    acme.report_arrival("j")
    client(srv, OP).advance()
    msg = get()
    assert msg.state == "RUNNING" and msg.max_duration == 3
    acme.report_completion("j")
    client(srv, OP).advance()
    assert get().state == "COMPLETED" and not get().HasField("max_duration")


def start_events(c: Any) -> list[Any]:
    """The raw start events of a non-following stream from seq 0 (`c`'s view)."""
    from server.gen.sowsched.v1 import scheduler_pb2 as pb

    return [msg for msg in c.stub.WatchEvents(pb.WatchEventsRequest(from_seq=0, follow=False), metadata=c._metadata)
            if msg.type == "start"]


def test_a_start_event_carries_the_jobs_payload_the_same_after_it_ends_and_after_a_cold_restart(
        tmp_path: Path) -> None:
    """The executor needs no GetJob per start: the streamed start event carries the command, env, concurrency and
    the longest declared duration of the arrived group (3 here, not D_m's 4 nor the other group's 4). It is read from
    logged state: the same bytes while the job runs, after it completed and released its SoW, and from a server
    replayed cold from its log, whose digest is the live one. Other events and the round's logged reply carry none."""
    from mechanism.views import Payload
    from server.gen.sowsched.v1 import scheduler_pb2 as pb

    config = parse_config({**CONFIG, "executor": {"token": EXEC}})
    store = str(tmp_path / "p.db")
    outcomes = [[0, 2, 0.4], [0, 3, 0.3], [1, 4, 0.3]]
    srv = start_server(config, ServerOptions(store=store, listen="127.0.0.1:0", snapshot_every=2))
    try:
        acme, ex = client(srv, ACME), client(srv, EXEC)
        acme.submit("j", {**sow(signal_mode="none", outcomes=outcomes), **PAYLOAD})
        acme.report_arrival("j")
        op = client(srv, OP)
        reply = op.stub.AdvanceRound(pb.AdvanceRoundRequest(request_id="r0"), metadata=op._metadata)
        assert [(e.type, e.HasField("payload")) for e in reply.events] == [("arrive", False), ("start", False)]
        running, = start_events(ex)
        assert running.payload.command == ["sleep", "2"] and dict(running.payload.env) == {"RUN": "7"}
        assert (running.payload.concurrency, running.payload.max_duration) == (2, 3)
        assert [(te.event.type, te.payload) for te in ex.watch_tenants(0, follow=False)] == [
            ("quote", None), ("arrive", None), ("start", Payload(("sleep", "2"), 2, 3, {"RUN": "7"}))]
        assert start_events(acme) == [running]  # the job's tenant sees its own payload
        acme.report_completion("j")
        client(srv, OP).advance()
        assert acme.get_job("j").view.state == "COMPLETED"
        assert [m.SerializeToString() for m in start_events(ex)] == [running.SerializeToString()]
        live = client(srv, OP).status().state_digest
    finally:
        srv.stop(0)
    cold = start_server(config, ServerOptions(store=store, listen="127.0.0.1:0", snapshot_every=0))
    try:
        assert client(cold, OP).status().state_digest == live
        assert [m.SerializeToString() for m in start_events(client(cold, EXEC))] == [running.SerializeToString()]
    finally:
        cold.stop(0)
