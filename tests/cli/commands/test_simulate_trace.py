"""simulate --trace: a trace's jobs as SoWs from one predictor's laws, with the same value steps in every run,
reporting welfare, coverage and predict_ms_p50."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from tests.cli.commands.test_predict import write_trace


def _run(trace: Path, sows: str, out: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> dict:
    assert main(["simulate", "--trace", str(trace), "--jobs", "30", "--sows", sows, "--round-seconds", "60",
                 *flags, "--no-offline", "--write-workload", str(out), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _with_setting(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                  *flags: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The learned run with a platform setting (`flags`) and without: both reports and both W.json platforms."""
    trace = write_trace(tmp_path)
    report = _run(trace, "learned", tmp_path / "w.json", capsys, *flags)
    plain = _run(trace, "learned", tmp_path / "plain.json", capsys)
    platforms = (json.loads((tmp_path / f"{n}.json").read_text())["platform"] for n in ("w", "plain"))
    return report, plain, *platforms


def test_every_sows_choice_declares_its_own_laws_on_the_same_value_steps(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    trace = write_trace(tmp_path)
    runs = {s: _run(trace, s, tmp_path / f"{s}.json", capsys) for s in ("exact", "requested", "learned")}
    docs = {s: json.loads((tmp_path / f"{s}.json").read_text()) for s in runs}
    steps = {s: [j["value_steps"] for j in d["jobs"]] for s, d in docs.items()}
    assert steps["exact"] == steps["requested"] == steps["learned"]
    # exact: the realized duration as a point; requested: the request (1000 s = 17 rounds of 60 s) as a point
    assert all([o[:3] for o in j["outcomes"]] == [[0, j["realized"][1], 1.0]] for j in docs["exact"]["jobs"])
    assert all([o[:3] for o in j["outcomes"]] == [[0, 17, 1.0]] for j in docs["requested"]["jobs"])
    assert runs["exact"]["coverage"] == {"0.5": 1.0, "0.9": 1.0} == runs["requested"]["coverage"]
    assert 0.0 <= runs["learned"]["coverage"]["0.9"] <= 1.0 and runs["learned"]["predict_ms_p50"] >= 0.0
    assert all(r["sows"] == s and r["jobs"] == 30 and "welfare" in r for s, r in runs.items())


@pytest.mark.parametrize(("flags", "code", "message"), [
    (["--trace", "t.swf", "--sows", "learned"], 2, "--conformal-gamma 0.02 needs --sows service"),
    (["--workload", "toy"], 2, "--conformal-gamma 0.02 needs --trace and --sows service"),
])
def test_a_conformal_step_needs_the_services_engine(capsys: pytest.CaptureFixture[str],
                                                    flags: list[str], code: int, message: str) -> None:
    assert main(["simulate", *flags, "--conformal-gamma", "0.02", "--json"]) == code
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(("value", "message"), [("0", r"0.0 must lie in \(0, 1\]"),
                                               ("1.5", r"1.5 must lie in \(0, 1\]")])
def test_a_conformal_step_outside_zero_to_one_is_refused(capsys: pytest.CaptureFixture[str], value: str,
                                                         message: str) -> None:
    with pytest.raises(SystemExit, match="2"):
        main(["simulate", "--trace", "t.swf", "--sows", "service", "--conformal-gamma", value, "--json"])
    assert re.search(message, capsys.readouterr().err)


def test_a_trace_refuses_load(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = write_trace(tmp_path)
    assert main(["simulate", "--trace", str(trace), "--load", "2", "--json"]) == 2
    assert "--load 2.0 does not apply with --trace" in capsys.readouterr().err


@pytest.mark.parametrize(("overload", "conformal"), [([], []), (["--overload", "newest_demanding"], []),
                                                     ([], ["--conformal-gamma", "0.2"])])
def test_feature_submissions_through_a_real_server_give_the_in_process_runs_welfare(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], overload: list[str], conformal: list[str]) -> None:
    from server.app import ServerOptions, start_server
    from server.config import parse_config
    from tests.grpc_support import OP

    # 50 one-processor jobs two minutes apart on a 32-processor machine; user u = i % 3 runs 60, 180 or 300 s of
    # a 600 s request: most complete within a few rounds, so the engine learns during the run
    lines = [f"{i + 1} {120 * i} 0 {60 + 120 * (i % 3)} 1 -1 -1 1 600 -1 1 {i % 3} 1 {i % 2} 1 -1 -1 -1"
             for i in range(50)]
    trace, workload = tmp_path / "small.swf", tmp_path / "w.json"
    trace.write_text("\n".join(["; MaxProcs: 32", *lines]) + "\n")
    args = ["simulate", "--trace", str(trace), "--jobs", "50", "--sows", "service", "--round-seconds", "60",
            "--no-offline", "--json", "--cold-start", "5", *overload]
    assert main([*args, *conformal, "--write-workload", str(workload)]) == 0
    local = json.loads(capsys.readouterr().out)
    platform = json.loads(workload.read_text())["platform"]
    section: dict[str, float] = {"prediction_cold_start": 5}
    if conformal:  # the server's engine configured as the in-process run's
        section["prediction_conformal_gamma"] = float(conformal[1])
    config = parse_config({"platform": platform, "operator": {"token": OP}, "server": section})
    assert config.platform.overload == ("newest_demanding" if overload else "newest")  # the server's rule too
    srv = start_server(config, ServerOptions(store=str(tmp_path / "s.db"), listen="127.0.0.1:0", round_seconds=60))
    try:
        if conformal:  # a run that does not state the server's step is refused before it submits
            assert main([*args, "--server", f"127.0.0.1:{srv.port}", "--token", OP]) == 1
            assert "the server's prediction_conformal_gamma is 0.2; --conformal-gamma is None" in \
                capsys.readouterr().err
        if not conformal and not overload:  # so is one whose cold start is not the server's
            assert main([*args, "--cold-start", "20", "--server", f"127.0.0.1:{srv.port}", "--token", OP]) == 1
            assert "the server's prediction_cold_start is 5; --cold-start is 20" in capsys.readouterr().err
        assert main([*args, *conformal, "--server", f"127.0.0.1:{srv.port}", "--token", OP]) == 0
        remote = json.loads(capsys.readouterr().out)
    finally:
        srv.stop(0)
    # the server's engine learned (three models: the cold start's, at 5 and at 30 completions) and quoted the same
    # SoWs as the in-process engine
    assert local["learned_quotes"] > 20 and local["model_versions"] == 3
    keys: tuple[str, ...] = ("welfare", "revenue", "completed", "coverage", "learned_quotes", "model_versions",
                             "rounds")
    if conformal:
        keys += ("conformal_gamma", "coverage_learned")
        assert local["conformal_gamma"] == 0.2
    for key in keys:
        assert remote[key] == local[key], key


def test_headroom_writes_its_capacity_model_and_reports_itself(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    report, plain, platform, plain_platform = _with_setting(tmp_path, capsys, "--headroom", "12")
    assert report["headroom"] == 12 and "headroom" not in plain
    assert report["coverage"] == plain["coverage"]  # the same laws: the headroom is the platform's, not the SoWs'
    capacity = platform["capacity"]
    assert (capacity["low"], capacity["high"], capacity["price_floor"]) == (20, 20, 32.0)
    assert "capacity" not in plain_platform


def test_a_trace_refuses_headroom_of_c_nodes_or_more(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = write_trace(tmp_path)
    assert main(["simulate", "--trace", str(trace), "--headroom", "32", "--json"]) == 2
    assert "--headroom 32 is above the bound 31 (C - 1" in capsys.readouterr().err


def test_a_negative_headroom_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit, match="2"):
        main(["simulate", "--trace", "t.swf", "--headroom", "-1", "--json"])
    assert "argument --headroom: -1 is below the bound 0" in capsys.readouterr().err


@pytest.mark.parametrize("flag", [["--headroom", "3"], ["--reserve", "4,0.25"], ["--overload", "newest_demanding"]])
def test_headroom_reserve_and_overload_need_a_trace(flag: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--workload", "toy", *flag, "--json"]) == 2
    assert f"{flag[0]} {flag[1]} needs --trace" in capsys.readouterr().err


def test_overload_writes_its_rule_into_the_platform_and_reports_itself(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    report, plain, platform, plain_platform = _with_setting(tmp_path, capsys, "--overload", "newest_demanding")
    assert report["overload"] == "newest_demanding" and "overload" not in plain
    assert report["coverage"] == plain["coverage"]  # the same laws: the rule is the platform's
    assert platform["overload"] == "newest_demanding"
    assert "overload" not in plain_platform


def test_a_service_run_reports_its_platforms_overload_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = write_trace(tmp_path)
    assert main(["simulate", "--trace", str(trace), "--jobs", "30", "--sows", "service", "--round-seconds", "60",
                 "--overload", "newest_demanding", "--no-offline", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["sows"] == "service" and report["overload"] == "newest_demanding"


def test_an_unknown_overload_rule_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit, match="2"):
        main(["simulate", "--trace", "t.swf", "--overload", "oldest", "--json"])
    assert "argument --overload: invalid choice: 'oldest'" in capsys.readouterr().err


def test_reserve_writes_its_rule_into_the_platform_and_reports_itself(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    report, plain, platform, plain_platform = _with_setting(tmp_path, capsys, "--reserve", "4,0.25")
    assert report["reserve"] == {"up": 4.0, "down": 0.25, "most": 31} and "reserve" not in plain
    assert report["coverage"] == plain["coverage"]  # the same laws: the reserve is the platform's
    assert platform["reserve"] == report["reserve"] and "capacity" not in platform
    assert "reserve" not in plain_platform


@pytest.mark.parametrize(("flags", "message"), [
    (["--reserve", "4"], "--reserve 4 must be two numbers, UP,DOWN"),
    (["--reserve", "4,1,2"], "--reserve 4,1,2 must be two numbers, UP,DOWN"),
    (["--reserve", "4,1", "--headroom", "12"], "--reserve 4,1 and --headroom 12 exclude each other"),
])
def test_a_trace_refuses_a_reserve_that_is_not_up_and_down_or_comes_with_a_headroom(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str) -> None:
    trace = write_trace(tmp_path)
    assert main(["simulate", "--trace", str(trace), *flags, "--json"]) == 2
    assert message in capsys.readouterr().err


def test_a_reserve_step_of_zero_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit, match="2"):
        main(["simulate", "--trace", "t.swf", "--reserve", "4,0", "--json"])
    assert "argument --reserve: 0.0 must be positive and finite" in capsys.readouterr().err


def test_a_reserve_run_through_a_real_server_gives_the_in_process_runs_welfare(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from server.app import ServerOptions, start_server
    from server.config import parse_config
    from tests.grpc_support import OP

    # 60 half-machine jobs 30 s apart, 60-300 s of a 600 s request: the learned laws overload the platform, so the
    # reserve moves during the run
    lines = [f"{i + 1} {30 * i} 0 {60 + 120 * (i % 3)} 16 -1 -1 16 600 -1 1 {i % 3} 1 {i % 2} 1 -1 -1 -1"
             for i in range(60)]
    trace, workload, events = tmp_path / "half.swf", tmp_path / "w.json", tmp_path / "events.jsonl"
    trace.write_text("\n".join(["; MaxProcs: 32", *lines]) + "\n")
    args = ["simulate", "--trace", str(trace), "--jobs", "60", "--sows", "learned", "--round-seconds", "60",
            "--reserve", "8,0.25", "--no-offline", "--json"]
    assert main([*args, "--write-workload", str(workload), "--events", str(events)]) == 0
    local = json.loads(capsys.readouterr().out)
    assert '"reason": "overload"' in events.read_text()
    config = parse_config({"platform": json.loads(workload.read_text())["platform"], "operator": {"token": OP}})
    srv = start_server(config, ServerOptions(store=str(tmp_path / "s.db"), listen="127.0.0.1:0", round_seconds=60))
    try:
        assert main([*args, "--server", f"127.0.0.1:{srv.port}", "--token", OP]) == 0
        remote = json.loads(capsys.readouterr().out)
        assert srv.scheduler.engine.reserve is not None
    finally:
        srv.stop(0)
    for key in ("welfare", "revenue", "completed", "cancelled", "evicted", "coverage", "rounds"):
        assert remote[key] == local[key], key


def test_the_through_server_script_prints_the_in_process_runs_report(tmp_path: Path) -> None:
    # scripts/simulate-through-server writes the run's platform (its capacity model as a nested table) and
    # engine settings into the server's TOML, so the remote run quotes what the in-process one did
    trace = write_trace(tmp_path)
    script = Path(__file__).resolve().parents[3] / "scripts" / "simulate-through-server"
    args = ["--jobs", "30", "--sows", "service", "--round-seconds", "60", "--no-offline", "--cold-start", "5",
            "--conformal-gamma", "0.2", "--overload", "newest_demanding", "--headroom", "4"]
    run = subprocess.run([str(script), str(trace), *args], capture_output=True, text=True, timeout=240,
                         env={**os.environ, "SOWSCHED_RUN_DIR": str(tmp_path / "run")})
    assert run.returncode == 0, run.stderr
    remote, local = json.loads(run.stdout), json.loads((tmp_path / "run" / "local.json").read_text())
    toml = (tmp_path / "run" / "platform.toml").read_text()
    assert "[platform.capacity]" in toml and "prediction_conformal_gamma = 0.2" in toml
    assert remote["headroom"] == 4 and remote["conformal_gamma"] == 0.2
    assert {k: v for k, v in remote.items() if k != "predict_ms_p50"} == \
           {k: v for k, v in local.items() if k != "predict_ms_p50"}


def test_the_through_server_script_needs_a_trace() -> None:
    script = Path(__file__).resolve().parents[3] / "scripts" / "simulate-through-server"
    run = subprocess.run([str(script)], capture_output=True, text=True, timeout=30)
    assert run.returncode == 2 and "usage: scripts/simulate-through-server TRACE" in run.stderr
