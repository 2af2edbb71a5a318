"""Start-up of the client verbs: the median wall time of `--help` and of a real call to a local server."""

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

VERBS = ("submit", "job", "jobs", "watch", "status", "invoice", "prices")
SOW = {"concurrency": 1, "signal_mode": "duration", "value_steps": [[40, 50.0]], "outcomes": [[1, 2, 1.0]]}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", type=int, default=7, help="runs per command (the median is reported)")


def sowsched() -> str:
    """The installed command beside this interpreter (what a user runs)."""
    return str(Path(sys.executable).with_name("sowsched"))


def median_seconds(argv: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def calls(target: str, sow: Path) -> dict[str, list[str]]:
    """One real invocation per verb against the server at `target` (a job `j` exists there)."""
    conn = ["-s", target, "--token", TOKEN, "-o", "json"]
    return {"submit": ["submit", str(sow), *conn], "job": ["job", "j", *conn], "jobs": ["jobs", *conn],
            "watch": ["watch", "--no-follow", *conn], "status": ["status", *conn], "invoice": ["invoice", *conn],
            "prices": ["prices", *conn]}


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
            sow = Path(tmp) / "j.json"
            sow.write_text(json.dumps(SOW))
            subprocess.run([exe, "submit", str(sow), "-s", server.target, "--token", TOKEN], check=True,
                           stdout=subprocess.DEVNULL)
            for verb, argv in calls(server.target, Path(tmp) / "k.json").items():
                if verb == "submit":  # a fresh job id per run: the file name is the id
                    (Path(tmp) / "k.json").write_text(json.dumps(SOW))
                    argv = [*argv, "--job-id", "k"]
                    times = []
                    for i in range(args.runs):
                        t0 = time.perf_counter()
                        subprocess.run([exe, *argv[:-1], f"k{i}"], stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL, check=False)
                        times.append(time.perf_counter() - t0)
                    result["call"][verb] = statistics.median(times)
                else:
                    result["call"][verb] = median_seconds([exe, *argv], args.runs)
        finally:
            server.stop()
    return result


def table(result: dict[str, Any]) -> str:
    lines = [f"median of {result['runs']} runs; `python -c pass` takes {result['python']:.3f} s",
             f"{'verb':10} {'--help s':>9} {'call s':>8}"]
    for verb in VERBS:
        lines.append(f"{verb:10} {result['help'][verb]:9.3f} {result['call'][verb]:8.3f}")
    lines.append(f"{'(top)':10} {result['help']['(top)']:9.3f}")
    return "\n".join(lines)
