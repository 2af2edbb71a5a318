"""Every RPC of sowsched.v1.Scheduler against a real server on 127.0.0.1 port 0, with every refusal's status code."""

from __future__ import annotations

import dataclasses
import logging
import subprocess
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import grpc
import numpy as np
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from clients.client import RetryPolicy, RpcFailure, SchedulerClient
from mechanism.engine import Engine
from mechanism.platform import Platform
from mechanism.pricing import unit_price
from mechanism.sow import SoW
from server.app import RunningServer, ServerOptions, StartupError, start_server
from server.config import ServerConfig
from server.errors import bounded as _bounded
from tests.grpc_support import ACME, GLOBEX, OP, PLATFORM, FailingCommit, client, config, running, sow


@pytest.fixture(params=["memory", "archive"])
def srv(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[RunningServer]:
    """Every test runs twice: with the history in memory, and with a snapshot after every command, so that every
    ended job, event and charge is read back from the store's archive."""
    with running(tmp_path / "s.db", **({"snapshot_every": 1} if request.param == "archive" else {})) as s:
        yield s


@pytest.fixture()
def op(srv: RunningServer) -> SchedulerClient:
    return client(srv, OP)


@pytest.fixture()
def acme(srv: RunningServer) -> SchedulerClient:
    return client(srv, ACME)


@pytest.fixture()
def globex(srv: RunningServer) -> SchedulerClient:
    return client(srv, GLOBEX)


def refused(code: str, match: str) -> AbstractContextManager[pytest.ExceptionInfo[RpcFailure]]:
    return pytest.raises(RpcFailure, match=f"^{code}: .*{match}")


# ---- SubmitSoW ----

def test_submit_returns_the_quote_the_engine_computes(acme: SchedulerClient) -> None:
    quote = acme.submit("j1", sow())
    engine = Engine(Platform(**PLATFORM))
    assert quote == engine.submit("j1", SoW.parse(sow(), engine.platform))
    assert [g.start for g in quote.plan.groups] == [0, 1]
    assert all(o.price is not None and o.failure_raw is not None for o in quote.plan.outcomes)


def test_submit_quote_marks_never_groups_without_start(acme: SchedulerClient) -> None:
    # Value 1 cannot pay a two-node price above 1: every group is "never" and carries no price.
    quote = acme.submit("cheap", sow(value=1.0, outcomes=[[0, 4, 1.0]]))
    raw = acme.submit_raw("cheap2", sow(value=1.0, outcomes=[[0, 4, 1.0]]))
    assert quote.plan.groups[0].start is None and not raw.groups[0].HasField("start")
    assert not raw.outcomes[0].HasField("price")


@pytest.mark.parametrize(("body", "match"), [
    (sow(concurrency=5), r"concurrency=5 exceeds the bound C_m=4"),
    (sow(outcomes=[[0, 2, 0.5], [1, 3, 0.4]]), r"sum to 0.9"),
    (sow(outcomes=[[0, 9, 1.0]]), r"duration=9 exceeds the bound D_m=4"),
    (sow(value=60.0), r"v=60.0 exceeds the bound H=50.0"),
    ({**sow(), "value_steps": [[9, 20.0]]}, r"k=9 exceeds the bound S_m=8"),
    ({**sow(), "outcomes": []}, r"sow.outcomes.*at least 1"),
    (sow(signal_mode="sometimes"), r"sow.signal_mode.*'sometimes'"),
    (sow(outcomes=[[0, 0, 1.0]]), r"sow.outcomes\[0\].duration \(value 0\).*greater than or equal to 1"),
])
def test_submit_rejects_a_sow_outside_the_bounds_naming_field_value_and_bound(
        acme: SchedulerClient, op: SchedulerClient, body: dict, match: str) -> None:
    with refused("INVALID_ARGUMENT", match):
        acme.submit("bad", body)
    assert list(op.list_jobs()) == []


def test_submit_rejects_a_duplicate_job_id_within_a_tenant(acme: SchedulerClient, op: SchedulerClient) -> None:
    acme.submit("j1", sow())
    with refused("ALREADY_EXISTS", "'acme/j1' already exists"):
        acme.submit("j1", sow())
    with refused("ALREADY_EXISTS", "'acme/j1' already exists"):
        op.submit("j1", sow(), tenant="acme")


def test_job_ids_are_per_tenant_so_another_tenant_can_neither_take_nor_see_them(
        acme: SchedulerClient, globex: SchedulerClient, op: SchedulerClient) -> None:
    # globex cannot squat acme's id, and learns nothing about it: its own "j1" is a new job
    acme.submit("j1", sow(outcomes=[[0, 1, 1.0]]))
    assert globex.submit("j1", sow(outcomes=[[0, 2, 1.0]], concurrency=3)).job == "j1"
    op.submit("j1", sow())  # the operator's own namespace
    acme.report_arrival("j1")
    assert (acme.get_job("j1").view.reported_arrival, globex.get_job("j1").view.reported_arrival) == (0, None)
    assert globex.get_job("j1").view.concurrency == 3 and op.get_job("j1").tenant == "operator"
    assert [(j.tenant, j.view.id) for j in op.list_jobs()] == [("acme", "j1"), ("globex", "j1"), ("operator", "j1")]
    assert op.get_job("j1", tenant="globex").view.concurrency == 3
    op.report_arrival("j1", tenant="globex")  # the operator names whose job it means
    assert globex.get_job("j1").view.reported_arrival == 0 and op.get_job("j1").view.reported_arrival is None
    assert [(j.tenant, j.view.id, j.view.concurrency) for j in acme.list_jobs()] == [("acme", "j1", 2)]


@pytest.mark.parametrize(("job_id", "match"), [("", "1 to 128 characters"), ("x" * 129, "1 to 128 characters"),
                                               ("x\ny", "not printable at position 1")])
def test_submit_reports_and_reads_reject_a_bad_job_id(acme: SchedulerClient, op: SchedulerClient, job_id: str,
                                                      match: str) -> None:
    with refused("INVALID_ARGUMENT", match):
        acme.submit(job_id, sow())
    for call in (lambda: acme.report_arrival(job_id), lambda: acme.report_completion(job_id),
                 lambda: acme.get_job(job_id), lambda: op.get_job(job_id, tenant="acme")):
        with refused("INVALID_ARGUMENT", match):
            call()


def test_refusals_of_huge_inputs_keep_their_status_code_and_name_the_bound(acme: SchedulerClient) -> None:
    # the message echoed the whole value; past gRPC's 16 KiB metadata limit the client got RESOURCE_EXHAUSTED
    # ("received metadata size exceeds hard limit") instead of the refusal
    with refused("INVALID_ARGUMENT", r"job id 'zzz.* characters left out\) \.\.\. z+' must have 1 to 128 characters$"):
        acme.submit("z" * 100_000, sow())
    with pytest.raises(RpcFailure, match=r"^INVALID_ARGUMENT: sow.outcomes\[1\].probability \(value -1.0\).{1,600}$"):
        acme.submit("j1", sow(outcomes=[[0, 1, 0.5], *([[0, 2, -1.0]] * 5000)]))
    with refused(
        "INVALID_ARGUMENT", r"job id 'ééé.* characters left out\) \.\.\. \u00e9+' must have 1 to 128 characters$"
    ):
        acme.get_job("é" * 100_000)
    with refused("INVALID_ARGUMENT", "is not a token this server returned$"):
        acme.list_jobs_page(page_token="7" * 100_000)


def test_submit_rejects_a_request_id_above_128_characters_and_takes_one_of_128(acme: SchedulerClient) -> None:
    with refused("INVALID_ARGUMENT", "request_id has 129 characters, above the bound 128"):
        acme.submit("j1", sow(), request_id="r" * 129)
    quote = acme.submit("j1", sow(), request_id="r" * 128)  # at the bound: accepted, and a retry gets its reply
    assert acme.submit("j1", sow(), request_id="r" * 128) == quote


def test_a_retry_with_the_same_request_id_returns_the_same_quote_and_creates_nothing(
        acme: SchedulerClient, op: SchedulerClient) -> None:
    first = acme.submit("j1", sow(), request_id="req-1")
    events = op.status().events
    acme.submit("j2", sow(value=30.0))  # moves prices: a recomputed quote for j1 would differ
    assert acme.submit("j1", sow(), request_id="req-1") == first
    assert [s.view.id for s in op.list_jobs()] == ["j1", "j2"]
    assert op.status().events == events + 1


def test_the_same_request_id_with_a_different_body_is_rejected(acme: SchedulerClient) -> None:
    acme.submit("j1", sow(), request_id="req-1")
    with refused("INVALID_ARGUMENT", "request_id='req-1' was already used for a different submit"):
        acme.submit("j1", sow(value=30.0), request_id="req-1")
    with refused("INVALID_ARGUMENT", "already used"):
        acme.submit("j9", sow(), request_id="req-1")


def test_a_refused_command_leaves_its_request_id_free(acme: SchedulerClient, globex: SchedulerClient,
                                                     op: SchedulerClient) -> None:
    acme.submit("taken", sow())
    for refuse in (lambda: acme.submit("bad", sow(concurrency=99), request_id="r"),  # INVALID_ARGUMENT
                   lambda: acme.submit("taken", sow(), request_id="r"),  # ALREADY_EXISTS
                   lambda: acme.report_arrival("nope", request_id="r"),  # NOT_FOUND
                   lambda: acme.advance(request_id="r")):  # PERMISSION_DENIED
        with pytest.raises(RpcFailure):
            refuse()
    with refused("NOT_FOUND", "'globex/taken' not found"):
        globex.report_arrival("taken", request_id="r")
    quote = acme.submit("j1", sow(), request_id="r")  # nothing was logged under "r": the id is still free
    assert acme.submit("j1", sow(), request_id="r") == quote
    assert [s.view.id for s in op.list_jobs()] == ["taken", "j1"]


def test_request_ids_are_per_caller(acme: SchedulerClient, globex: SchedulerClient) -> None:
    acme.submit("a1", sow(), request_id="same")
    assert globex.submit("g1", sow(), request_id="same").job == "g1"


def test_a_tenant_cannot_submit_for_another_tenant(acme: SchedulerClient) -> None:
    with refused("PERMISSION_DENIED", "'acme' cannot submit for tenant 'globex'"):
        acme.submit("j1", sow(), tenant="globex")


def test_the_operator_submits_for_a_configured_tenant_only(op: SchedulerClient, acme: SchedulerClient) -> None:
    op.submit("j1", sow(), tenant="acme")
    assert acme.get_job("j1").tenant == "acme"
    with refused("INVALID_ARGUMENT", "tenant='nobody' is not configured"):
        op.submit("j2", sow(), tenant="nobody")


@pytest.mark.parametrize("token", [None, "wrong-token-123"])
def test_calls_without_a_known_bearer_token_are_unauthenticated(srv: RunningServer, token: str | None) -> None:
    with refused("UNAUTHENTICATED", "bearer token"):
        client(srv, token).submit("j1", sow())
    with refused("UNAUTHENTICATED", "bearer token"):
        client(srv, token).status()


def test_a_malformed_authorization_header_is_unauthenticated(srv: RunningServer) -> None:
    stub = client(srv, None).stub
    with pytest.raises(grpc.RpcError) as info:
        stub.Echo(__import__("server.gen.sowsched.v1.scheduler_pb2", fromlist=["x"]).EchoRequest(),
                  metadata=(("authorization", f"Basic {OP}"),))
    assert info.value.code() is grpc.StatusCode.UNAUTHENTICATED


def test_the_operator_naming_its_own_namespace_is_the_same_as_naming_none(op: SchedulerClient) -> None:
    assert op.submit_tenant("o1", sow(), tenant="operator")[1] == "operator"
    assert op.get_job("o1").view.id == "o1" and op.get_job("o1", tenant="operator").tenant == "operator"
    with refused("ALREADY_EXISTS", "'operator/o1' already exists"):
        op.submit("o1", sow())


def test_the_exact_oracle_refuses_a_submission_it_cannot_enumerate_and_changes_nothing(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # 32 outcomes per job: quoting the fourth job would enumerate 32^3 = 32768 > 20000 combinations.
    wide = sow(outcomes=[[a, d, 1 / 32] for a in range(8) for d in range(1, 5)])
    exact = ServerConfig(**{**config().__dict__, "oracle": "exact"})
    s = start_server(exact, ServerOptions(store=str(tmp_path / "e.db"), listen="127.0.0.1:0"))
    try:
        acme = client(s, ACME)
        for i in range(3):
            acme.submit(f"w{i}", wide)
        before = client(s, OP).status()
        with caplog.at_level(logging.INFO, logger="sowsched.rpc"), \
                refused("RESOURCE_EXHAUSTED", "exact failure oracle"):
            acme.submit("w3", wide)
        assert client(s, OP).status() == before
        lines = [getattr(r, "fields", {}) for r in caplog.records if r.name == "sowsched.rpc"]
        assert [f["code"] for f in lines if f["method"] == "SubmitSoW"][
            -1
        ] == "RESOURCE_EXHAUSTED"  # the log line and the metrics' code label say what the caller got
    finally:
        s.stop(0)


# ---- ReportArrival / ReportCompletion / AdvanceRound: a job's whole life ----

def test_a_job_lives_submit_arrive_start_complete_and_is_billed_its_quoted_price(
        acme: SchedulerClient, op: SchedulerClient) -> None:
    quote = acme.submit("j1", sow())
    status = acme.report_arrival("j1")
    assert (status.view.state, status.view.reported_arrival, status.view.scheduled_start) == ("SUBMITTED", 0, 0)
    r0 = op.advance()
    assert [(e.type, e.job) for e in r0.events] == [("arrive", "j1"), ("start", "j1")]
    assert r0.running == 2
    assert acme.report_completion("j1").view.state == "RUNNING"
    r1 = op.advance()
    assert [(e.type, e.data["duration"]) for e in r1.events] == [("complete", 2)]
    job = acme.get_job("j1").view
    price = next(o.price for o in quote.plan.outcomes if (o.arrival, o.duration) == (0, 2))
    assert (job.state, job.finish, job.value) == ("COMPLETED", 2, 20.0)
    assert job.charge == pytest.approx(price)
    invoice = acme.invoice()
    assert invoice.total == pytest.approx(price)
    assert [(c.job, c.duration, c.quote) for c in invoice.lines] == [("j1", 2, quote)]


def test_the_charge_is_c_times_the_sum_of_unit_prices_at_birth(acme: SchedulerClient, op: SchedulerClient) -> None:
    # Hand check of eq. 7 on an empty platform: every round costs p(0) = 1/(2 D_m), so 2 nodes x 2 rounds = 0.5.
    acme.submit("j1", sow(outcomes=[[0, 2, 1.0]]))
    acme.report_arrival("j1")
    op.advance()
    acme.report_completion("j1")
    op.advance()
    assert acme.get_job("j1").view.charge == pytest.approx(2 * 2 / (2 * PLATFORM["D_m"]))


def test_an_arrival_outside_the_declared_support_is_refused_and_changes_nothing(
        acme: SchedulerClient, op: SchedulerClient) -> None:
    acme.submit("j1", sow())
    before = (acme.get_job("j1"), op.status())
    with refused("INVALID_ARGUMENT", "outside its declared support"):
        acme.report_arrival("j1", "fast")
    assert (acme.get_job("j1"), op.status()) == before


def test_reports_on_unknown_jobs_are_not_found(acme: SchedulerClient) -> None:
    with refused("NOT_FOUND", "'acme/nope' not found"):
        acme.report_arrival("nope")
    with refused("NOT_FOUND", "'acme/nope' not found"):
        acme.report_completion("nope")
    with refused("NOT_FOUND", "'acme/nope' not found"):
        acme.get_job("nope")


def test_another_tenants_job_is_not_found_exactly_like_one_that_never_existed_and_nothing_changes(
        acme: SchedulerClient, globex: SchedulerClient, op: SchedulerClient) -> None:
    acme.submit("j1", sow())
    before = op.status()
    for report in (lambda j: globex.report_arrival(j), lambda j: globex.report_completion(j),
                   lambda j: globex.get_job(j)):
        with refused("NOT_FOUND", "'globex/j1' not found") as taken:
            report("j1")
        with refused("NOT_FOUND", "'globex/j2' not found") as never:
            report("j2")
        assert (taken.value.code, taken.value.details.replace("j1", "j2")) == (never.value.code, never.value.details)
    assert op.status() == before


@pytest.mark.parametrize("call", ["report_arrival", "report_completion", "get_job"])
def test_a_tenant_naming_another_tenant_is_denied_and_the_operator_must_name_a_configured_one(
        acme: SchedulerClient, op: SchedulerClient, call: str) -> None:
    acme.submit("j1", sow())
    before = op.status()
    with refused("PERMISSION_DENIED", "tenant 'acme' cannot (report on|read) the jobs of tenant 'globex'"):
        getattr(acme, call)("j1", tenant="globex")
    with refused(
        "INVALID_ARGUMENT", r"tenant='nobody' is not configured and owns no jobs \(configured: acme, globex\)"
    ):
        getattr(op, call)("j1", tenant="nobody")
    with refused("NOT_FOUND", "'operator/j1' not found"):  # the operator's own namespace
        getattr(op, call)("j1")
    assert op.status() == before
    assert acme.get_job("j1", tenant="acme").tenant == "acme"  # naming itself is allowed


def test_a_second_arrival_with_another_signal_and_a_completion_of_a_job_not_running_are_failed_preconditions(
        acme: SchedulerClient) -> None:
    acme.submit("j1", sow(outcomes=[[0, 2, 0.5], [0, 3, 0.5]], signal_mode="duration"))
    with refused("FAILED_PRECONDITION", "does not run in round 0"):
        acme.report_completion("j1")
    acme.report_arrival("j1", "2")
    with refused("FAILED_PRECONDITION", "already reported its arrival"):
        acme.report_arrival("j1", "3")


def test_a_repeated_arrival_with_the_same_signal_answers_the_status_under_any_request_id_and_logs_nothing(
        srv: RunningServer, acme: SchedulerClient, op: SchedulerClient) -> None:
    acme.submit("j1", sow(outcomes=[[0, 1, 1.0]], signal_mode="none"))
    first = acme.report_arrival("j1", request_id="r1")
    before = srv.scheduler.log_seq
    assert acme.report_arrival("j1", request_id="r2") == first  # a retry after a lost reply: pending, same answer
    assert srv.scheduler.log_seq == before
    acme.report_completion("j1")
    op.advance()
    assert acme.report_arrival("j1", request_id="r3").view.state == "COMPLETED"  # after the round: answered as is
    assert [e.type for e in op.watch(follow=False)].count("arrive") == 1


def test_reports_on_finished_jobs_are_failed_preconditions(acme: SchedulerClient, op: SchedulerClient) -> None:
    acme.submit("j1", sow(outcomes=[[0, 1, 0.5], [0, 2, 0.5]], signal_mode="duration"))
    acme.report_arrival("j1", "1")
    acme.report_completion("j1")
    op.advance()
    assert acme.get_job("j1").view.state == "COMPLETED"
    with refused("FAILED_PRECONDITION", "is COMPLETED"):
        acme.report_arrival("j1", "2")  # another arrival than the one observed (the same is answered as is)
    with refused("FAILED_PRECONDITION", "is COMPLETED"):
        acme.report_completion("j1")


def test_an_archived_job_is_read_refused_and_guarded_like_a_held_one(
    srv: RunningServer, acme: SchedulerClient, globex: SchedulerClient, op: SchedulerClient
) -> None:
    acme.submit("j1", sow(outcomes=[[0, 1, 1.0]]))
    acme.report_arrival("j1")
    acme.report_completion("j1")
    op.advance()
    op.advance()  # one more command: a snapshot after it in "archive" mode
    archived = srv.scheduler.snapshot_every == 1
    assert ("acme/j1" not in srv.scheduler.engine.jobs) == archived  # ... and then only the archive has it
    assert (srv.scheduler.store.archive.job("acme/j1") is not None) == archived
    job = acme.get_job("j1")
    assert (job.view.state, job.tenant) == ("COMPLETED", "acme") and acme.invoice().lines[0].job == "j1"
    with refused("NOT_FOUND", "'globex/j1' not found"):
        globex.get_job("j1")
    with refused("NOT_FOUND", "'globex/j1' not found"):
        globex.report_completion("j1")
    with refused("ALREADY_EXISTS", "'acme/j1' already exists"):
        acme.submit("j1", sow())
    assert [j.view.id for j in op.list_jobs()] == ["j1"] and next(op.watch(follow=False)).job == "j1"


def test_a_report_retried_with_its_request_id_is_acknowledged_once(acme: SchedulerClient) -> None:
    acme.submit("j1", sow())
    first = acme.report_arrival("j1", request_id="arr-1")
    assert acme.report_arrival("j1", request_id="arr-1") == first
    assert acme.report_arrival("j1", request_id="arr-2") == first  # the same arrival under another id: answered


def test_advance_round_is_operator_only(acme: SchedulerClient, op: SchedulerClient) -> None:
    with refused("PERMISSION_DENIED", "operator token"):
        acme.advance()
    assert op.status().now == 0


def test_an_advance_retried_with_its_request_id_plays_one_round(op: SchedulerClient) -> None:
    first = op.advance(request_id="tick-0")
    assert op.advance(request_id="tick-0") == first
    assert op.status().now == 1


def test_advance_round_is_refused_under_the_wall_clock(tmp_path: Path) -> None:
    with running(tmp_path / "w.db", clock="wall", round_seconds=3600.0) as s, \
            refused("FAILED_PRECONDITION", "simulated clock"):
        client(s).advance()


def test_an_advance_retried_after_a_restart_under_the_wall_clock_gets_its_logged_reply(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    longest = "t" * 128  # the longest request id
    with running(tmp_path / "w.db") as s:
        first = client(s).advance(request_id="tick-0")
        second = client(s).advance(request_id=longest)
        client(s).submit("j1", sow(), request_id="submit-0")
    with running(tmp_path / "w.db", clock="wall", round_seconds=3600.0) as s:
        with caplog.at_level(logging.INFO, logger="sowsched.rpc"):
            assert client(s).advance(request_id="tick-0") == first  # answered from the log: no round played
        assert [getattr(r, "fields", {}).get("retry") for r in caplog.records if r.name == "sowsched.rpc"] == [True]
        assert client(s).advance(request_id=longest) == second
        with refused("FAILED_PRECONDITION", "simulated clock"):
            client(s).advance(request_id="tick-1")
        with refused("FAILED_PRECONDITION", "simulated clock"):  # a logged submit's id is not an advance's
            client(s).advance(request_id="submit-0")
        with refused("PERMISSION_DENIED", "operator token"):
            client(s, ACME).advance(request_id="tick-0")
        assert client(s).status().now == 2


def test_the_wall_clock_advances_rounds_by_itself_and_logs_them(tmp_path: Path) -> None:
    with running(tmp_path / "w.db", clock="wall", round_seconds=0.05) as s:
        c = client(s)
        deadline = 200
        while c.status().now < 3 and deadline:
            deadline -= 1
            __import__("time").sleep(0.02)
        assert c.status().clock == "wall" and c.status().now >= 3
    with running(tmp_path / "w.db") as again:
        assert client(again).status().now >= 3


# ---- reads ----

def test_list_jobs_pages_in_birth_order_and_filters_by_state(op: SchedulerClient, acme: SchedulerClient) -> None:
    for i in range(5):
        op.submit(f"j{i}", sow(), tenant="acme")
    page, token = op.list_jobs_page(page_size=2)
    assert [s.view.id for s in page] == ["j0", "j1"] and token
    page, token = op.list_jobs_page(page_size=2, page_token=token)
    assert [s.view.id for s in page] == ["j2", "j3"]
    assert [s.view.id for s in op.list_jobs(page_size=2)] == [f"j{i}" for i in range(5)]
    acme.report_arrival("j0")
    op.advance()
    assert [s.view.id for s in op.list_jobs(states=("RUNNING",))] == ["j0"]
    assert len(list(op.list_jobs(states=("SUBMITTED", "RUNNING")))) == 5


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"page_size": -1}, r"page_size=-1 is outside \[0, 1000\]"),
        ({"page_size": 1001}, r"page_size=1001 is outside \[0, 1000\]"),
        ({"page_token": "abc"}, "page_token='abc' is not a token this server returned"),
        (
            {"page_token": "\u00b2"},
            "page_token='\u00b2' is not a token this server returned",
        ),  # isdigit, not int: was INTERNAL
        ({"page_token": "\u0661"}, "page_token='\u0661' is not a token this server returned"),  # Arabic-Indic 1
        (
            {"page_token": "9" * 5000},
            "page_token='9999.* is not a token this server returned",
        ),  # int() refuses: was INTERNAL
        (
            {"page_token": "1" + "0" * 19},
            "page_token='1.* is not a token this server returned",
        ),  # 20 digits: above 2^63
        ({"states": ("DONE",)}, r"states=\['DONE'\] are not job states \(SUBMITTED, WAITING"),
        ({"tenant": "nobody"}, "tenant='nobody' is not configured"),
    ],
)
def test_list_jobs_rejects_bad_paging(op: SchedulerClient, kw: dict, match: str) -> None:
    with refused("INVALID_ARGUMENT", match):
        op.list_jobs_page(**kw)


