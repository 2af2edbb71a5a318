"""Every command with --json, run as a user runs it (the installed `sowsched`, in a subprocess), writes exactly one
JSON document on stdout, also where it runs CP-SAT and HiGHS; -o json is the same flag."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from models.data import AZURE_CAPACITY, AZURE_VM_CPU, CTC_SP2, KTH_SP2
from tests.grpc_support import OP, ServerProcess

SOWSCHED = str(Path(sys.executable).with_name("sowsched"))
VM = "1633748"  # the first VM column of the Azure series
SOW = {"concurrency": 1, "signal_mode": "duration", "value_steps": [[8, 20.0]], "outcomes": [[0, 1, 0.5], [0, 2, 0.5]]}


def json_of(*argv: str, timeout: float = 600) -> object:
    """Run `sowsched argv` and parse its whole stdout as one JSON document."""
    out = subprocess.run([SOWSCHED, *argv], capture_output=True, text=True, timeout=timeout, check=False)
    assert out.returncode == 0, f"{argv}: exit {out.returncode}\n{out.stderr[-2000:]}"
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv = ServerProcess(tmp_path_factory.mktemp("json"))
    srv.start()
    try:
        yield srv
    finally:
        srv.close()


def test_the_job_verbs_print_one_json_document(server: ServerProcess, tmp_path: Path) -> None:
    conn = ["-s", f"127.0.0.1:{server.port}", "--token", OP]
    sow = tmp_path / "j1.json"
    sow.write_text(json.dumps(SOW))
    quote = json_of("submit", str(sow), *conn, "-o", "json")
    assert isinstance(quote, dict) and quote["job"] == "j1"
    assert json_of("submit", str(sow), "--job-id", "j2", *conn, "--json")
    assert json_of("arrive", "j1", "--signal", "2", *conn, "--json")  # runs rounds 0 and 1
    for verb in (["status"], ["job", "j1"], ["jobs"], ["watch", "--no-follow"], ["invoice"], ["advance"],
                 ["complete", "j1"], ["prices", "--length", "4"], ["report-capacity", "5", "3"]):
        assert isinstance(json_of(*verb, *conn, "-o", "json"), dict), verb
    menu = json_of("prices", *conn, "--json")
    assert isinstance(menu, dict) and len(menu["unit_price"]) == len(menu["expected_usage"]) > 0


def test_the_server_verbs_print_one_json_document(server: ServerProcess, tmp_path: Path) -> None:
    copy = tmp_path / "copy.db"
    assert json_of("backup", "--store", str(server.store), "--out", str(copy), "--json")
    digest = json_of("state-digest", "--store", str(copy), "--config", str(server.config), "-o", "json")
    assert isinstance(digest, dict)


@pytest.mark.parametrize("argv", [
    ["simulate", "--workload", "toy", "--seed", "1", "-o", "json"],  # CP-SAT's clairvoyant optimum
    ["simulate", "--workload", "toy", "--seed", "1", "--oracle", "exact", "--no-offline", "--json"],
    ["calibrate", "--workload", "toy", "--seeds", "2", "--json"],
    ["hpc", "--trace", str(KTH_SP2), "--jobs", "40", "--scheduler", "easy", "--json"],
    ["hpc", "--trace", str(KTH_SP2), "--jobs", "12", "--scheduler", "cp-af", "--time-limit", "1", "--json"],
    ["hpc-study", "--trace", str(KTH_SP2), "--jobs", "30", "--cp-jobs", "8", "--offline-jobs", "6",
     "--time-limit", "1", "--offline-time-limit", "2", "--json"],
    ["bench", "solvers", "--sizes", "8", "--time-limit", "2", "--json"],  # CP-SAT and the HiGHS MILP
    ["bench", "welfare", "--workload", "toy", "--loads", "1", "--seeds", "1", "--time-limit", "2",
     "--solver", "both", "--processes", "1", "--no-progress", "--json"],
    ["bench", "core", "--jobs", "20", "--quotes", "2", "--literal-jobs", "3", "--literal-candidates", "2",
     "--history-rounds", "8", "--json"],
    ["bench", "hpc", "--cp-jobs", "6", "--time-limit", "1", "--json"],
    ["bench", "history", "--rounds", "3", "--warm-up", "2", "--json"],
    ["bench", "grpc", "--clients", "1", "--active", "2", "--submits", "2", "--echo-seconds", "0.2",
     "--samples", "16", "--json"],
    ["bench", "cli", "--runs", "1", "--json"],
    ["hpc", "--trace", str(CTC_SP2), "--jobs", "60", "--scheduler", "easy-pp", "--json"],  # .swf.gz as shipped
    ["predict", "evaluate", "--trace", str(KTH_SP2), "--jobs", "400", "--json"],
    ["forecast", "evaluate", "--series", str(AZURE_VM_CPU / "max.csv.gz"), "--column", VM, "--model", "ar1",
     "--window-minutes", "60", "--cutoff", "0.01", "--json"],
    ["forecast", "compare", "--series", str(AZURE_VM_CPU / "max.csv.gz"), "--column", VM, "--models",
     "ar1,autopilot", "--window-minutes", "60", "--cutoffs", "0.01,0.1", "--out", "{tmp}", "--json"],
    ["cuc", "--capacity", str(AZURE_CAPACITY / "capacity_azure2017.csv"), "--vm-type", "t1str", "--p", "0.05",
     "--bo-steps", "2", "--max-share", "0.2", "--json"],  # HiGHS and optuna
    ["capacity-plan", "--synthetic", "--jobs", "6", "--seed", "2", "--method", "milp-p50", "--samples", "5",
     "--runs", "5", "--time-limit", "5", "--json"],
    ["capacity-plan", "--synthetic", "--jobs", "6", "--seed", "2", "--method", "cospis", "--samples", "5",
     "--runs", "5", "--time-limit", "5", "--json"],
    ["stochastic", "lp", "--load", "0.5", "--rounds", "4", "--json"],
    ["capacity-fit", f"{AZURE_CAPACITY / 'capacity_azure2019.csv'}:t7str", "--C", "16", "--json"],
    ["bench", "predict", "--jobs", "300", "--json"],
    ["bench", "forecast", "--vms", "1", "--models", "ar1", "--json"],
    ["bench", "cuc", "--repeats", "1", "--json"],
    ["bench", "planning", "--cases", "det-p50:6", "--samples", "5", "--time-limit", "2", "--json"],
], ids=lambda argv: "-".join(argv[:2]))
def test_the_study_and_bench_commands_print_one_json_document(argv: list[str], tmp_path: Path) -> None:
    assert isinstance(json_of(*(a.replace("{tmp}", str(tmp_path)) for a in argv)), dict)


def test_an_unknown_output_format_is_a_usage_error_naming_the_formats() -> None:
    out = subprocess.run([SOWSCHED, "status", "-o", "yaml"], capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 2 and out.stdout == ""
    assert "'yaml' is not an output format (text, json)" in out.stderr
