"""Start-up of the client verbs: the median wall time of `--help` and of a real, successful call to a local server."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.grpc import PLATFORM, TOKEN, BenchServer
from cli.args import bounded_int

# In the order they are timed: arrive and complete act on jobs submitted earlier, advance then plays the round.
VERBS = ("submit", "job", "jobs", "audit", "watch", "status", "invoice", "prices", "arrive", "complete",
         "report-capacity", "advance")
# Worth nothing unless it runs in round 0, so each copy plans to start at once (arrive and complete then apply).
SOW = {"concurrency": 1, "signal_mode": "duration", "value_steps": [[1, 50.0]], "outcomes": [[0, 1, 1.0]]}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", type=bounded_int(1), default=7, help="runs per command (the median is reported)")


def sowsched() -> str:
    """The installed command beside this interpreter (what a user runs)."""
    return str(Path(sys.executable).with_name("sowsched"))


def seconds(argv: list[str], check: bool) -> float:
    """Wall time of one run; with `check`, a run that exits non-zero is an error, not a number."""
    t0 = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - t0
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode().strip()}")
    return elapsed


def median_seconds(argv: list[str], runs: int) -> float:
    return statistics.median(seconds(argv, check=False) for _ in range(runs))


def call(verb: str, i: int, target: str, sow: Path) -> list[str]:
    """Run `i` of `verb` against the server at `target`: each run a call the server accepts. Job `j` exists there;
    run i of submit creates job `k{i}`, which run i of arrive then readies and run i of complete ends; run i of
    report-capacity reports a later round of its own."""
    conn = ["-s", target, "--token", TOKEN, "-o", "json"]
    argv = {"submit": ["submit", str(sow), "--job-id", f"k{i}"], "job": ["job", "j"], "jobs": ["jobs"],
            "audit": ["audit", "j"],
            "watch": ["watch", "--no-follow"], "status": ["status"], "invoice": ["invoice"], "prices": ["prices"],
            "arrive": ["arrive", f"k{i}", "--signal", "1"], "complete": ["complete", f"k{i}"],
            "report-capacity": ["report-capacity", str(100 + i), str(PLATFORM.C)], "advance": ["advance"]}
    return [*argv[verb], *conn]


def run(args: argparse.Namespace) -> dict[str, Any]:
    exe = sowsched()
    result: dict[str, Any] = {"runs": args.runs, "python": [], "help": {}, "call": {}}
    result["python"] = median_seconds([sys.executable, "-c", "pass"], args.runs)
    for verb in VERBS:
        result["help"][verb] = median_seconds([exe, verb, "--help"], args.runs)
    result["help"]["(top)"] = median_seconds([exe, "--help"], args.runs)
    with tempfile.TemporaryDirectory() as tmp:
        server = BenchServer(Path(tmp), PLATFORM)
        try:
            sow = Path(tmp) / "k.json"
            sow.write_text(json.dumps(SOW))
            seconds([exe, "submit", str(sow), "--job-id", "j", "-s", server.target, "--token", TOKEN], check=True)
            for verb in VERBS:
                times = [seconds([exe, *call(verb, i, server.target, sow)], check=True) for i in range(args.runs)]
                result["call"][verb] = statistics.median(times)
        finally:
            server.stop()
    return result


def table(result: dict[str, Any]) -> str:
    lines = [f"median of {result['runs']} runs; `python -c pass` takes {result['python']:.3f} s",
             f"{'verb':16} {'--help s':>9} {'call s':>8}"]
    for verb in VERBS:
        lines.append(f"{verb:16} {result['help'][verb]:9.3f} {result['call'][verb]:8.3f}")
    lines.append(f"{'(top)':16} {result['help']['(top)']:9.3f}")
    return "\n".join(lines)