def test_paging_takes_the_bounds_it_names(op: SchedulerClient, acme: SchedulerClient) -> None:
    for i in range(3):
        acme.submit(f"j{i}", sow())
    for call in (op.list_jobs_page, acme.invoice_page):
        assert call(page_size=1000)[1] == ""  # the largest page
        assert call(page_token=str(2**63 - 1))[1] == ""  # the largest seq SQLite holds (19 digits): past the end
    assert [v.view.id for v in acme.list_jobs_page(tenant="acme", page_size=2)[0]] == ["j0", "j1"]  # itself
    assert acme.invoice("acme").tenant == "acme"


def test_a_tenant_lists_only_its_own_jobs(op: SchedulerClient, acme: SchedulerClient,
                                          globex: SchedulerClient) -> None:
    acme.submit("a1", sow())
    globex.submit("g1", sow())
    assert [s.view.id for s in acme.list_jobs()] == ["a1"]
    assert [s.view.id for s in op.list_jobs()] == ["a1", "g1"]
    assert [s.view.id for s in op.list_jobs(tenant="globex")] == ["g1"]
    with refused("PERMISSION_DENIED", "platform-wide views need the operator token"):
        acme.list_jobs_page(tenant="globex")


def test_the_price_menu_is_eq_7_of_the_expected_usage(acme: SchedulerClient, op: SchedulerClient) -> None:
    platform = Platform(**PLATFORM)
    empty = acme.price_menu()
    assert empty.start == 0 and len(empty.unit_price) == platform.horizon
    assert empty.unit_price == pytest.approx([1 / (2 * platform.D_m)] * platform.horizon)
    acme.submit("j1", sow(outcomes=[[0, 2, 1.0]]))
    menu = acme.price_menu(0, 3)
    assert menu.expected_usage == pytest.approx((2.0, 2.0, 0.0))
    assert menu.unit_price == pytest.approx(unit_price(np.array(menu.expected_usage), platform).tolist())
    op.advance()
    with refused("INVALID_ARGUMENT", "start=0 is before the current round 1"):
        acme.price_menu(0, 3)
    with refused("INVALID_ARGUMENT", r"length=200 is outside \[1, 110\]"):
        acme.price_menu(1, 200)
    for length in (-1, 111):  # just outside [1, 10 horizons]
        with refused("INVALID_ARGUMENT", rf"length={length} is outside \[1, 110\]"):
            acme.price_menu(1, length)
    assert len(acme.price_menu(1, 1).unit_price) == 1 and len(acme.price_menu(1, 110).unit_price) == 110


