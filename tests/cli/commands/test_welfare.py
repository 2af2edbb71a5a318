"""`sowsched bench welfare`: one JSON object, a summary table, PNGs and run files; named workloads and W.json files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cli.commands import welfare
from cli.commands.welfare import parse_loads, sweep_source, tasks_for, welfare_task
from cli.main import build_parser, main
from models.simulation import run_simulation
from models.workloads import load_workload_file

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


def _header(solver: str) -> str:
    result = {"workload": "toy", "seeds": 1, "solver": solver, "strategy": "two_phase", "bound_model": "indexed",
              "time_limit": 2.0, "backend": "local", "summary": [], "files": []}
    return welfare.table(result).splitlines()[0]


def test_the_table_header_names_the_cpsat_settings_and_the_milp_wall_clock_limit() -> None:
    assert _header("cpsat").endswith("offline solver cpsat (two_phase, bound model indexed, limit 2), backend local")
    milp = _header("milp")  # HiGHS has no strategy or bound model; its limit is wall-clock seconds
    assert milp.endswith("offline solver milp (HiGHS, limit 2 s wall clock), backend local")
    assert _header("both").endswith("offline solver both (HiGHS, limit 2 s wall clock, then CP-SAT two_phase, "
                                    "bound model indexed, limit 2), backend local")


@pytest.mark.parametrize(("text", "match"), [("1,x", r"--loads entry 'x' is not a number"),
                                             ("1,-2", r"--loads entry -2\.0 is outside \(0, 100\]"),
                                             ("1e400", r"--loads entry inf is outside \(0, 100\]"),
                                             ("", r"--loads entry '' is not a number")])
def test_bad_loads_are_refused_with_the_entry(text: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        parse_loads(text)


def test_loads_parse_in_order() -> None:
    assert parse_loads("0.5,1,1.5,2") == [0.5, 1.0, 1.5, 2.0]


# ---- --workload-file ----

PLATFORM = {"C": 4, "C_m": 2, "D_m": 3, "S_m": 8, "H": 50.0, "epsilon": 0.1, "eps0": 0.05, "delta0": 0.05,
            "seed": 1, "samples": 300}


def _job(id_: str, birth: int, realized: list[int], **kw: object) -> dict[str, object]:
    base: dict[str, object] = {"id": id_, "birth": birth, "concurrency": 2, "value_steps": [[4, 30.0], [8, 5.0]],
                               "outcomes": [[0, 1, 0.5, None], [1, 3, 0.5, None]], "realized": realized}
    base.update(kw)
    return base


def _write(tmp_path: Path, doc: object, name: str = "w.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def _file_doc() -> dict[str, object]:
    """Eight two-node jobs on four nodes, two born per round: more than fits, so some wait or are cancelled."""
    return {"platform": PLATFORM, "jobs": [_job(f"j{i}", i // 2, [i % 2, 1 + 2 * (i % 2)]) for i in range(8)]}


def _bench_file(path: Path, out: Path, *extra: str) -> None:
    main(["bench", "welfare", "--workload-file", str(path), "--seeds", "2", "--processes", "1", "--time-limit", "2",
          "--no-progress", "--out", str(out), *extra])


def test_file_sweep_rows_use_load_1_the_same_offline_value_per_seed_and_never_less_than_the_mechanism(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, _file_doc())
    _bench_file(path, tmp_path / "out", "--json")
    result = json.loads(capsys.readouterr().out)
    assert (result["workload"], result["workload_file"]) == ("w.json", str(path))
    assert [(r["workload"], r["load"], r["seed"]) for r in result["runs"]] == [("w.json", 1.0, 0), ("w.json", 1.0, 1)]
    assert [s["load"] for s in result["summary"]] == [1.0]
    for r in result["runs"]:
        assert r["jobs"] == 8
        assert r["offline_status"] == "optimal"
        assert r["offline_value"] >= r["welfare"] - 1e-9
    assert len({r["offline_value"] for r in result["runs"]}) == 1
    assert result["summary"][0]["offline_std"] == 0.0
    for name in ("welfare_vs_load.png", "prices_and_load.png", "calibration.png", "runs.json", "summary.json"):
        assert (tmp_path / "out" / name).is_file()
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["workload_file"] == str(path)


def test_named_workload_result_has_no_workload_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _run(tmp_path, "--json", loads="1", seeds="1")
    result = json.loads(capsys.readouterr().out)
    assert (result["workload"], result["workload_file"]) == ("toy", None)


def test_file_tasks_carry_the_document_and_run_without_the_file(tmp_path: Path) -> None:
    # A Ray worker elsewhere has no such path: each task holds the parsed JSON, and seed s re-seeds the platform
    # exactly as `load_workload_file(path, seed=s)` does.
    path = _write(tmp_path, _file_doc())
    args = build_parser().parse_args(["bench", "welfare", "--workload-file", str(path), "--seeds", "2",
                                      "--time-limit", "2"])
    tasks = tasks_for(args, sweep_source(args))
    expected = [run_simulation(load_workload_file(path, seed=s)).welfare for s in (0, 1)]
    path.unlink()
    assert all(str(path) not in json.dumps(t) for t in tasks)
    assert [t["document"] for t in tasks] == [_file_doc()] * 2
    assert [welfare_task(t)["welfare"] for t in tasks] == expected


def test_named_workloads_default_to_four_loads_and_files_to_load_1(tmp_path: Path) -> None:
    named = build_parser().parse_args(["bench", "welfare", "--workload", "toy"])
    assert sweep_source(named).loads == (0.5, 1.0, 1.5, 2.0)
    filed = build_parser().parse_args(["bench", "welfare", "--workload-file", str(_write(tmp_path, _file_doc()))])
    assert sweep_source(filed).loads == (1.0,)


def test_loads_with_a_workload_file_is_refused_naming_both_flags(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, _file_doc())
    args = build_parser().parse_args(["bench", "welfare", "--workload-file", str(path), "--loads", "1"])
    with pytest.raises(ValueError, match=r"--loads 1 does not apply with --workload-file .*w\.json"):
        sweep_source(args)
    with pytest.raises(SystemExit) as exit_info:
        _bench_file(path, tmp_path / "out", "--loads", "0.5,1")
    assert exit_info.value.code == 2
    assert "--loads 0.5,1 does not apply with --workload-file" in capsys.readouterr().err


@pytest.mark.parametrize(("doc", "match"), [
    ({"platform": PLATFORM, "jobs": [_job("a", 0, [0, 1], concurrency=3)]},
     r"jobs\[0\] \(id 'a'\):.*concurrency=3 exceeds the bound C_m=2"),
    ({"platform": PLATFORM, "jobs": [_job("a", 0, [0, 1]), _job("a", 1, [0, 1])]}, r"jobs\[1\]\.id='a' is used twice"),
    ({"platform": {**PLATFORM, "C": 0}, "jobs": []}, r"platform\.C"),
])
def test_a_malformed_file_is_refused_before_any_task_runs(doc: object, match: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(welfare, "run_tasks", _no_tasks)
    with pytest.raises(SystemExit) as exit_info:
        _bench_file(_write(tmp_path, doc), tmp_path / "out")
    assert exit_info.value.code == 2
    assert re.search(match, capsys.readouterr().err, re.DOTALL)
    assert not (tmp_path / "out").exists()


def test_invalid_json_and_a_missing_file_are_refused_before_any_task_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(welfare, "run_tasks", _no_tasks)
    bad = tmp_path / "bad.json"
    bad.write_text('{"platform": {\n  "C": 4,,\n}}')
    for path, message in ((bad, "not valid JSON at line 2 column 10"), (tmp_path / "missing.json", "No such file")):
        with pytest.raises(SystemExit) as exit_info:
            _bench_file(path, tmp_path / "out")
        assert exit_info.value.code == 2
        assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--workload", "toy", "--workload-file", "w.json"],
            "argument --workload-file: not allowed with argument --workload",
        ),
        ([], "one of the arguments --workload --workload-file is required"),
    ],
)
def test_exactly_one_of_workload_and_workload_file(flags: list[str], message: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["bench", "welfare", *flags])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_file_table_names_the_file_and_its_seeds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, _file_doc())
    _bench_file(path, tmp_path / "out")
    out = capsys.readouterr().out
    assert f"welfare sweep: workload file {path} (its own jobs and realized outcomes, shown as load 1)" in out
    assert "2 seed(s) of the platform's sampling" in out


def _no_tasks(*_: object, **__: object) -> list[object]:
    raise AssertionError("a task ran although the input was bad")


@pytest.mark.parametrize("limit", ["-1", "0", "nan"])
def test_a_time_limit_that_is_not_positive_is_refused_by_the_parser(limit: str,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["bench", "welfare", "--workload", "toy", "--time-limit", limit])
    assert exit_info.value.code == 2
    assert f"argument --time-limit: {float(limit)} must be positive and finite" in capsys.readouterr().err


def test_a_file_task_with_outcomes_outside_the_sow_is_reproducible_and_offline_covers_the_mechanism(
        tmp_path: Path) -> None:
    # "b" (no signal) completes after an undeclared 2 rounds; "late" arrives where its SoW says it cannot, and at
    # round 10^6, far past any value. The same task twice gives the same row.
    doc = {"platform": PLATFORM, "jobs": [
        _job("a", 0, [0, 1]),
        _job("b", 1, [0, 2], outcomes=[[0, 1, 0.5, None], [0, 3, 0.5, None]], signal_mode="none"),
        _job("late", 0, [10**6, 1]),
    ]}
    path = _write(tmp_path, doc)
    args = build_parser().parse_args(["bench", "welfare", "--workload-file", str(path), "--seeds", "1",
                                      "--time-limit", "2"])
    (task,) = tasks_for(args, sweep_source(args))
    row = welfare_task(task)
    assert row == welfare_task(task)
    assert row["counts"]["completed"] == 2 and row["welfare"] == 60.0
    assert row["offline_value"] == 60.0 and row["offline_status"] == "optimal" and row["ratio"] == 1.0
