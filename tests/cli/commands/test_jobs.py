"""`sowsched submit|arrive|complete|advance|report-capacity|jobs|watch|invoice` against a real server, text and
--json."""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from cli.commands.jobs import event_text, exit_code, quote_text
from cli.exits import Terminated
from cli.main import EXIT_BROKEN_PIPE, build_parser, main
from clients.client import RpcFailure, SchedulerClient, TenantEvent
from mechanism.engine import RoundReport
from server.app import RunningServer, ServerOptions, start_server
from tests.grpc_support import ACME, OP, ROOT, client, config, running, sow


@pytest.fixture()
def srv(tmp_path: Path) -> Iterator[RunningServer]:
    with running(tmp_path / "s.db") as s:
        yield s


def cli(srv: RunningServer, token: str, *argv: str) -> list[str]:
    return [*argv, "--server", f"127.0.0.1:{srv.port}", "--token", token]


def run_json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict:
    assert main([*argv, "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1  # exactly one JSON object
    return json.loads(out)


def test_a_job_through_the_cli_with_json(srv: RunningServer, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "j1.json"
    path.write_text(json.dumps(sow(outcomes=[[0, 1, 1.0]])))
    quote = run_json(capsys, cli(srv, ACME, "submit", str(path)))
    assert quote["job"] == "j1" and quote["plan"][0]["start"] == 0 and "text" not in quote
    assert run_json(capsys, cli(srv, ACME, "arrive", "j1"))["scheduled_start"] == 0
    assert run_json(capsys, cli(srv, ACME, "complete", "j1"))["tenant"] == "acme"
    report = run_json(capsys, cli(srv, OP, "advance"))
    assert [e["type"] for e in report["events"]] == ["arrive", "start", "complete"]
    jobs = run_json(capsys, cli(srv, ACME, "jobs", "--state", "COMPLETED"))["jobs"]
    assert [(j["id"], j["state"]) for j in jobs] == [("j1", "COMPLETED")]
    invoice = run_json(capsys, cli(srv, ACME, "invoice"))
    assert invoice["total"] == pytest.approx(jobs[0]["charge"]) and invoice["tenant"] == quote.pop("tenant")
    assert invoice["charges"][0]["quote"] == quote
    later = run_json(capsys, cli(srv, ACME, "invoice", "--from-round", "1"))  # billed in round 0: not in [1, now)
    assert (later["charges"], later["total"]) == ([], 0.0)
    assert run_json(capsys, cli(srv, ACME, "invoice", "--to-round", "1"))["charges"] == invoice["charges"]
    watched = run_json(capsys, cli(srv, ACME, "watch", "--no-follow", "--from-seq", "1"))
    assert [e["seq"] for e in watched["events"]] == [1, 2, 3] and watched["next_seq"] == 4


def test_the_operator_names_the_tenant_of_a_job_and_sees_each_events_tenant(
        srv: RunningServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "j1.json"
    path.write_text(json.dumps(sow(outcomes=[[0, 1, 1.0]])))
    for tenant in ("globex", "acme"):  # the same id in two namespaces (globex's starts first)
        assert run_json(capsys, cli(srv, OP, "submit", str(path), "--tenant", tenant))["job"] == "j1"
    assert main(cli(srv, OP, "arrive", "j1")) == 1  # the operator's own namespace has no j1
    assert "NOT_FOUND: job 'operator/j1' not found" in capsys.readouterr().err
    assert run_json(capsys, cli(srv, OP, "arrive", "j1", "--tenant", "globex"))["tenant"] == "globex"
    assert run_json(capsys, cli(srv, OP, "complete", "j1", "--tenant", "globex"))["tenant"] == "globex"
    assert run_json(capsys, cli(srv, ACME, "job", "j1"))["reported_arrival"] is None  # acme's j1 did not arrive
    assert run_json(capsys, cli(srv, OP, "job", "j1", "--tenant", "globex"))["reported_arrival"] == 0
    report = run_json(capsys, cli(srv, OP, "advance"))
    assert [(e["tenant"], e["job"], e["type"]) for e in report["events"]] == [
        ("globex", "j1", "arrive"), ("acme", "j1", "expire"), ("globex", "j1", "start"), ("globex", "j1", "complete")]
    watched = run_json(capsys, cli(srv, OP, "watch", "--no-follow"))["events"]
    assert [(e["tenant"], e["type"]) for e in watched[:2]] == [("globex", "quote"), ("acme", "quote")]
    assert main(cli(srv, OP, "watch", "--no-follow", "--limit", "2")) == 0
    lines = capsys.readouterr().out.splitlines()
    assert " globex/j1 " in lines[0] and " acme/j1 " in lines[1]
    assert main(cli(srv, ACME, "job", "j1", "--tenant", "globex")) == 1
    assert "PERMISSION_DENIED: tenant 'acme' cannot read the jobs of tenant 'globex'" in capsys.readouterr().err


def test_submit_json_names_the_tenant_whose_job_was_quoted(srv: RunningServer, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "j1.json"
    path.write_text(json.dumps(sow(outcomes=[[0, 1, 1.0]])))
    assert run_json(capsys, cli(srv, ACME, "submit", str(path)))["tenant"] == "acme"
    assert run_json(capsys, cli(srv, OP, "submit", str(path), "--tenant", "globex"))["tenant"] == "globex"
    assert run_json(capsys, cli(srv, OP, "submit", str(path)))["tenant"] == "operator"


def test_submit_features_gets_a_quote_built_by_the_prediction_engine_with_its_law_and_model_version(
        srv: RunningServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    features = {"nodes": 2, "requested_seconds": 120, "value_steps": [[6, 30.0]], "queue": "short", "tags": ["a"]}
    path = tmp_path / "f1.json"
    path.write_text(json.dumps(features))
    out = run_json(capsys, cli(srv, ACME, "submit", str(path), "--features"))
    assert out["prediction"]["seconds"] == [120.0] and len(out["prediction"]["model_version"]) == 64
    assert [(o["duration"], o["probability"]) for o in out["outcomes"]] == [(2, 1.0)]  # 120 s on 60 s rounds
    path.write_text(json.dumps({"features": features}))  # the same as a SoW JSON with `features`
    assert run_json(capsys, cli(srv, ACME, "submit", str(path), "--job-id", "f2"))["prediction"]["trained"] == 0
    path.write_text(json.dumps({"features": features, "concurrency": 2}))
    assert main(cli(srv, ACME, "submit", str(path), "--job-id", "f3")) == 2
    assert "a feature submission is" in capsys.readouterr().err


def test_text_output_is_readable(srv: RunningServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "sow.json"
    path.write_text(json.dumps(sow()))
    assert main(cli(srv, ACME, "submit", str(path), "--job-id", "mine")) == 0
    out = capsys.readouterr().out
    assert out.startswith("quote for job mine (born round 0)") and "start round 0" in out
    assert main(cli(srv, ACME, "jobs")) == 0
    assert "mine" in capsys.readouterr().out
    assert main(cli(srv, OP, "watch", "--limit", "1")) == 0
    assert capsys.readouterr().out.startswith("#0 ")


def test_refusals_print_the_status_and_exit_1(srv: RunningServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(cli(srv, ACME, "advance")) == 1
    assert "sowsched advance: PERMISSION_DENIED: AdvanceRound needs the operator token" in capsys.readouterr().err
    assert main(cli(srv, ACME, "arrive", "ghost")) == 1
    assert "NOT_FOUND: job 'acme/ghost' not found" in capsys.readouterr().err


@pytest.mark.parametrize(("text", "match"), [
    ('{"concurrency": 2,\n "value_steps": [}', "not valid JSON at line 2 column"),
    ("[1, 2]", "a SoW is a JSON object, not list"),
    ('{"outcomes": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
])
def test_a_bad_sow_file_exits_2_naming_the_line(srv: RunningServer, tmp_path: Path, text: str, match: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    assert main(cli(srv, ACME, "submit", str(path))) == 2
    err = capsys.readouterr().err
    assert match in err and err.count("\n") == 1


def test_a_sow_outside_the_bounds_exits_1_naming_the_bound(srv: RunningServer, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "big.json"
    path.write_text(json.dumps(sow(concurrency=7)))
    assert main(cli(srv, ACME, "submit", str(path))) == 1
    assert "INVALID_ARGUMENT: sow: concurrency=7 exceeds the bound C_m=4" in capsys.readouterr().err


@pytest.mark.parametrize(("body", "match"), [
    ({}, "sow.concurrency: Field required"),
    ({**sow(), "concurrency": 2.5}, r"sow.concurrency \(value 2.5\): Input should be a valid integer"),
    ({**sow(), "concurrency": "x"}, r"sow.concurrency \(value 'x'\): 'x' is text, not a number"),
    ({**sow(), "concurrency": True}, r"sow.concurrency \(value True\): True is a boolean, not a number"),
    ({**sow(), "outcomes": [[0, "2", 1.0]]}, r"sow.outcomes\[0\].duration \(value '2'\): '2' is text, not a number"),
    ({**sow(), "signalmode": "none"}, r"sow.signalmode \(value 'none'\): Extra inputs are not permitted"),
    (sow(outcomes=[[0, 2]]), "an outcome row has 2 fields"),
    (sow(outcomes=[[0, 2, 1.0, {"a": 1}]]), r"sow.outcomes\[0\].signal: Input should be a valid string"),
    (sow(outcomes=[[0, 2, 0.6], [1, 3, 0.5]]), "outcomes probabilities sum to 1.1"),
    ({**sow(), "concurrency": 2**70}, r"sow.concurrency \(value 1180591620717411303424\) is outside the 64-bit range"),
    (sow(outcomes=[[0, 2, 0.5], [1, 2**64, 0.5]]), r"sow.outcomes\[1\].duration \(value 18446744073709551616\) is"),
])
def test_a_malformed_sow_exits_2_naming_the_field_and_submits_nothing(
        srv: RunningServer, tmp_path: Path, body: dict, match: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(body))
    assert main(cli(srv, ACME, "submit", str(path), "--json")) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert re.search(match, err)
    assert run_json(capsys, cli(srv, OP, "jobs"))["jobs"] == []


@pytest.mark.parametrize(("argv", "match"), [
    (["jobs", "--timeout", "-1"], "--timeout=-1.0 must be a positive number of seconds"),
    (["jobs", "--timeout", "0"], "--timeout=0.0 must be a positive number of seconds"),
    (["jobs", "--timeout", "nan"], "--timeout=nan must be a positive number of seconds"),
    (["jobs", "--retries", "0"], "--retries=0 is below the bound 1"),
    (["watch", "--no-follow", "--limit", "-1"], r"--limit=-1 is below the bound 0 \(0: no limit\)"),
])
def test_bad_connection_and_watch_options_exit_2_naming_the_bound(
        srv: RunningServer, argv: list[str], match: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(cli(srv, OP, *argv)) == 2
    assert re.search(match, capsys.readouterr().err)


@pytest.mark.parametrize("command", ["submit", "arrive", "complete", "advance", "report-capacity", "jobs", "watch",
                                     "invoice"])
def test_every_argument_has_a_help_text(command: str) -> None:
    assert undocumented_arguments(command) == []


def undocumented_arguments(command: str) -> list[str]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return [a.dest for a in sub.choices[command]._actions if not a.help]


def test_a_round_without_events_prints_one_line(srv: RunningServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(cli(srv, OP, "advance")) == 0
    assert capsys.readouterr().out == "round 0: 0 events, running 0 nodes, unit price 0.1250\n"


@pytest.mark.parametrize(("argv", "option"), [
    (["watch", "--no-follow", "--from-seq", str(2**63)], "--from-seq"),
    (["invoice", "--from-round", str(2**70)], "--from-round"),
    (["invoice", "--to-round", str(-2**63 - 1)], "--to-round"),
])
def test_a_number_beyond_64_bits_is_a_usage_error_naming_the_option_and_the_bound(
        srv: RunningServer, argv: list[str], option: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(cli(srv, OP, *argv))
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}:" in err and "outside the 64-bit range" in err and "Traceback" not in err


def test_an_explicit_empty_job_id_is_sent_and_refused_not_replaced_by_the_file_name(
        srv: RunningServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "j1.json"
    path.write_text(json.dumps(sow()))
    assert main(cli(srv, ACME, "submit", str(path), "--job-id", "")) == 1
    assert "INVALID_ARGUMENT" in capsys.readouterr().err
    assert run_json(capsys, cli(srv, OP, "jobs"))["jobs"] == []


# ---- failures: exit codes, a watch failing midway, mutating commands with an unknown outcome ----

REQUEST_ID = re.compile(r"re-run with --request-id ([0-9a-f]{32}) to retry safely")


def dead_server(*argv: str) -> list[str]:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return [*argv, "--server", f"127.0.0.1:{port}", "--token", OP, "--retries", "1"]


@pytest.mark.parametrize("argv", [["jobs"], ["invoice"], ["watch", "--no-follow"]])
def test_an_unreachable_server_exits_69_not_1(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(dead_server(*argv)) == 69
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"sowsched {argv[0]}: UNAVAILABLE") and err.count("\n") == 1


@pytest.mark.parametrize("argv", [["submit", "SOW"], ["arrive", "j1"], ["complete", "j1"], ["advance"],
                                  ["report-capacity", "0", "12"]])
def test_an_unreachable_server_names_the_generated_request_id_of_a_mutating_command(
        argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "j1.json"
    path.write_text(json.dumps(sow()))
    argv = [str(path) if a == "SOW" else a for a in argv]
    assert main(dead_server(*argv, "--json")) == 69
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"sowsched {argv[0]}: UNAVAILABLE") and err.count("\n") == 1
    assert "the outcome is unknown" in err and REQUEST_ID.search(err)


def test_an_unknown_outcome_names_the_given_request_id(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(dead_server("advance", "--request-id", "round-7")) == 69
    assert "re-run with --request-id round-7 to retry safely" in capsys.readouterr().err


def test_a_refusal_has_no_retry_hint(srv: RunningServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(cli(srv, ACME, "advance")) == 1
    err = capsys.readouterr().err
    assert "PERMISSION_DENIED" in err and "--request-id" not in err


def test_an_empty_request_id_is_a_usage_error(srv: RunningServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(cli(srv, OP, "advance", "--request-id", "")) == 2
    assert "sowsched advance: --request-id '' is empty (omit it to have one generated)" in capsys.readouterr().err
    assert run_json(capsys, cli(srv, OP, "jobs"))["jobs"] == []
    assert client(srv, OP).status().now == 0


def test_an_advance_past_its_deadline_names_its_request_id_and_a_rerun_with_it_applies_it_once(
        srv: RunningServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    engine = srv.scheduler.engine
    real = engine.advance

    def slow() -> RoundReport:
        time.sleep(0.6)
        return real()

    monkeypatch.setattr(engine, "advance", slow)
    assert main(cli(srv, OP, "advance", "--timeout", "0.2", "--retries", "1")) == 69
    err = capsys.readouterr().err
    assert err.startswith("sowsched advance: DEADLINE_EXCEEDED") and err.count("\n") == 1
    found = REQUEST_ID.search(err)
    assert found is not None
    c = client(srv, OP)
    deadline = time.monotonic() + 5
    while c.status().now == 0 and time.monotonic() < deadline:  # the server finishes the round it was asked for
        time.sleep(0.05)
    assert c.status().now == 1
    report = run_json(capsys, cli(srv, OP, "advance", "--request-id", found.group(1)))
    assert report["round"] == 0  # the logged reply of the first run
    assert c.status().now == 1  # not played twice
    assert run_json(capsys, cli(srv, OP, "advance"))["round"] == 1  # a new id plays the next round


@pytest.mark.parametrize(("stop", "word", "code"), [(KeyboardInterrupt, "interrupted", 130),
                                                     (Terminated, "terminated", 143)])
def test_ctrl_c_or_sigterm_during_a_mutating_command_names_its_request_id_and_exits_130_or_143(
        srv: RunningServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        stop: type[KeyboardInterrupt], word: str, code: int) -> None:
    def interrupted(self: SchedulerClient, *, request_id: str | None = None) -> tuple[RoundReport, tuple[str, ...]]:
        raise stop

    monkeypatch.setattr(SchedulerClient, "advance_tenants", interrupted)
    assert main(cli(srv, OP, "advance", "--request-id", "r1")) == code
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith(f"sowsched advance: {word}; the outcome is unknown") and "--request-id r1 " in err


class WatchUntilStopped:
    """`sowsched watch ARGV` in a thread against `srv`, which is stopped once the watch has delivered `n` events."""

    def __init__(self, srv: RunningServer, monkeypatch: pytest.MonkeyPatch, argv: list[str], n: int) -> None:
        delivered = threading.Event()
        real = SchedulerClient.watch_tenants

        def spy(self: SchedulerClient, *args: Any, **kwargs: Any) -> Iterator[TenantEvent]:
            for i, e in enumerate(real(self, *args, **kwargs)):
                if i + 1 == n:
                    delivered.set()
                yield e

        monkeypatch.setattr(SchedulerClient, "watch_tenants", spy)
        self.code: list[int] = []
        thread = threading.Thread(target=lambda: self.code.append(main(argv)), daemon=True)
        thread.start()
        assert delivered.wait(10)
        srv.stop(1.0)  # the open stream ends UNAVAILABLE "the server is shutting down"
        thread.join(10)


def test_watch_json_failing_midway_prints_the_events_so_far_the_error_and_the_resume_point(
        srv: RunningServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    for job in ("j1", "j2"):
        client(srv, ACME).submit(job, sow())
    watch = WatchUntilStopped(srv, monkeypatch, cli(srv, OP, "watch", "--json", "--retries", "1"), n=2)
    assert watch.code == [69]
    out, err = capsys.readouterr()
    assert out.count("\n") == 1  # exactly one JSON object
    result = json.loads(out)
    assert [e["seq"] for e in result["events"]] == [0, 1]
    assert (result["last_seq"], result["next_seq"]) == (1, 2)
    assert result["error"]["code"] == "UNAVAILABLE" and "shutting down" in result["error"]["message"]
    assert err.startswith("sowsched watch: UNAVAILABLE") and "resume with --from-seq 2" in err


def test_watch_text_failing_midway_prints_the_events_then_the_error_line(
        srv: RunningServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    client(srv, ACME).submit("j1", sow())
    watch = WatchUntilStopped(srv, monkeypatch, cli(srv, OP, "watch", "--retries", "1"), n=1)
    assert watch.code == [69]
    out, err = capsys.readouterr()
    assert out.startswith("#0 ") and out.count("\n") == 1
    assert err.startswith("sowsched watch: UNAVAILABLE") and err.count("\n") == 1
    assert "(after 1 events; resume with --from-seq 1)" in err


def test_a_successful_watch_json_names_the_last_seq(srv: RunningServer, capsys: pytest.CaptureFixture[str]) -> None:
    client(srv, ACME).submit("j1", sow())
    result = run_json(capsys, cli(srv, OP, "watch", "--no-follow"))
    assert (result["last_seq"], result["next_seq"]) == (0, 1)
    assert run_json(capsys, cli(srv, OP, "watch", "--no-follow", "--from-seq", "1"))["last_seq"] is None


@pytest.mark.parametrize("code", [c.name for c in grpc.StatusCode if c is not grpc.StatusCode.OK])
def test_exit_69_means_no_answer_75_a_limit_in_use_and_every_other_failure_is_a_refusal(code: str) -> None:
    expected = (
        69 if code in ("UNAVAILABLE", "DEADLINE_EXCEEDED", "CANCELLED") else 75 if code == "RESOURCE_EXHAUSTED" else 1
    )
    assert exit_code(RpcFailure(code, "x")) == expected


def test_a_watch_whose_reader_closed_stdout_ends_quietly_with_the_sigpipe_code_not_a_usage_error(
        srv: RunningServer) -> None:
    # `sowsched watch | head -1`: after head exits, the next line hits a closed pipe
    client(srv, ACME).submit("j1", sow())
    proc = subprocess.Popen([sys.executable, "-m", "cli.main", *cli(srv, OP, "watch")], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline().startswith(b"#0 ")
        proc.stdout.close()  # the reader goes away
        client(srv, ACME).submit("j2", sow())  # the watch's next line is written to the closed pipe
        code = proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.stderr is not None
    assert (code, proc.stderr.read()) == (EXIT_BROKEN_PIPE, b"")


def test_a_submission_beyond_the_tenants_limit_exits_75(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    limited = dataclasses.replace(config(), max_active_jobs={"acme": 1})
    srv = start_server(limited, ServerOptions(store=str(tmp_path / "s.db"), listen="127.0.0.1:0"))
    try:
        path = tmp_path / "sow.json"
        path.write_text(json.dumps(sow()))
        assert main(cli(srv, ACME, "submit", str(path), "--job-id", "j1")) == 0
        assert main(cli(srv, ACME, "submit", str(path), "--job-id", "j2")) == 75
        assert "RESOURCE_EXHAUSTED: tenant 'acme' has 1 active jobs" in capsys.readouterr().err
    finally:
        srv.stop(0)


def test_status_shows_the_platform_and_the_callers_own_jobs_and_limit(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    limited = dataclasses.replace(config(), max_active_jobs={"acme": 5})
    srv = start_server(limited, ServerOptions(store=str(tmp_path / "s.db"), listen="127.0.0.1:0"))
    try:
        client(srv, ACME).submit("j1", sow())
        out = run_json(capsys, cli(srv, ACME, "status"))
        assert (out["own_active_jobs"], out["own_max_active_jobs"], out["round"]) == (1, 5, 0)
        assert "state_digest" not in out and out["platform"]["C"] == limited.platform.C
        assert main(cli(srv, ACME, "status")) == 0
        assert capsys.readouterr().out.splitlines()[1] == "your active jobs: 1 (limit 5)"
        operator = run_json(capsys, cli(srv, OP, "status"))
        assert (operator["own_max_active_jobs"], operator["active_jobs"]) == (None, 1) and operator["state_digest"]
    finally:
        srv.stop(0)


def test_status_names_the_servers_version_and_code_identity_to_every_caller(srv: RunningServer,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    from importlib import metadata

    from server.snapshot import code_identity
    for token in (ACME, OP):
        out = run_json(capsys, cli(srv, token, "status"))
        assert (out["server_version"], out["code_identity"]) == (metadata.version("sowsched"), code_identity())
    assert re.fullmatch(r"[0-9a-f]{64}", code_identity())
    assert main(cli(srv, ACME, "status")) == 0
    assert (capsys.readouterr().out.splitlines()[2]
            == f"server sowsched {metadata.version('sowsched')}, code {code_identity()[:12]}")


def test_text_output_names_a_missing_signal_as_none_in_words_not_python() -> None:
    from mechanism.engine import Engine
    from mechanism.events import Event
    from mechanism.sow import SoW
    from tests.conftest import small_platform

    p = small_platform()
    quote = Engine(p).submit("j", SoW.parse({"concurrency": 1, "value_steps": [[4, 10.0]],
                                             "outcomes": [[0, 1, 1.0]]}, p))
    assert "arrival 0 signal (none): start round 0" in quote_text(quote) and "None" not in quote_text(quote)
    event = Event(seq=3, round=1, type="arrive", job="j", data={"signal": None})
    assert event_text(event) == "#3      round 1     arrive        j signal=(none)"


def test_status_of_a_server_older_than_the_build_fields_says_unknown_and_its_json_stays_one_object(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # proto3 reads absent string fields as "": the text says unknown, the JSON keeps "" (one object either way)
    from cli.commands import jobs
    from clients.client import ServerStatus
    from mechanism.platform import Platform
    old = ServerStatus(platform_data=Platform(C=8, C_m=4, D_m=4, S_m=8, H=50.0).model_dump(mode="json"), samples=2000,
                       oracle="mc", clock="simulated", round_seconds=0.0, now=3, events=0, active_jobs=0,
                       state_digest="")

    class OldServer:
        def __enter__(self) -> OldServer:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def status(self) -> ServerStatus:
            return old

    monkeypatch.setattr(jobs, "connect", lambda args: OldServer())
    assert main(["status", "--server", "127.0.0.1:1", "--token", ACME]) == 0
    assert capsys.readouterr().out.splitlines()[2] == "server sowsched unknown, code unknown"
    assert main(["status", "--server", "127.0.0.1:1", "--token", ACME, "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and (json.loads(out)["server_version"], json.loads(out)["code_identity"]) == ("", "")


def test_the_operator_reports_a_rounds_capacity_and_a_retry_with_its_request_id_changes_nothing(
        srv: RunningServer, capsys: pytest.CaptureFixture[str]) -> None:
    argv = cli(srv, OP, "report-capacity", "2", "12", "--request-id", "cap-2")
    assert run_json(capsys, argv) == {"round": 2, "capacity": 12}
    assert run_json(capsys, argv) == {"round": 2, "capacity": 12}  # the logged reply, not a second report
    assert main(cli(srv, OP, "report-capacity", "3", "11")) == 0
    assert capsys.readouterr().out == "round 3: capacity 11 nodes (step 3 of that round evicts against it)\n"


@pytest.mark.parametrize(("token", "argv", "status"), [
    (ACME, ["5", "12"], "PERMISSION_DENIED: ReportCapacity needs the operator token"),
    (OP, ["5", "-1"], r"INVALID_ARGUMENT: capacity=-1 is outside \[0, 1000000\]"),
    (OP, ["-1", "12"], "round=-1 has been played"),
])
def test_a_capacity_report_refused_by_the_server_exits_1_naming_the_status(
        srv: RunningServer, capsys: pytest.CaptureFixture[str], token: str, argv: list[str], status: str) -> None:
    assert main(cli(srv, token, "report-capacity", *argv)) == 1
    err = capsys.readouterr().err
    assert err.startswith("sowsched report-capacity: ") and re.search(status, err)


def test_a_second_report_for_the_same_round_is_refused_and_keeps_the_first(
        srv: RunningServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(cli(srv, OP, "report-capacity", "1", "9")) == 0
    capsys.readouterr()
    assert main(cli(srv, OP, "report-capacity", "1", "10")) == 1
    assert "the capacity of round 1 was already reported (9 nodes)" in capsys.readouterr().err


def test_status_shows_this_rounds_capacity_and_the_operator_the_reports_for_later_rounds(
        srv: RunningServer, capsys: pytest.CaptureFixture[str]) -> None:
    first = run_json(capsys, cli(srv, OP, "status"))
    assert first["capacity"] == first["platform"]["C"] and first["capacity_reports"] == []
    for round_, nodes in ((0, 9), (3, 11), (2, 10)):
        assert main(cli(srv, OP, "report-capacity", str(round_), str(nodes))) == 0
    capsys.readouterr()
    op = run_json(capsys, cli(srv, OP, "status"))
    assert op["capacity"] == 9 and op["capacity_reports"] == [{"round": 2, "capacity": 10},
                                                               {"round": 3, "capacity": 11}]
    tenant = run_json(capsys, cli(srv, ACME, "status"))
    assert tenant["capacity"] == 9 and "capacity_reports" not in tenant  # the feed ahead is the operator's
    assert main(cli(srv, OP, "advance")) == 0
    assert main(cli(srv, OP, "status")) == 0
    text = capsys.readouterr().out
    assert "round 1, capacity 9 nodes" in text  # no report for round 1: the last round's capacity stays
    assert "capacity reported for later rounds: round 2: 10, round 3: 11" in text


@pytest.mark.parametrize("stop", [KeyboardInterrupt, Terminated])
def test_ctrl_c_or_sigterm_ends_a_watch_follow_normally_with_the_events_so_far(
        srv: RunningServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        stop: type[KeyboardInterrupt]) -> None:
    client(srv, ACME).submit("j1", sow())
    real = SchedulerClient.watch_tenants

    def stopped_while_following(self: SchedulerClient, from_seq: int = 0, follow: bool = True) -> Iterator[TenantEvent]:
        yield from real(self, from_seq, follow=False)
        raise stop  # the signal arrives while the follow waits for the next event

    monkeypatch.setattr(SchedulerClient, "watch_tenants", stopped_while_following)
    result = run_json(capsys, cli(srv, OP, "watch"))
    assert [e["seq"] for e in result["events"]] == [0] and result["next_seq"] == 1


# ---- payloads and parents (docs/workloads-and-sows.md) ----

def test_submit_sends_command_env_and_after_and_job_shows_them(srv: RunningServer, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    parent = tmp_path / "etl.json"
    parent.write_text(json.dumps(sow(signal_mode="none")))
    child = tmp_path / "train.json"
    child.write_text(json.dumps({**sow(signal_mode="none"), "command": ["python", "train.py", "--note", "a b"],
                                 "env": {"DATASET": "day 2"}, "after": ["etl"]}))
    assert main(cli(srv, ACME, "submit", str(parent), "--json")) == 0
    assert main(cli(srv, ACME, "submit", str(child), "--json")) == 0
    capsys.readouterr()
    assert main(cli(srv, ACME, "job", "train", "--json")) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["command"] == ["python", "train.py", "--note", "a b"] and shown["env"] == {"DATASET": "day 2"}
    assert shown["after"] == ["etl"] and "executor" not in shown
    assert main(cli(srv, OP, "job", "train", "--tenant", "acme")) == 0
    text = capsys.readouterr().out
    assert "  command: python train.py --note 'a b'\n" in text and "  env: DATASET='day 2'\n" in text
    assert "  after: etl\n" in text


def test_submit_refuses_a_bad_payload_before_sending_it(srv: RunningServer, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "j.json"
    path.write_text(json.dumps({**sow(), "env": {"SOWSCHED_JOB_ID": "x"}}))
    assert main(cli(srv, ACME, "submit", str(path))) != 0
    assert "env name 'SOWSCHED_JOB_ID' is reserved" in capsys.readouterr().err