@pytest.mark.parametrize("start", [111 + 1, 10**8, 2**62])
def test_a_price_menu_too_far_ahead_is_refused_and_allocates_nothing(srv: RunningServer, acme: SchedulerClient,
                                                                    start: int) -> None:
    # y beyond the horizon is 0 anyway; reading it grew the engine's price book up to `start` (800 MB at 10^8,
    # kept in memory and in every snapshot after) or failed as INTERNAL
    size = srv.scheduler.engine.prices._y.size
    with refused("INVALID_ARGUMENT", rf"start={start} is after round 110, 10 horizons ahead of the current round 0"):
        acme.price_menu(start, 3)
    assert srv.scheduler.engine.prices._y.size == size
    assert acme.price_menu(110, 110).unit_price == pytest.approx([1 / 8] * 110)


def test_invoices_are_per_tenant_and_operator_only_for_others(acme: SchedulerClient, globex: SchedulerClient,
                                                              op: SchedulerClient) -> None:
    for client_, job in ((acme, "a1"), (globex, "g1"), (op, "o1")):  # one round each: both start at once
        client_.submit(job, sow(outcomes=[[0, 1, 1.0]]))
        client_.report_arrival(job)
        client_.report_completion(job)
        op.advance()
    assert [c.job for c in acme.invoice().lines] == ["a1"]
    mine = op.invoice()  # naming no tenant: the operator's own jobs
    assert (mine.tenant, [c.job for c in mine.lines]) == ("operator", ["o1"])
    assert [c.job for c in op.invoice("globex").lines] == ["g1"]
    with refused("PERMISSION_DENIED", "cannot read tenant 'globex'"):
        acme.invoice("globex")
    with refused("INVALID_ARGUMENT", "tenant='nobody' is not configured"):
        op.invoice("nobody")


