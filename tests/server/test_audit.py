"""AuditJob: at the menu a job saw at its birth, no alternative declaration beats its quoted law under that law;
a caller-supplied reference law finds the gain of declaring it; the operator audits any job, a tenant its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.main import main
from clients.client import RpcFailure
from tests.grpc_support import ACME, GLOBEX, OP, client, running, sow


def test_the_quoted_law_as_reference_gains_nothing_and_a_longer_reference_law_shows_the_gain(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with running(tmp_path / "s.db") as srv:
        acme, op = client(srv, ACME), client(srv, OP)
        acme.submit("bg", sow(concurrency=3, outcomes=[[0, 2, 1.0]]))
        op.advance()
        acme.submit("j", sow(concurrency=1, value=40.0, outcomes=[[0, 1, 1.0]], signal_mode="none"))
        acme.submit("later", sow(concurrency=2))  # after the job: not part of the menu it saw
        honest = acme.audit_job("j")
        longer = acme.audit_job("j", reference=sow(concurrency=1, value=40.0, outcomes=[[0, 2, 1.0]],
                                                   signal_mode="none"))
        by_operator = op.audit_job("j", tenant="acme")
        assert main(["audit", "j", "--server", f"127.0.0.1:{srv.port}", "--token", ACME, "--json"]) == 0
        cli = json.loads(capsys.readouterr().out)
        with pytest.raises(RpcFailure, match="cannot audit the jobs of tenant 'acme'") as denied:
            client(srv, GLOBEX).audit_job("j", tenant="acme")
        with pytest.raises(RpcFailure, match="is not in the log") as missing:
            client(srv, GLOBEX).audit_job("j")
    assert (denied.value.code, missing.value.code) == ("PERMISSION_DENIED", "NOT_FOUND")
    assert honest["tried"] > 0 and honest["best_gain"] <= 1e-9 and honest["best_misreport"] is None
    assert by_operator == honest and {k: cli[k] for k in honest} == honest
    # really two rounds: the one-round declaration is evicted at its cap (0); declaring two rounds earns
    assert longer["declared_utility"] == 0.0 and longer["best_gain"] > 0.0
    assert max(o["duration"] for o in longer["best_misreport"]["outcomes"]) >= 2


def test_the_executor_may_not_audit(tmp_path: Path) -> None:
    from server.app import ServerOptions, start_server
    from server.config import parse_config
    from tests.grpc_support import CONFIG

    srv = start_server(parse_config({**CONFIG, "executor": {"token": "executor-token-0001"}}),
                       ServerOptions(store=str(tmp_path / "s.db"), listen="127.0.0.1:0"))
    try:
        client(srv, ACME).submit("j", sow())
        with pytest.raises(RpcFailure, match="'executor' cannot audit jobs") as denied:
            client(srv, "executor-token-0001").audit_job("j", tenant="acme")
    finally:
        srv.stop(0)
    assert denied.value.code == "PERMISSION_DENIED"
