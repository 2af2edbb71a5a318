"""`sowsched bench welfare`: one JSON object, a summary table, PNGs and run files with the expected series."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clients.cli import main
from clients.commands.welfare import parse_loads

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _run(tmp_path: Path, *extra: str, loads: str = "0.5,1", seeds: str = "2") -> None:
    main(["bench", "welfare", "--workload", "toy", "--loads", loads, "--seeds", seeds, "--processes", "2",
          "--time-limit", "2", "--no-progress", "--out", str(tmp_path), *extra])


def test_json_output_is_one_object_with_summary_runs_and_files(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    _run(tmp_path, "--json")
    result = json.loads(capsys.readouterr().out)
    assert [s["load"] for s in result["summary"]] == [0.5, 1.0]
    assert [(r["load"], r["seed"]) for r in result["runs"]] == [(0.5, 0), (0.5, 1), (1.0, 0), (1.0, 1)]
    for r in result["runs"]:
        assert {"welfare", "revenue", "offline_value", "offline_bound", "offline_gap", "offline_status", "ratio",
                "fcfs_welfare", "reservation_welfare"} <= set(r)
        assert r["offline_value"] >= r["welfare"] - 1e-9
    assert len(result["calibration"]["announced"]) == 10
    for name in ("welfare_vs_load.png", "prices_and_load.png", "calibration.png"):
        data = (tmp_path / name).read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 10_000
    runs = json.loads((tmp_path / "runs.json").read_text())
    assert len(runs) == 4
    for r in runs:
        assert len(r["series"]["unit_price"]) == len(r["series"]["running"]) == r["rounds"]
        assert len(r["series"]["expected_usage"]) == r["rounds"]
        assert all(len(p) == 3 for p in r["calibration"])
    assert json.loads((tmp_path / "summary.json").read_text())["summary"] == result["summary"]


def test_table_output_shows_the_summary_and_the_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _run(tmp_path, loads="1", seeds="1")
    out = capsys.readouterr().out
    assert "welfare sweep: workload toy, 1 seed(s) per load" in out
    assert "ratio = E[offline] / E[mechanism welfare]" in out
    assert str(tmp_path / "calibration.png") in out


@pytest.mark.parametrize(("text", "match"), [("1,x", "--loads entry 'x' is not a number"),
                                             ("1,-2", "--loads entry -2.0 must be above 0")])
def test_bad_loads_are_refused_with_the_entry(text: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        parse_loads(text)


def test_loads_parse_in_order() -> None:
    assert parse_loads("0.5,1,1.5,2") == [0.5, 1.0, 1.5, 2.0]
