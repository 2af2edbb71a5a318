"""simulate --trace: a trace's jobs as SoWs from one predictor's laws, with the same value steps in every run,
reporting welfare, coverage and predict_ms_p50."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.main import main
from tests.cli.commands.test_predict import write_trace


def _run(trace: Path, sows: str, out: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    assert main(["simulate", "--trace", str(trace), "--jobs", "30", "--sows", sows, "--round-seconds", "60",
                 "--no-offline", "--write-workload", str(out), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


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


def test_a_trace_refuses_load(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = write_trace(tmp_path)
    assert main(["simulate", "--trace", str(trace), "--load", "2", "--json"]) == 2
    assert "--load 2.0 does not apply with --trace" in capsys.readouterr().err