def test_an_invoice_pages_through_a_billing_period_and_totals_the_whole_period(acme: SchedulerClient,
                                                                               op: SchedulerClient) -> None:
    for i in range(5):  # one completed job per round: billed in rounds 0..4
        acme.submit(f"a{i}", sow(outcomes=[[0, 1, 1.0]]))
        acme.report_arrival(f"a{i}")
        acme.report_completion(f"a{i}")
        op.advance()
    whole = acme.invoice()
    assert [c.job for c in whole.lines] == [f"a{i}" for i in range(5)] and [c.round for c in whole.lines] == [
        0,
        1,
        2,
        3,
        4,
    ]
    first, token = acme.invoice_page(page_size=2, from_round=1, to_round=4)
    assert [c.job for c in first.lines] == ["a1", "a2"] and token
    second, token = acme.invoice_page(page_size=2, page_token=token, from_round=1, to_round=4)
    assert [c.job for c in second.lines] == ["a3"] and token == ""
    period = sum(c.amount for c in whole.lines[1:4])
    assert first.total == second.total == pytest.approx(period, rel=1e-12)
    assert [c.job for c in acme.invoice(from_round=3).lines] == ["a3", "a4"]
    assert acme.invoice(from_round=0) == whole  # the lowest from_round
    assert acme.invoice(to_round=1).lines == whole.lines[:1]  # the lowest to_round without a from_round
    assert acme.invoice(page_size=1).lines == whole.lines  # all pages, one charge each


