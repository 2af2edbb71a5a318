"""The README quickstart, run as written: its `sowsched` lines through the installed command, against a real server;
and the Python client example of docs/cli.md against the same kind of server.

The commands are read from the README's Quickstart block, so the README and this test cannot drift apart. Each runs
in a subprocess with `--json` added, and its whole stdout must be one JSON document. The server line runs as
written but on a free loopback port (`--listen 127.0.0.1:0 --port-file`) and a temporary store.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOWSCHED = Path(sys.executable).parent / "sowsched"
COMMAND_TIMEOUT = 180.0  # seconds: a first submit compiles the oracle's kernels when numba's cache is cold
START_TIMEOUT = 120.0


def code_block(page: str, heading: str, language: str) -> str:
    """The first ```LANGUAGE block of the section `heading` (a level-2 heading) of `page`."""
    text = (ROOT / page).read_text(encoding="utf-8")
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(rf"```{language}\n(.*?)```", section, re.S)
    assert block is not None, f"{page}: the section {heading!r} has no ```{language} block"
    return block.group(1)


def quickstart_lines() -> list[str]:
    """The shell lines of the README's Quickstart code block, comments dropped."""
    lines = [" ".join(shlex.split(line, comments=True)) for line in code_block("README.md", "Quickstart", "sh")
             .splitlines()]
    return [line for line in lines if line]


def sowsched_argv(line: str) -> list[str]:
    """The arguments after `.venv/bin/sowsched` of a quickstart line, without a trailing `&` or a `2> FILE`
    (the test keeps the server's log itself)."""
    words = shlex.split(line)
    assert words[0] == ".venv/bin/sowsched", line
    if "2>" in words:
        del words[words.index("2>"):words.index("2>") + 2]
    return [w for w in words[1:] if w != "&"]


def served(argv: list[str], store: Path, port_file: Path) -> list[str]:
    """The README's serve line on a free loopback port and a temporary store (the rest as written)."""
    out = list(argv)
    assert "--store" in out and "--listen" not in out, argv
    out[out.index("--store") + 1] = f"sqlite:///{store}"
    return [*out, "--listen", "127.0.0.1:0", "--port-file", str(port_file)]


def run_json(argv: list[str], env: dict[str, str]) -> Any:
    """Run `sowsched ARGV --json`; exit 0 and stdout one JSON document, parsed."""
    done = subprocess.run([str(SOWSCHED), *argv, "--json"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=COMMAND_TIMEOUT)
    assert done.returncode == 0, f"sowsched {shlex.join(argv)}: exit {done.returncode}: {done.stderr}"
    return json.loads(done.stdout)


def wait_for_port(server: subprocess.Popen[bytes], port_file: Path, log: Path) -> int:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if port_file.exists() and port_file.read_text().strip():
            return int(port_file.read_text())
        if server.poll() is not None:
            pytest.fail(f"the server exited with {server.returncode}: {log.read_text()}")
        time.sleep(0.1)
    pytest.fail(f"the server did not start within {START_TIMEOUT} s: {log.read_text()}")


def stop(server: subprocess.Popen[bytes]) -> int:
    """SIGTERM (what `kill %1` sends), then SIGKILL if it has not ended within the bound."""
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)
        try:
            return server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=30)
    return server.returncode


