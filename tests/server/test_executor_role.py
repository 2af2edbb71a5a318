"""The executor role ([executor] in platform.toml): what its token may do and may not, launches and completions
recorded with executor info, and repeated executor reports answered with no second effect."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from clients.client import RpcFailure, SchedulerClient
from mechanism.executor import ExecutorInfo
from server.app import RunningServer, ServerOptions, start_server
from server.config import ConfigError, parse_config
from server.snapshots import SNAPSHOT_EVERY
from tests.grpc_support import ACME, CONFIG, GLOBEX, OP, client, sow

EXEC = "executor-token-0001"
RUNS_NOW = sow(concurrency=1, outcomes=[[0, 2, 1.0]])  # arrives at birth, runs 2 rounds
SLURM = ExecutorInfo("slurm", "4242")


@pytest.fixture(params=["memory", "archive"])
def srv(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[RunningServer]:
    options = ServerOptions(store=str(tmp_path / "s.db"), listen="127.0.0.1:0",
                            snapshot_every=1 if request.param == "archive" else SNAPSHOT_EVERY)
    s = start_server(parse_config({**CONFIG, "executor": {"token": EXEC}}), options)
    try:
        yield s
    finally:
        s.stop(0)


def _running(srv: RunningServer) -> tuple[SchedulerClient, SchedulerClient, SchedulerClient]:
    """acme's job j1 running in round 1 (started in round 0); the operator's, acme's and the executor's clients."""
    op, acme, ex = client(srv, OP), client(srv, ACME), client(srv, EXEC)
    acme.submit("j1", RUNS_NOW)
    ex.report_arrival("j1", tenant="acme")
    op.advance()
    return op, acme, ex


def test_the_executor_reads_every_tenants_jobs_and_events(srv: RunningServer) -> None:
    client(srv, ACME).submit("a", RUNS_NOW)
    client(srv, GLOBEX).submit("g", RUNS_NOW)
    ex = client(srv, EXEC)
    assert {(j.tenant, j.view.id) for j in ex.list_jobs()} == {("acme", "a"), ("globex", "g")}
    assert ex.get_job("g", tenant="globex").view.state == "SUBMITTED"
    assert [e.job for e in ex.watch(follow=False)] == ["a", "g"]


@pytest.mark.parametrize("call, match", [
    (lambda c: c.submit("x", RUNS_NOW, tenant="acme"), "SubmitSoW is not for the executor"),
    (lambda c: c.submit("x", RUNS_NOW), "SubmitSoW is not for the executor"),
    (lambda c: c.advance(), "AdvanceRound needs the operator token"),
    (lambda c: c.report_capacity(0, 4), "ReportCapacity needs the operator token"),
    (lambda c: c.invoice("acme"), "GetInvoice is not for the executor"),
    (lambda c: c.invoice(), "GetInvoice is not for the executor"),
])
def test_the_executor_may_not_submit_advance_report_capacity_or_read_invoices(
        srv: RunningServer, call: Callable[[SchedulerClient], object], match: str) -> None:
    with pytest.raises(RpcFailure, match=f"^PERMISSION_DENIED: {match}"):
        call(client(srv, EXEC))


def test_a_tenant_may_not_report_launches(srv: RunningServer) -> None:
    _running(srv)
    with pytest.raises(RpcFailure, match=r"^PERMISSION_DENIED: ReportLaunch needs the executor or the operator"):
        client(srv, ACME).report_launch("j1", SLURM)


def test_a_launch_is_recorded_in_the_job_view_and_later_events(srv: RunningServer) -> None:
    op, acme, ex = _running(srv)
    assert acme.get_job("j1").view.executor is None
    seen = ex.report_launch("j1", SLURM, tenant="acme")
    assert seen.view.executor == SLURM and seen.view.state == "RUNNING"
    assert acme.get_job("j1").view.executor == SLURM
    ex.report_completion("j1", tenant="acme", executor=ExecutorInfo("slurm", "4242", 0))
    op.advance()
    done = acme.get_job("j1").view
    assert done.state == "COMPLETED" and done.executor == ExecutorInfo("slurm", "4242", 0)
    complete = [e for e in ex.watch(follow=False) if e.type == "complete"]
    assert complete[0].data["executor"] == {"kind": "slurm", "external_id": "4242", "exit_code": 0}


def test_a_repeated_launch_with_the_same_work_answers_ok_and_logs_nothing(srv: RunningServer) -> None:
    _, _, ex = _running(srv)
    ex.report_launch("j1", SLURM, tenant="acme")
    before = srv.scheduler.log_seq
    assert ex.report_launch("j1", SLURM, tenant="acme").view.executor == SLURM  # a new request id: a restarted agent
    assert srv.scheduler.log_seq == before


def test_a_second_launch_of_other_work_is_refused(srv: RunningServer) -> None:
    _, _, ex = _running(srv)
    ex.report_launch("j1", SLURM, tenant="acme")
    with pytest.raises(RpcFailure, match=r"^FAILED_PRECONDITION: .*launched as slurm '4242'; a second launch"):
        ex.report_launch("j1", ExecutorInfo("slurm", "4243"), tenant="acme")


def test_a_launch_of_a_job_not_running_is_refused(srv: RunningServer) -> None:
    client(srv, ACME).submit("j1", RUNS_NOW)
    with pytest.raises(RpcFailure, match=r"^FAILED_PRECONDITION: .*SUBMITTED: only a RUNNING job's launch"):
        client(srv, EXEC).report_launch("j1", SLURM, tenant="acme")




@pytest.mark.parametrize("kind, external_id, match", [
    ("pbs", "1", r"executor.kind='pbs' is not one of local, slurm"),
    ("local", "", r"executor.external_id='' must have 1 to 128 printable characters"),
    ("local", "x" * 129, r"must have 1 to 128 printable characters"),
    ("local", "a\nb", r"must have 1 to 128 printable characters"),
])
def test_bad_executor_info_is_refused_naming_the_field(srv: RunningServer, kind: str, external_id: str,
                                                       match: str) -> None:
    from server.gen.sowsched.v1 import scheduler_pb2 as pb
    _, _, ex = _running(srv)
    req = pb.ReportLaunchRequest(request_id="r1", job_id="j1", tenant="acme",
                                 executor=pb.ExecutorInfo(kind=kind, external_id=external_id))
    with pytest.raises(RpcFailure, match=f"^INVALID_ARGUMENT: .*{match}"):
        ex._call(ex.stub.ReportLaunch, req)


def test_a_launch_with_an_exit_code_is_refused(srv: RunningServer) -> None:
    _, _, ex = _running(srv)
    with pytest.raises(RpcFailure, match=r"^INVALID_ARGUMENT: executor.exit_code=1 is for completions"):
        ex.report_launch("j1", ExecutorInfo("local", "77", 1), tenant="acme")


def test_a_repeated_completion_with_the_same_executor_info_answers_ok_once_charged(srv: RunningServer) -> None:
    op, _, ex = _running(srv)
    info = ExecutorInfo("local", "77", 0)
    ex.report_completion("j1", tenant="acme", executor=info)
    before = srv.scheduler.log_seq
    assert ex.report_completion("j1", tenant="acme", executor=info).view.state == "RUNNING"  # pending: same answer
    assert srv.scheduler.log_seq == before
    op.advance()
    again = ex.report_completion("j1", tenant="acme", executor=info)  # after the round: completed, answered as is
    assert again.view.state == "COMPLETED"
    assert len(op.invoice("acme").lines) == 1
    assert [e.type for e in op.watch(follow=False)].count("complete") == 1


def test_a_completion_with_other_executor_info_is_refused(srv: RunningServer) -> None:
    _, _, ex = _running(srv)
    ex.report_launch("j1", SLURM, tenant="acme")
    with pytest.raises(RpcFailure, match=r"^FAILED_PRECONDITION: .*a completion of slurm '9' is not its work"):
        ex.report_completion("j1", tenant="acme", executor=ExecutorInfo("slurm", "9", 0))
    ex.report_completion("j1", tenant="acme", executor=ExecutorInfo("slurm", "4242", 3))
    with pytest.raises(RpcFailure, match=r"^FAILED_PRECONDITION: .*already reported its completion"):
        ex.report_completion("j1", tenant="acme", executor=ExecutorInfo("slurm", "4242", 4))


def test_executor_info_shows_to_the_operator_and_the_job_stays_hidden_from_other_tenants(srv: RunningServer) -> None:
    op, _, ex = _running(srv)
    ex.report_launch("j1", SLURM, tenant="acme")
    assert op.get_job("j1", tenant="acme").view.executor == SLURM
    with pytest.raises(RpcFailure, match=r"^NOT_FOUND"):
        client(srv, GLOBEX).get_job("j1")
    assert json.loads(json.dumps(SLURM.to_dict())) == {"kind": "slurm", "external_id": "4242"}


@pytest.mark.parametrize("data, match", [
    ({"executor": {"token": "short"}}, r"executor.token"),
    ({"executor": {"token": OP}}, r"executor \('executor'\) reuses the token of 'operator'"),
])
def test_the_executor_section_is_validated(data: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        parse_config({**CONFIG, **data})


def test_an_executor_without_an_operator_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"\[executor\] is configured but \[operator\] is missing"):
        parse_config({"platform": CONFIG["platform"], "executor": {"token": EXEC}})


def test_the_executor_token_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOWSCHED_EXECUTOR_TOKEN", EXEC)
    cfg = parse_config({**CONFIG, "executor": {"token_env": "SOWSCHED_EXECUTOR_TOKEN"}})
    found = cfg.caller(EXEC)
    assert found is not None and found.is_executor and not found.is_operator


def test_the_name_executor_is_reserved_for_the_role() -> None:
    with pytest.raises(ConfigError, match=r"name.*'executor' is reserved for the executor"):
        parse_config({**CONFIG, "tenants": [{"name": "executor", "token": ACME}]})