@pytest.mark.parametrize(("kw", "match"), [
    ({"from_round": -1}, "from_round=-1 is below the bound 0"),
    ({"from_round": 3, "to_round": 3}, "to_round=3 must be above from_round=3"),
    ({"to_round": 0}, "to_round=0 must be above from_round=0"),
    ({"page_size": 1001}, r"page_size=1001 is outside \[0, 1000\]"),
    ({"page_token": "x"}, "page_token='x' is not a token this server returned"),
    ({"page_token": "\u00b2"}, "page_token='\u00b2' is not a token this server returned"),
])
def test_invoice_rejects_bad_periods_and_paging(acme: SchedulerClient, kw: dict, match: str) -> None:
    with refused("INVALID_ARGUMENT", match):
        acme.invoice_page(**kw)


def test_get_platform_reports_bounds_clock_and_the_engines_digest(acme: SchedulerClient,
                                                                  op: SchedulerClient) -> None:
    acme.submit("j1", sow())
    acme.report_arrival("j1")
    op.advance()
    engine = Engine(Platform(**PLATFORM))
    engine.submit("acme/j1", SoW.parse(sow(), engine.platform))
    engine.report_arrival("acme/j1", None)
    engine.advance()
    status = op.status()
    assert status.platform == Platform(**PLATFORM)
    assert (status.samples, status.oracle, status.clock, status.now) == (2000, "mc", "simulated", 1)
    assert (status.events, status.active_jobs) == (len(engine.events), 1)
    assert status.state_digest == engine.digest()
    seen_by_tenant = acme.status()
    assert (seen_by_tenant.now, seen_by_tenant.platform) == (1, status.platform)
    assert (seen_by_tenant.events, seen_by_tenant.active_jobs, seen_by_tenant.state_digest) == (0, 0, "")