def check(argv: list[str], out: Any, seen: dict[str, Any]) -> None:
    """What each quickstart command must have printed (the README's comments say it)."""
    command = argv[0]
    if command == "submit":
        assert out["job"] == "etl-1" and out["birth"] == 0 and out["utility"] > 0
        assert [(g["arrival"], g["start"]) for g in out["plan"]] == [(0, 0), (1, 1)]
        seen["quote"] = out
    elif command == "arrive":
        assert out["id"] == "etl-1" and out["reported_arrival"] == 0
    elif command == "advance":
        seen.setdefault("rounds", []).append([e["type"] for e in out["events"]])
    elif command == "complete":
        assert out["state"] == "RUNNING"
    elif command == "job":
        assert (out["state"], out["start"], out["finish"], out["value"]) == ("COMPLETED", 0, 2, 20.0)
        seen["charge"] = out["charge"]
    elif command == "watch":
        assert [e["type"] for e in out["events"]] == ["quote", "arrive", "start", "complete"]
    elif command == "invoice":
        assert out["total"] == seen["charge"] > 0 and [c["job"] for c in out["charges"]] == ["etl-1"]
        assert out["charges"][0]["quote"]["plan"] == seen["quote"]["plan"]
    elif command == "simulate":
        assert out["workload"] == "W" and out["completed"] > 0 and out["welfare"] > 0
        assert out["offline"]["value"] >= out["welfare"]
    else:
        pytest.fail(f"the quickstart runs `sowsched {command}`, which this test does not check yet")


def test_the_readme_quickstart_runs_as_written(tmp_path: Path) -> None:
    lines = quickstart_lines()
    assert lines[0] == "make setup" and lines[-2] == "kill %1", lines
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOWSCHED_")}
    port_file, log = tmp_path / "port", tmp_path / "serve.log"
    server: subprocess.Popen[bytes] | None = None
    seen: dict[str, Any] = {}
    try:
        for line in lines[1:]:
            if line == "kill %1":
                assert server is not None and stop(server) == 0, log.read_text()
                continue
            argv = sowsched_argv(line)
            if argv[0] == "serve":
                with log.open("wb") as stderr:
                    server = subprocess.Popen([str(SOWSCHED), *served(argv, tmp_path / "q.db", port_file)],
                                              cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
                env["SOWSCHED_SERVER"] = f"127.0.0.1:{wait_for_port(server, port_file, log)}"
                continue
            check(argv, run_json(argv, env), seen)
    finally:
        if server is not None and server.poll() is None:
            server.kill()
            server.wait(timeout=30)
    assert seen["rounds"] == [["arrive", "start"], ["complete"]]
    assert {line.split()[1] for line in lines if line.startswith(".venv/bin/sowsched")} == {
        "serve", "submit", "arrive", "advance", "complete", "job", "watch", "invoice", "simulate"}


def test_the_quickstart_block_is_read_as_shell_lines() -> None:
    lines = quickstart_lines()
    serve = next(line for line in lines if " serve " in line)
    assert sowsched_argv(serve)[:3] == ["serve", "--config", "examples/platform.toml"]
    argv = served(sowsched_argv(serve), Path("/tmp/x.db"), Path("/tmp/port"))
    assert argv[argv.index("--store") + 1] == "sqlite:////tmp/x.db" and "&" not in argv and "2>" not in argv
    assert "serve.log" not in argv
    assert all("#" not in line for line in lines)


def test_the_python_client_example_runs_against_the_quickstart_server(tmp_path: Path) -> None:
    code = code_block("docs/cli.md", "The Python client", "python")
    port_file, log = tmp_path / "port", tmp_path / "serve.log"
    argv = served(sowsched_argv(next(line for line in quickstart_lines() if " serve " in line)), tmp_path / "c.db",
                  port_file)
    with log.open("wb") as stderr:
        server = subprocess.Popen([str(SOWSCHED), *argv], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        port = wait_for_port(server, port_file, log)
        assert code.count("127.0.0.1:50051") == 1
        done = subprocess.run([sys.executable, "-c", code.replace("127.0.0.1:50051", f"127.0.0.1:{port}")],
                              cwd=ROOT, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
        assert done.returncode == 0, done.stderr
        plan, last = done.stdout.splitlines()
        assert plan.startswith("(GroupPlan(arrival=0, signal=None, start=0,")
        assert last == "['complete'] COMPLETED 0.3333333333333333"
        assert stop(server) == 0, log.read_text()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(timeout=30)
