"""Random requests to every RPC of a real server: each is answered or refused with a status code that names the
caller's mistake (never INTERNAL, UNKNOWN or UNAVAILABLE), and a refused call changes nothing (the state digest)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.app import RunningServer
from server.gen.sowsched.v1 import scheduler_pb2 as pb
from server.gen.sowsched.v1 import scheduler_pb2_grpc as pb_grpc
from tests.grpc_support import ACME, GLOBEX, OP, running

REFUSALS = frozenset({grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND,
                      grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.PERMISSION_DENIED,
                      grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.ALREADY_EXISTS,
                      grpc.StatusCode.RESOURCE_EXHAUSTED})
FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

INT64 = st.one_of(st.integers(-3, 40), st.sampled_from([-(2**63), 2**31, 2**62, 2**63 - 1]))
INT32 = st.one_of(st.integers(-2, 1200), st.sampled_from([-(2**31), 2**31 - 1]))
FLOAT = st.one_of(st.floats(-5, 120), st.sampled_from([0.0, -0.0, 1e308, float("inf"), float("-inf"), float("nan")]))
TEXT = st.one_of(st.sampled_from(["", "a1", "j/1", " ", "x" * 129, "\x00", "é", "../etc"]), st.text(max_size=40))
TENANT = st.one_of(st.just(""), st.just(""), st.sampled_from(["acme", "globex", "nobody", "operator", "clock", "a/x"]),
                   TEXT)
TOKEN = st.sampled_from([OP, OP, ACME, ACME, GLOBEX, None, "wrong-token-123"])
JOB_ID = st.one_of(st.sampled_from(["j1", "j2", "j3"]), TEXT)  # few ids: reports and retries meet real jobs
REQUEST_ID = st.one_of(st.sampled_from(["", "", "r1", "r2"]), TEXT)
SIGNAL = st.one_of(st.none(), st.none(), st.sampled_from(["1", "2", "3"]), TEXT)

VALUE_STEP = st.builds(pb.ValueStep, deadline=INT64, value=FLOAT)
OUTCOME = st.builds(lambda a, d, p, s: pb.Outcome(arrival_offset=a, duration=d, probability=p,
                                                  **({} if s is None else {"signal": s})),
                    INT64, INT64, st.one_of(st.sampled_from([1.0, 0.5, 0.25]), FLOAT), st.one_of(st.none(), TEXT))
RANDOM_SOW = st.builds(pb.SoW, concurrency=INT64, value_steps=st.lists(VALUE_STEP, max_size=4),
                       outcomes=st.lists(OUTCOME, max_size=5),
                       signal_mode=st.sampled_from(["", "explicit", "none", "duration", "bogus"]))


@st.composite
def valid_sow(draw: st.DrawFn) -> pb.SoW:
    """A SoW within the test platform's bounds (C_m=4, D_m=4, S_m=8), so that jobs exist for reports to meet."""
    pairs = draw(st.lists(st.tuples(st.integers(0, 3), st.integers(1, 4)), min_size=1, max_size=4, unique=True))
    outcomes = [pb.Outcome(arrival_offset=a, duration=d, probability=1 / len(pairs)) for a, d in pairs]
    k = draw(st.integers(1, 8))
    return pb.SoW(concurrency=draw(st.integers(1, 4)), value_steps=[pb.ValueStep(deadline=k, value=draw(
        st.floats(1, 50)))], outcomes=outcomes, signal_mode=draw(st.sampled_from(["", "none", "duration"])))


SOW = st.one_of(valid_sow(), valid_sow(), valid_sow(), RANDOM_SOW)


def optional(**fields: Any) -> dict[str, Any]:
    """Proto keyword arguments without the absent (None) optional fields."""
    return {k: v for k, v in fields.items() if v is not None}