def test_watch_events_replays_from_a_sequence_number_and_filters_by_tenant(
        acme: SchedulerClient, globex: SchedulerClient, op: SchedulerClient) -> None:
    acme.submit("a1", sow())
    globex.submit("g1", sow())
    acme.report_arrival("a1")
    op.advance()
    everything = list(op.watch(follow=False))
    assert [(e.seq, e.type, e.job) for e in everything] == [
        (0, "quote", "a1"), (1, "quote", "g1"), (2, "arrive", "a1"), (3, "start", "a1")]
    assert [e.seq for e in op.watch(2, follow=False)] == [2, 3]
    assert [e.job for e in acme.watch(follow=False)] == ["a1", "a1", "a1"]
    with refused("INVALID_ARGUMENT", "from_seq=-1 is below the bound 0"):
        list(op.watch(-1, follow=False))


def test_a_following_watch_receives_new_events(acme: SchedulerClient, op: SchedulerClient) -> None:
    stream = op.watch(0, follow=True)
    acme.submit("a1", sow())
    first = next(stream)
    acme.submit("a2", sow())
    second = next(stream)
    assert [(first.seq, first.job), (second.seq, second.job)] == [(0, "a1"), (1, "a2")]
    stream.close()


def test_a_following_watch_sends_no_event_of_a_batch_whose_commit_failed(
    srv: RunningServer, op: SchedulerClient
) -> None:
    # the engine holds the failed batch's events, the log does not: after a restart event 1 is another event,
    # so sending this one would break exactly-once for a watcher resuming from seq 2
    op.submit("a", sow(), tenant="acme")
    stream = client(srv, OP, retry=RetryPolicy(attempts=1)).watch(0, follow=True)
    assert next(stream).job == "a"
    srv.scheduler.store._db = FailingCommit(srv.scheduler.store._db)  # type: ignore[assignment]
    with refused("UNAVAILABLE", "the command log failed"):
        client(srv, OP, retry=RetryPolicy(attempts=1)).submit("b", sow(), tenant="acme")
    with refused("UNAVAILABLE", r"the command log failed .*the server must be restarted; resume from_seq=1$"):
        next(stream)


