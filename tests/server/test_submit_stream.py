"""SubmitSoWs: a stream of submissions answers each in order exactly as the same SubmitSoW calls one after
another, refusals in their place, request ids safe per item, one group commit per batch, and nothing acknowledged is
lost under kill -9."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from clients.client import RpcFailure, Submission
from mechanism.engine import Quote
from server.config import OPERATOR
from server.scheduler import DurableScheduler
from server.service import encode_reply
from server.store import CommandStore
from tests.grpc_support import ACME, GLOBEX, OP, PATIENT, ServerProcess, client, config, running, sow


def _items() -> list[Submission]:
    """Ten SoWs, two of them refused (a duplicate id, a concurrency above C_m) and one for another tenant."""
    items = [Submission(f"j{i}", sow(concurrency=1 + i % 4, value=10.0 + 3 * i), tenant="acme") for i in range(8)]
    items.insert(3, Submission("j1", sow(), tenant="acme"))  # taken by item 1: ALREADY_EXISTS
    items.insert(6, Submission("big", sow(concurrency=9), tenant="acme"))  # above C_m = 4: INVALID_ARGUMENT
    items.append(Submission("g0", sow(concurrency=3), tenant="globex"))
    return items


def _answers(results: list[Any]) -> list[Any]:
    return [r.code if isinstance(r, RpcFailure) else r for r in results]


def test_streamed_submissions_answer_and_change_state_exactly_as_sequential_submit_calls(tmp_path: Path) -> None:
    items = _items()
    with running(tmp_path / "seq.db") as srv:
        op = client(srv, OP)
        sequential: list[Any] = []
        for s in items:
            try:
                sequential.append(op.submit_tenant(s.job_id, s.sow, tenant=s.tenant))
            except RpcFailure as exc:
                sequential.append(exc)
        digest = op.status().state_digest
    with running(tmp_path / "stream.db") as srv:
        op = client(srv, OP)
        streamed = op.submit_many(items)
        assert op.status().state_digest == digest
    assert _answers(streamed) == _answers(sequential)
    assert _answers(streamed)[3] == "ALREADY_EXISTS" and _answers(streamed)[6] == "INVALID_ARGUMENT"
    refused = [r for r in streamed if isinstance(r, RpcFailure)]
    assert "already exists" in refused[0].details and "concurrency=9 exceeds the bound C_m=4" in refused[1].details


def test_a_stream_retried_with_its_request_ids_returns_the_logged_quotes_and_creates_nothing(tmp_path: Path) -> None:
    items = [Submission(f"j{i}", sow(concurrency=2), request_id=f"r{i}") for i in range(5)]
    with running(tmp_path / "s.db") as srv:
        acme = client(srv, ACME)
        first = acme.submit_many(items)
        again = acme.submit_many(items)
        assert again == first and all(isinstance(r, tuple) for r in first)
        assert acme.submit("j2", sow(concurrency=2), request_id="r2") == first[2][0]  # type: ignore[index]
        changed = acme.submit_many([Submission("j9", sow(concurrency=3), request_id="r1")])
        assert isinstance(changed[0], RpcFailure) and changed[0].code == "INVALID_ARGUMENT"
        assert "already used for a different submit request" in changed[0].details
        assert len(list(client(srv, OP).list_jobs())) == 5


def test_a_tenant_streams_only_into_its_own_namespace_and_a_bad_token_ends_the_call(tmp_path: Path) -> None:
    with running(tmp_path / "s.db") as srv:
        answers = client(srv, ACME).submit_many([Submission("a", sow()), Submission("b", sow(), tenant="globex")])
        assert isinstance(answers[0], tuple) and answers[0][1] == "acme"
        assert isinstance(answers[1], RpcFailure) and answers[1].code == "PERMISSION_DENIED"
        assert "cannot submit for tenant 'globex'" in answers[1].details
        with pytest.raises(RpcFailure, match=r"^UNAUTHENTICATED: "):
            client(srv, "not-a-token").submit_many([Submission("c", sow())])
        assert [s.view.id for s in client(srv, OP).list_jobs(tenant="acme")] == ["a"]


def test_execute_many_applies_its_commands_in_order_in_one_group_commit(tmp_path: Path) -> None:
    cfg = config()
    sched = DurableScheduler(cfg, CommandStore(tmp_path / "s.db", cfg.identity()), encode_reply, snapshot_every=0)
    commits = 0
    transaction = sched.store.transaction

    def counted() -> Any:
        nonlocal commits
        commits += 1
        return transaction()

    sched.store.transaction = counted  # type: ignore[method-assign]
    try:
        from mechanism.sow import SoW

        bodies = [{"job_id": f"j{i}", "tenant": OPERATOR, "sow": sow(concurrency=1 + i % 3)} for i in range(6)]
        bodies.insert(2, {"job_id": "j0", "tenant": OPERATOR, "sow": sow()})
        acks = sched.execute_many(OPERATOR, [(None, "submit", b, SoW.parse(b["sow"], cfg.platform)) for b in bodies])
        assert commits == 1 and sched.log_seq == 6
        assert [type(a).__name__ for a in acks] == ["Acknowledged"] * 2 + ["DuplicateJob"] + ["Acknowledged"] * 4
        assert [j.id for j in sched.engine.jobs.values()] == [f"operator/j{i}" for i in range(6)]
    finally:
        sched.close()


def test_streamed_submissions_across_a_sigkill_and_restart_keep_every_acknowledged_quote(tmp_path: Path) -> None:
    proc = ServerProcess(tmp_path)
    port = proc.start()
    items = [Submission(f"j{i}", sow(concurrency=1, value=5.0), request_id=f"r{i}") for i in range(150)]
    answers: list[Any] = []
    failures: list[str] = []

    def stream() -> None:
        try:
            for a in client(port, ACME, retry=PATIENT, timeout=5.0).submit_stream(items):
                answers.append(a)
        except RpcFailure as exc:
            failures.append(str(exc))

    try:
        worker = threading.Thread(target=stream)
        worker.start()
        deadline = time.monotonic() + 20
        while len(answers) < 3 and time.monotonic() < deadline:
            time.sleep(0.005)
        before_kill = len(answers)
        proc.kill()  # mid-stream: some batch is in flight, acknowledged or not
        proc.start()
        worker.join(60)
        assert failures == [] and 0 < before_kill < len(answers) == 150
        assert all(isinstance(a, tuple) for a in answers)
        acme = client(port, ACME)
        assert sorted(s.view.id for s in acme.list_jobs()) == sorted(s.job_id for s in items)
        again = acme.submit_many(items)  # every answer, before the kill or after, is the logged one
        assert again == answers
        assert all(isinstance(q[0], Quote) for q in again)  # type: ignore[index]
    finally:
        proc.close()


def test_a_stream_of_globex_and_acme_items_keeps_request_ids_per_caller(tmp_path: Path) -> None:
    with running(tmp_path / "s.db") as srv:
        a = client(srv, ACME).submit_many([Submission("x", sow(), request_id="same")])
        g = client(srv, GLOBEX).submit_many([Submission("x", sow(), request_id="same")])
        assert isinstance(a[0], tuple) and isinstance(g[0], tuple) and (a[0][1], g[0][1]) == ("acme", "globex")
