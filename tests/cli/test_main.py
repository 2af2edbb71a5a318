"""The `sowsched` dispatcher: a Ctrl-C anywhere ends with one line and exit code 130, a SIGTERM with one line and 143;
--help lists the exit codes."""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import pytest

from cli import exits
from cli import main as cli
from cli.commands import simulate
from cli.verbs import VERBS


def test_ctrl_c_during_a_command_is_one_line_and_exit_130(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    def interrupted(args: argparse.Namespace) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(simulate, "run", interrupted)
    assert cli.main(["simulate", "--workload", "toy"]) == 130
    out, err = capsys.readouterr()
    assert out == "" and err == "sowsched simulate: interrupted\n"


def test_sigterm_during_a_command_is_one_line_and_exit_143_and_the_handler_is_restored(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def terminated(args: argparse.Namespace) -> int:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(30)  # the signal ends this at once
        return 0

    before = signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(simulate, "run", terminated)
    started = time.monotonic()
    assert cli.main(["simulate", "--workload", "toy"]) == 143
    assert time.monotonic() - started < 20
    out, err = capsys.readouterr()
    assert out == "" and err == "sowsched simulate: terminated\n"
    assert signal.getsignal(signal.SIGTERM) is before


@pytest.mark.parametrize("argv", [["--help"], ["advance", "--help"], ["watch", "--help"]])
def test_help_documents_every_exit_code(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit, match=r"^0$"):
        cli.main(argv)
    out = capsys.readouterr().out
    codes = (exits.EXIT_REFUSED, exits.EXIT_USAGE, exits.EXIT_UNAVAILABLE, exits.EXIT_TRY_LATER, exits.EXIT_INTERRUPTED,
             exits.EXIT_BROKEN_PIPE, exits.EXIT_TERMINATED)
    for code in (0, *codes):
        assert re.search(rf"^  {code} +\S", out, re.M), f"exit code {code} is not documented"
    assert codes == (1, 2, 69, 75, 130, 141, 143)


def test_version_prints_the_package_version_and_the_code_identity_and_exits_0(
        capsys: pytest.CaptureFixture[str]) -> None:
    from importlib import metadata

    from server.snapshot import code_identity
    with pytest.raises(SystemExit) as info:
        cli.main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out == f"sowsched {metadata.version('sowsched')} (code {code_identity()})\n"


def test_the_exit_code_list_names_every_command_that_talks_to_a_server() -> None:
    listed = re.search(r"talk to a server \(([^)]*)\)", cli.EPILOG, re.S)
    assert listed is not None
    named = {w.strip() for w in listed.group(1).replace("\n", " ").split(",")}
    sub = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    talking = {name for name, p in sub.choices.items() if any(a.dest == "server" for a in p._actions)}
    assert talking - {"serve"} <= {n.split()[0] for n in named}, f"not listed: {sorted(talking - named)}"


def test_a_closed_stdout_ends_any_command_with_141_and_no_traceback(monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    def reader_gone(args: argparse.Namespace) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(simulate, "run", reader_gone)
    assert cli.main(["simulate", "--workload", "toy"]) == 141
    assert capsys.readouterr() == ("", "")


HEAVY = ("numba", "numpy", "ortools", "highspy", "grpc", "pydantic", "mechanism", "models", "server", "clients")


@pytest.mark.parametrize("verb", ["submit", "job", "jobs", "watch", "status", "invoice", "prices"])
def test_a_client_verbs_parser_loads_no_solver_oracle_grpc_or_numpy(verb: str) -> None:
    probe = (f"import sys; from cli.main import build_parser; build_parser([{verb!r}]); "
             f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert loaded.stdout.strip() == "[]"


def test_the_full_parser_knows_every_verb_and_a_lazy_one_still_names_the_others() -> None:
    full = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    lazy = next(a for a in cli.build_parser(["job"])._actions if isinstance(a, argparse._SubParsersAction))
    assert set(full.choices) == set(lazy.choices) == set(VERBS)


def test_short_flags_and_output_formats_parse_to_the_same_options() -> None:
    parser = cli.build_parser(["job"])
    short = parser.parse_args(["job", "x", "-s", "h:1", "-t", "acme", "-o", "json"])
    long = parser.parse_args(["job", "x", "--server", "h:1", "--tenant", "acme", "--json"])
    assert (short.server, short.tenant, short.json) == (long.server, long.tenant, long.json) == ("h:1", "acme", True)
    assert parser.parse_args(["job", "x", "-o", "text"]).json is False


def test_the_client_library_loads_no_oracle_or_solver() -> None:
    probe = "import sys, clients.client; print(sorted({m.split('.')[0] for m in sys.modules} & {'numba', 'ortools', " \
            "'highspy', 'scipy'}))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert loaded.stdout.strip() == "[]"


def test_checking_a_sow_and_reading_a_quote_load_no_numpy(tmp_path: Path) -> None:
    sow = tmp_path / "j.json"
    sow.write_text('{"concurrency": 1, "value_steps": [[4, 1.0]], "outcomes": [[0, 1, 1.0]]}')
    probe = (f"import sys; from cli.commands.jobs import read_sow; read_sow(__import__('pathlib').Path({str(sow)!r}))\n"
             "from server import convert; from server.gen.sowsched.v1 import scheduler_pb2 as pb\n"
             "convert.quote_from_proto(pb.Quote(job_id='j'))\n"
             "print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'numba', 'scipy'}))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert loaded.stdout.strip() == "[]"


class _Slow(grpc.GenericRpcHandler):
    """Answers every call after `seconds` (so a client blocks in the call)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.called = threading.Event()

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
        def slow(request: bytes, context: grpc.ServicerContext) -> bytes:
            self.called.set()
            time.sleep(self.seconds)
            return b""
        return grpc.unary_unary_rpc_method_handler(slow)


def test_sigterm_ends_a_command_blocked_in_a_call_at_once_with_exit_143() -> None:
    from concurrent.futures import ThreadPoolExecutor

    server = grpc.server(ThreadPoolExecutor(2))
    handler = _Slow(30.0)
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        exe = str(Path(sys.executable).with_name("sowsched"))
        proc = subprocess.Popen([exe, "status", "-s", f"127.0.0.1:{port}", "--timeout", "60"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert handler.called.wait(60)  # the command is in its call, waiting for the answer
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
        assert time.monotonic() - started < 10  # not the server's 30 s
        assert (proc.returncode, out, err) == (143, "", "sowsched status: terminated\n")
    finally:
        server.stop(0)