def test_event_streams_beyond_the_limit_are_refused_while_unary_calls_still_run(tmp_path: Path) -> None:
    with running(tmp_path / "w.db", max_workers=3, max_watchers=1) as s:
        op, acme = client(s, OP), client(s, ACME)
        acme.submit("a1", sow())
        stream = op.watch(0, follow=True, resume=False)
        assert next(stream).seq == 0  # this stream now holds the only slot
        with refused("RESOURCE_EXHAUSTED", r"1 event streams are open, this server's limit \(--max-watchers\)"):
            list(acme.watch(0, follow=False, resume=False))
        assert acme.submit("a2", sow()).job == "a2" and len(list(op.list_jobs())) == 2  # threads left for these
        assert next(stream).seq == 1
        stream.close()  # the client cancels: the server drops the stream and frees its slot
        deadline = time.monotonic() + 10
        while True:
            try:
                assert [e.seq for e in op.watch(0, follow=False, resume=False)] == [0, 1]
                break
            except RpcFailure:
                assert time.monotonic() < deadline, "the closed stream's slot was never freed"
                time.sleep(0.05)


@pytest.mark.parametrize(("kw", "match"), [
    ({"max_workers": 1}, r"max_workers=1 is below the bound 2"),
    ({"max_workers": 4, "max_watchers": 4}, r"max_watchers=4 is outside \[1, 3\]"),
    ({"max_watchers": 0}, r"max_watchers=0 is outside \[1, 63\]"),
])
def test_the_stream_limit_must_leave_threads_for_unary_calls(tmp_path: Path, kw: dict, match: str) -> None:
    with pytest.raises(StartupError, match=match):
        start_server(config(), ServerOptions(store=str(tmp_path / "x.db"), listen="127.0.0.1:0", **kw))
    assert not (tmp_path / "x.db").exists()  # refused before the store was opened


def test_echo_returns_its_payload(acme: SchedulerClient) -> None:
    assert acme.echo(b"ping") == b"ping"


# ---- standard services, TLS, open mode ----

def test_health_checking_reports_serving(srv: RunningServer) -> None:
    stub = health_pb2_grpc.HealthStub(client(srv).channel)
    for service in ("", "sowsched.v1.Scheduler"):
        assert stub.Check(health_pb2.HealthCheckRequest(service=service)).status == \
            health_pb2.HealthCheckResponse.SERVING