REQUESTS: dict[str, st.SearchStrategy[Any]] = {
    "SubmitSoW": st.builds(pb.SubmitSoWRequest, request_id=REQUEST_ID, job_id=JOB_ID, sow=SOW, tenant=TENANT),
    "ReportArrival": st.builds(lambda r, j, s, t: pb.ReportArrivalRequest(request_id=r, job_id=j, tenant=t,
                                                                          **optional(signal=s)),
                               REQUEST_ID, JOB_ID, SIGNAL, TENANT),
    "ReportCompletion": st.builds(pb.ReportCompletionRequest, request_id=REQUEST_ID, job_id=JOB_ID, tenant=TENANT),
    "AdvanceRound": st.builds(pb.AdvanceRoundRequest, request_id=REQUEST_ID),
    "GetJob": st.builds(pb.GetJobRequest, job_id=JOB_ID, tenant=TENANT),
    "ListJobs": st.builds(pb.ListJobsRequest, page_size=INT32, page_token=TEXT,
                          states=st.lists(st.sampled_from(["RUNNING", "COMPLETED", "running", "", "X"]), max_size=3),
                          tenant=TENANT),
    "GetPriceMenu": st.builds(lambda s, n: pb.GetPriceMenuRequest(length=n, **optional(start=s)),
                              st.one_of(st.none(), INT64), INT64),
    "GetInvoice": st.builds(lambda t, n, p, a, b: pb.GetInvoiceRequest(tenant=t, page_size=n, page_token=p,
                                                                        **optional(from_round=a, to_round=b)),
                            TENANT, INT32, TEXT, st.one_of(st.none(), INT64), st.one_of(st.none(), INT64)),
    "GetPlatform": st.just(pb.GetPlatformRequest()),
    "WatchEvents": st.builds(pb.WatchEventsRequest, from_seq=INT64, follow=st.just(False)),
    "WatchEventBatches": st.builds(pb.WatchEventsRequest, from_seq=INT64, follow=st.just(False)),
    "Echo": st.builds(pb.EchoRequest, payload=st.binary(max_size=64)),
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running(Path(tmp_path_factory.mktemp("fuzz")) / "log.db") as srv:
        yield srv


@pytest.fixture(scope="module")
def stub(server: RunningServer) -> Iterator[pb_grpc.SchedulerStub]:
    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        yield pb_grpc.SchedulerStub(channel)


def metadata(token: str | None) -> tuple[tuple[str, str], ...]:
    return () if token is None else (("authorization", f"Bearer {token}"),)


def digest(stub: pb_grpc.SchedulerStub) -> str:
    return str(stub.GetPlatform(pb.GetPlatformRequest(), metadata=metadata(OP), timeout=10).state_digest)


def call(stub: pb_grpc.SchedulerStub, method: str, request: Any, token: str | None) -> None:
    rpc: Callable[..., Any] = getattr(stub, method)
    if method in ("WatchEvents", "WatchEventBatches"):
        for _ in rpc(request, metadata=metadata(token), timeout=10):
            pass
    else:
        rpc(request, metadata=metadata(token), timeout=10)


@FUZZ
@given(data=st.data())
def test_every_random_request_is_answered_or_refused_by_name_and_a_refusal_changes_nothing(
        stub: pb_grpc.SchedulerStub, data: st.DataObject) -> None:
    """One server for every example, so the calls interleave: submissions create the jobs later reports, reads and
    rounds meet (a few job ids and request ids, so that ids are taken and retried too)."""
    for _ in range(data.draw(st.integers(1, 4), label="calls")):
        method = data.draw(st.sampled_from(sorted(REQUESTS)), label="method")
        request, token = data.draw(REQUESTS[method], label="request"), data.draw(TOKEN, label="token")
        before = digest(stub)
        try:
            call(stub, method, request, token)
        except grpc.RpcError as exc:
            assert exc.code() in REFUSALS, (exc.code(), exc.details(), method, request)
            assert exc.details(), (method, request)  # the message names what was wrong
            assert digest(stub) == before, (exc.code(), method, request)
