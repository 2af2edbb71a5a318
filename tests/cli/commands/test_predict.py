"""`sowsched predict ...` and `sowsched hpc --scheduler easy-pp`: one JSON document on stdout; bad input exits 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.main import main
from models.workloads import load_workload_file


def write_trace(tmp_path: Path, jobs: int = 40) -> Path:
    # user u = i % 3 runs (u + 1) * 100 s jobs, requesting 1000 s; 1 to 3 of the 4 processors
    lines = [f"{i + 1} {60 * i} 0 {(i % 3 + 1) * 100} {i % 3 + 1} -1 -1 {i % 3 + 1} 1000 -1 1 {i % 3} 1 -1 1 -1 -1 -1"
             for i in range(jobs)]
    path = tmp_path / "tiny.swf"
    path.write_text("\n".join(["; MaxProcs: 4", *lines]) + "\n")
    return path


def test_evaluate_prints_one_json_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = write_trace(tmp_path)
    assert main(["predict", "evaluate", "--trace", str(trace), "--predictor", "tsafrir", "--predictor", "exact",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    tsafrir = out["predictors"]["tsafrir"]
    assert out["jobs"] == 40 and set(tsafrir["coverage"]) == {"0.5", "0.9", "0.95"}
    assert out["predictors"]["exact"]["mae_s"] == 0.0 and tsafrir["log_score"] is None


def test_evaluate_refuses_a_missing_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["predict", "evaluate", "--trace", str(tmp_path / "none.swf"), "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("sowsched predict evaluate: [Errno 2]")


def test_sows_writes_a_workload_the_simulator_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace, out = write_trace(tmp_path), tmp_path / "w.json"
    assert main(["predict", "sows", "--trace", str(trace), "--jobs", "30", "--round-seconds", "300", "--nodes", "8",
                 "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    workload = load_workload_file(out)
    assert summary["jobs"] == len(workload.jobs) == 30 and workload.platform.C == 8


def test_tradeoff_refuses_a_risk_out_of_bounds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = write_trace(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(["predict", "tradeoff", "--trace", str(trace), "--risks", "0.5,1.5", "--plot", str(tmp_path / "p.png")])
    assert exc.value.code == 2 and "argument --risks: 1.5 must lie in [0, 1]" in capsys.readouterr().err


def test_tradeoff_writes_a_png(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace, png = write_trace(tmp_path), tmp_path / "p.png"
    assert main(["predict", "tradeoff", "--trace", str(trace), "--risks", "0.2,0.8", "--plot", str(png),
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [r["risk"] for r in result["rows"]] == [0.2, 0.8] and png.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("scheduler", ["easy-pp", "easy-learned"])
def test_hpc_prediction_driven_schedulers(scheduler: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = write_trace(tmp_path)
    assert main(["hpc", "--trace", str(trace), "--scheduler", scheduler, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["scheduler"] == scheduler and out["jobs"] == 40 and out["cleaning"] == "predictsim"


@pytest.mark.parametrize(("option", "value", "message"), [
    ("--risk", "2", "2.0 must lie in [0, 1]"),
    ("--reservation-q", "1", "argument --reservation-q: 1.0 must lie strictly between 0 and 1"),
    ("--window", "5", "argument --window: 5 is below the bound 10"),
])
def test_hpc_refuses_an_easy_learned_option_out_of_bounds(option: str, value: str, message: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    trace = write_trace(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(["hpc", "--trace", str(trace), "--scheduler", "easy-learned", option, value])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_hpc_window_sets_the_engines_training_window(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = write_trace(tmp_path)
    assert main(["hpc", "--trace", str(trace), "--scheduler", "easy-learned", "--window", "20", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["details"]["engine"]["window"] == 20



def test_evaluate_window_sets_the_learned_models_training_window(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from models.predict.baselines import Tsafrir
    from models.predict.evaluate import make_predictor
    from models.predict.learned import LearnedPredictor

    trace = write_trace(tmp_path)
    assert main(["predict", "evaluate", "--trace", str(trace), "--predictor", "learned", "--predictor", "tsafrir",
                 "--window", "20", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["window"] == 20 and set(out["predictors"]) == {"learned", "tsafrir"}
    learned, gmm = make_predictor("learned", 20), make_predictor("learned-gmm", 20)
    assert isinstance(learned, LearnedPredictor) and isinstance(gmm, LearnedPredictor)
    assert learned.config.window == 20
    assert gmm.config.window == 20 and gmm.config.clustering == "gmm" and gmm.name == "learned-gmm"
    assert isinstance(make_predictor("tsafrir", 20), Tsafrir)
    with pytest.raises(SystemExit) as exc:
        main(["predict", "evaluate", "--trace", str(trace), "--window", "5"])
    assert exc.value.code == 2 and "argument --window: 5 is below the bound 10" in capsys.readouterr().err


def test_misreport_audits_every_kth_job_of_the_trace_in_one_json_document(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = write_trace(tmp_path)
    assert main(["predict", "misreport", "--trace", str(trace), "--jobs", "30", "--round-seconds", "300",
                 "--every", "3", "--cold-start", "5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["jobs"], out["audited"], out["round_seconds"]) == (30, 10, 300)
    assert out["truncating"]["jobs"] + out["covering"]["jobs"] == out["jobs_gaining"] <= out["audited"]
    assert out["gain_total"] >= 0.0 and out["tried_mean"] >= 1


def test_misreport_refuses_auditing_every_zeroth_job(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["predict", "misreport", "--trace", str(write_trace(tmp_path)), "--every", "0"])
    assert exc.value.code == 2 and "argument --every: 0 is below the bound 1" in capsys.readouterr().err