def test_reflection_lists_the_scheduler_service(srv: RunningServer) -> None:
    stub = reflection_pb2_grpc.ServerReflectionStub(client(srv).channel)
    reply = next(stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")])))
    names = {s.name for s in reply.list_services_response.service}
    assert {"sowsched.v1.Scheduler", "grpc.health.v1.Health"} <= names


def test_tls_serves_clients_that_trust_the_certificate(tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    made = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                           "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                           "-keyout", str(key), "-out", str(cert)], capture_output=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"openssl cannot make a test certificate: {made.stderr.decode()[-200:]}")
    with running(tmp_path / "t.db", tls_cert=cert, tls_key=key) as s:
        secure = SchedulerClient(f"localhost:{s.port}", OP, tls_ca=cert)
        assert secure.echo(b"tls") == b"tls"
        with refused("UNAVAILABLE", ""):
            client(s, OP, retry=__import__("clients.client", fromlist=["x"]).RetryPolicy(attempts=1)).echo(b"x")


def settlers() -> int:
    return sum(t.name == "sowsched-settle" and t.is_alive() for t in __import__("threading").enumerate())


def test_tls_needs_both_certificate_and_key_and_a_refused_start_releases_the_log(tmp_path: Path) -> None:
    before = settlers()
    with pytest.raises(StartupError, match="TLS needs both"):
        start_server(config(), ServerOptions(store=str(tmp_path / "x.db"), listen="127.0.0.1:0",
                                             tls_cert=tmp_path / "cert.pem"))
    deadline = time.monotonic() + 5
    while settlers() > before:  # the scheduler opened for the refused start was closed: its thread ends
        assert time.monotonic() < deadline, "a refused start left its scheduler running"
        time.sleep(0.02)


def test_without_tokens_every_caller_is_the_operator_on_loopback_only(tmp_path: Path) -> None:
    open_config = ServerConfig(platform=Platform(**PLATFORM), oracle="mc", tokens={}, tenants=())
    s = start_server(open_config, ServerOptions(store=str(tmp_path / "o.db"), listen="127.0.0.1:0"))
    try:
        assert client(s, None).advance().round == 0
    finally:
        s.stop(0)
    with pytest.raises(StartupError, match=r"listen='0\.0\.0\.0:0': without tokens"):
        start_server(open_config, ServerOptions(store=str(tmp_path / "o2.db"), listen="0.0.0.0:0"))


def test_wall_clock_needs_a_positive_round_length(tmp_path: Path) -> None:
    with pytest.raises(StartupError, match=r"round_seconds=0\.0 must be positive"):
        start_server(config(), ServerOptions(store=str(tmp_path / "x.db"), listen="127.0.0.1:0", clock="wall",
                                             round_seconds=0.0))


def test_an_unexpected_error_is_internal_without_its_details(srv: RunningServer, acme: SchedulerClient,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    acme.submit("j1", sow())

    def broken(job_id: str) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(srv.scheduler.engine, "view", broken)
    with caplog.at_level(logging.INFO, logger="sowsched.rpc"), \
            pytest.raises(RpcFailure, match=r"^INTERNAL: internal error: RuntimeError$"):
        acme.get_job("j1")
    lines = [getattr(r, "fields", {}) for r in caplog.records if r.name == "sowsched.rpc" and r.msg == "rpc"]
    assert [(f["method"], f["code"]) for f in lines] == [("GetJob", "INTERNAL")]  # the log line and metrics' label


def test_the_rpc_log_line_of_a_command_names_the_tenant_and_the_job(
        acme: SchedulerClient, op: SchedulerClient, caplog: pytest.LogCaptureFixture) -> None:
    acme.submit("j1", sow())
    with caplog.at_level(logging.INFO, logger="sowsched.rpc"):
        caplog.clear()  # the submit's line, when an earlier test left the rpc logger at info
        started = time.perf_counter()
        op.report_arrival("j1", tenant="acme", request_id="arr")
        took_ms = 1000 * (time.perf_counter() - started)
    fields = [getattr(r, "fields", {}) for r in caplog.records if r.name == "sowsched.rpc"]
    assert [(f["method"], f["caller"], f["tenant"], f["job_id"], f["request_id"]) for f in fields] == [
        ("ReportArrival", "operator", "acme", "j1", "arr")]
    assert 0 <= fields[0]["writer_ms"] <= fields[0]["ms"] <= took_ms  # the server's share of the call's time


def test_a_submission_beyond_the_tenants_max_active_jobs_is_resource_exhausted(tmp_path: Path) -> None:
    limited = dataclasses.replace(config(), max_active_jobs={"acme": 1})
    srv = start_server(limited, ServerOptions(store=str(tmp_path / "s.db"), listen="127.0.0.1:0"))
    try:
        acme, globex = client(srv, ACME), client(srv, GLOBEX)
        acme.submit("j1", sow())
        with refused("RESOURCE_EXHAUSTED", r"tenant 'acme' has 1 active jobs, its limit max_active_jobs=1"):
            acme.submit("j2", sow())
        assert globex.submit("j2", sow()).job == "j2"
        assert [j.view.id for j in acme.list_jobs()] == ["j1"]
    finally:
        srv.stop(0)


def test_get_platform_tells_each_caller_its_own_active_jobs_and_limit(tmp_path: Path) -> None:
    limited = dataclasses.replace(config(), max_active_jobs={"acme": 3})
    srv = start_server(limited, ServerOptions(store=str(tmp_path / "s.db"), listen="127.0.0.1:0"))
    try:
        acme, globex, op = client(srv, ACME), client(srv, GLOBEX), client(srv, OP)
        acme.submit("j1", sow(outcomes=[[0, 1, 1.0]]))
        acme.submit("j2", sow(outcomes=[[1, 1, 1.0]]))
        globex.submit("j1", sow())
        assert (acme.status().own_active_jobs, acme.status().own_max_active_jobs) == (2, 3)
        assert (globex.status().own_active_jobs, globex.status().own_max_active_jobs) == (1, None)
        assert (op.status().own_active_jobs, op.status().active_jobs) == (0, 3)  # its own namespace; all
        op.advance()  # acme's j1 never arrived at its only arrival: it expires
        assert acme.status().own_active_jobs == 1
    finally:
        srv.stop(0)


def test_a_refusal_message_is_kept_whole_up_to_500_characters_then_its_first_300_and_last_200() -> None:
    assert _bounded("m" * 500) == "m" * 500
    long = "h" * 300 + "x" * 101 + "t" * 200
    assert _bounded(long) == "h" * 300 + " ... (101 characters left out) ... " + "t" * 200


def test_page_size_0_means_pages_of_100_jobs(tmp_path: Path) -> None:
    with running(tmp_path / "p.db") as s:
        op = client(s, OP)
        for i in range(101):
            op.submit(f"j{i:03}", sow(value=1.0))
        page, token = op.list_jobs_page()
        assert ([v.view.id for v in page], token != "") == ([f"j{i:03}" for i in range(100)], True)
        assert [v.view.id for v in op.list_jobs_page(page_token=token)[0]] == ["j100"]


def test_a_graceful_stop_ends_a_following_stream_at_once_with_unavailable_and_where_to_resume(tmp_path: Path) -> None:
    # it does not hold the stop for the whole grace period (an open stream is not a call that will finish)
    from server.gen.sowsched.v1 import scheduler_pb2 as pb
    s = start_server(config(), ServerOptions(store=str(tmp_path / "g.db"), listen="127.0.0.1:0"))
    client(s, ACME).submit("j1", sow())
    stream = client(s, None).stub.WatchEvents(pb.WatchEventsRequest(from_seq=0, follow=True),
                                              metadata=(("authorization", f"Bearer {OP}"),))
    time.sleep(0.3)  # the stream is open and waiting
    started = time.monotonic()
    s.stop(120.0)
    assert time.monotonic() - started < 60.0  # far below the grace period: the open stream does not hold the stop
    events = []
    with pytest.raises(grpc.RpcError) as info:
        events.extend(stream)
    assert info.value.code() is grpc.StatusCode.UNAVAILABLE
    assert info.value.details() == f"the server is shutting down; resume from_seq={len(events)}"


def test_the_operator_names_its_own_namespace_before_it_owns_any_job(op: SchedulerClient) -> None:
    with refused("NOT_FOUND", "'operator/x'"):  # not "tenant='operator' is not configured"
        op.get_job("x", tenant="operator")
    with refused("NOT_FOUND", "'operator/x'"):
        op.report_arrival("x", tenant="operator")
