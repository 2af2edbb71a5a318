"""`sowsched submit` with several SoW files or JSON lines on stdin: one SubmitSoWs stream, every item answered in
order, refusals in place, and a re-run with the same --request-id applies nothing twice."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.main import main
from server.app import RunningServer
from tests.cli.commands.test_jobs import cli
from tests.grpc_support import ACME, OP, client, running, sow


@pytest.fixture(name="srv")
def _server(tmp_path: Path) -> Iterator[RunningServer]:
    with running(tmp_path / "s.db") as s:
        yield s


def test_several_sow_files_are_quoted_in_order_on_one_stream_and_a_rerun_applies_nothing_twice(
        srv: RunningServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = []
    for name, c in (("a", 1), ("b", 2), ("c", 3)):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(sow(concurrency=c)))
    argv = cli(srv, ACME, "submit", *map(str, paths), "--request-id", "batch-1", "--json")
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    assert [r["job"] for r in first["results"]] == ["a", "b", "c"] and (first["quoted"], first["refused"]) == (3, 0)
    assert all(r["tenant"] == "acme" for r in first["results"])
    assert main(argv) == 0  # the same request ids: the logged replies
    assert json.loads(capsys.readouterr().out) == first
    assert sorted(s.view.id for s in client(srv, OP).list_jobs()) == ["a", "b", "c"]


def test_json_lines_on_stdin_answer_each_item_and_a_refusal_exits_1_in_its_place(
        srv: RunningServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [{"job_id": "x", "sow": sow()}, {"job_id": "big", "sow": sow(concurrency=9)}, {"job_id": "y", "sow": sow()}]
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(json.dumps(x) for x in lines) + "\n\n"))
    assert main(cli(srv, OP, "submit", "-", "--tenant", "acme", "--json")) == 1
    out = json.loads(capsys.readouterr().out)
    assert [r.get("job", r.get("job_id")) for r in out["results"]] == ["x", "big", "y"]
    assert out["results"][1]["error"]["code"] == "INVALID_ARGUMENT" and (out["quoted"], out["refused"]) == (2, 1)
    assert "concurrency=9 exceeds the bound C_m=4" in out["results"][1]["error"]["message"]
    assert sorted(s.view.id for s in client(srv, OP).list_jobs(tenant="acme")) == ["x", "y"]


@pytest.mark.parametrize(("stdin", "argv", "match"), [
    ("", ["a.json", "b.json", "--job-id", "j"], "--job-id names a single SoW's job"),
    ('{"job_id": "x"}\n', ["-"], 'stdin line 1: each line is {"job_id": "...", "sow": {...}}'),
    ('{"job_id": "x", "sow": ', ["-"], "stdin line 1: not valid JSON at column"),
    ('{"job_id": "x", "sow": {"concurrency": 1}}\n', ["-"], "stdin line 1: sow"),
])
def test_a_bad_batch_exits_2_naming_the_problem_and_submits_nothing(
        srv: RunningServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        stdin: str, argv: list[str], match: str) -> None:
    for name in ("a", "b"):
        (tmp_path / f"{name}.json").write_text(json.dumps(sow()))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    assert main(cli(srv, ACME, "submit", *argv)) == 2
    assert match in capsys.readouterr().err
    assert list(client(srv, OP).list_jobs()) == []
