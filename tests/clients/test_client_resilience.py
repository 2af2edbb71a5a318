"""The typed client against real servers: kills, concurrency, request ids and tenants."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from clients.client import RpcFailure
from mechanism.engine import Quote
from tests.grpc_support import ACME, GLOBEX, OP, PATIENT, ServerProcess, client, running, sow


def test_submits_across_a_sigkill_and_restart_each_create_one_job_with_the_logged_quote(tmp_path: Path) -> None:
    proc = ServerProcess(tmp_path)
    port = proc.start()
    quotes: dict[str, Quote] = {}
    failures: list[str] = []

    def submit_all(token: str, prefix: str) -> None:
        c = client(port, token, retry=PATIENT, timeout=2.0)
        for i in range(25):
            try:
                quotes[f"{prefix}{i}"] = c.submit(f"{prefix}{i}", sow(concurrency=1, value=5.0),
                                                  request_id=f"r{i}")  # the same ids in both tenants
            except RpcFailure as exc:
                failures.append(str(exc))

    try:
        workers = [threading.Thread(target=submit_all, args=a) for a in ((ACME, "a"), (GLOBEX, "g"))]
        for w in workers:
            w.start()
        deadline = time.monotonic() + 10
        while len(quotes) < 5 and time.monotonic() < deadline:
            time.sleep(0.01)
        done_before_kill = len(quotes)
        proc.kill()  # mid-burst: some command is in flight, acknowledged or not
        proc.start()
        for w in workers:
            w.join(30)
        assert failures == [] and 0 < done_before_kill < len(quotes) == 50
        op = client(port, OP)
        assert sorted(s.view.id for s in op.list_jobs(page_size=7)) == sorted(quotes)
        acme, globex = client(port, ACME), client(port, GLOBEX)
        for job, quote in quotes.items():  # a retry now gets exactly the reply the first call got
            c = acme if job.startswith("a") else globex
            assert c.submit(job, sow(concurrency=1, value=5.0), request_id=f"r{job[1:]}") == quote
    finally:
        proc.close()


def test_concurrent_retries_of_one_request_id_create_one_job_and_get_one_quote(tmp_path: Path) -> None:
    with running(tmp_path / "s.db") as srv:
        replies: list[Quote | str] = []

        def submit(value: float) -> None:
            try:
                replies.append(client(srv, ACME).submit("j1", sow(value=value), request_id="same"))
            except RpcFailure as exc:
                replies.append(exc.code)

        threads = [threading.Thread(target=submit, args=(20.0 if k < 6 else 9.0,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        quotes = [r for r in replies if isinstance(r, Quote)]
        assert len(quotes) == 6 and all(q == quotes[0] for q in quotes)
        assert sorted(r for r in replies if isinstance(r, str)) == ["INVALID_ARGUMENT"] * 2
        assert [s.view.id for s in client(srv, OP).list_jobs()] == ["j1"]


def test_a_refused_first_attempt_leaves_its_request_id_free_for_the_corrected_command(tmp_path: Path) -> None:
    with running(tmp_path / "s.db") as srv, client(srv, ACME) as acme:
        with pytest.raises(RpcFailure, match=r"^INVALID_ARGUMENT: sow: concurrency=7 exceeds the bound C_m=4"):
            acme.submit("j1", sow(concurrency=7), request_id="r")
        quote = acme.submit("j1", sow(), request_id="r")
        assert acme.submit("j1", sow(), request_id="r") == quote
        with pytest.raises(RpcFailure, match=r"^INVALID_ARGUMENT: request_id='r' was already used"):
            acme.submit("j1", sow(value=9.0), request_id="r")


def test_a_request_id_is_scoped_to_its_caller(tmp_path: Path) -> None:
    with running(tmp_path / "s.db") as srv:
        a = client(srv, ACME).submit("a1", sow(), request_id="r")
        g = client(srv, GLOBEX).submit("g1", sow(), request_id="r")
        o = client(srv, OP).submit("o1", sow(), request_id="r", tenant="acme")
        assert (a.job, g.job, o.job) == ("a1", "g1", "o1")
        with pytest.raises(RpcFailure, match=r"^NOT_FOUND: job 'globex/a1' not found"):
            client(srv, GLOBEX).report_arrival("a1", None, request_id="r2")
