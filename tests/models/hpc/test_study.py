"""Table-2 study: scheduler names, percentages of List-REG, and the hpc / hpc-study commands."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from cli.main import build_parser, main
from models.hpc import study
from models.hpc.cp import CpScheduler, Objective, OfflineResult
from models.hpc.jobs import Job, Workload
from models.hpc.list_scheduling import ListScheduler, Option, Order
from models.hpc.study import (
    TABLE_ROWS,
    StudyConfig,
    StudyResult,
    make_scheduler,
    run_scheduler,
    run_study,
    study_table,
)

ROWS = [(0, 10, 3), (1, 5, 3), (2, 3, 4), (3, 20, 1), (4, 2, 2), (6, 7, 1), (8, 1, 4)]


def tiny() -> Workload:
    return Workload(tuple(Job(i, s, d, r, d + 3) for i, (s, d, r) in enumerate(ROWS)), 4)


def test_scheduler_names_map_to_list_and_cp_schedulers() -> None:
    assert make_scheduler("fcfs-conservative", 1.0) == ListScheduler(Order.FCFS, Option.BACKFILL, None)
    assert make_scheduler("easy", 1.0) == ListScheduler(Order.FCFS, Option.BACKFILL, 1)
    assert make_scheduler("spf-conservative", 1.0) == ListScheduler(Order.SPF, Option.BACKFILL, None)
    assert make_scheduler("saf-greedy", 1.0) == ListScheduler(Order.SAF, Option.GREEDY, None)
    plus = make_scheduler("cp-bsld-plus", 1.0)
    assert isinstance(plus, CpScheduler) and plus.plus and plus.objective.value == "bsld"


@pytest.mark.parametrize("name", ["fifo-conservative", "cp-makespan", "cp-af-minus", "sjf"])
def test_unknown_scheduler_names_are_rejected(name: str) -> None:
    with pytest.raises(ValueError, match=rf"scheduler='{name}' is not a known scheduler name"):
        make_scheduler(name, 1.0)


def test_list_reg_row_is_one_hundred_percent_and_rows_follow_table_two() -> None:
    result = run_study(tiny(), StudyConfig(cp_jobs=4, offline_jobs=3, time_limit=0.5, offline_time_limit=1.0))
    rows = {(r["metric"], r["scheduler"]): r for r in result.table}
    assert rows[("P2SF", "fcfs-conservative")]["percent_of_list_reg"] == 100.0
    assert [(m, s) for m, s in rows] == [(m, s) for m, names in TABLE_ROWS.items() for s in names]
    assert rows[("AF", "cp-af")]["jobs"] == 4 and rows[("AF", "easy")]["jobs"] == 7
    assert rows[("AF", "cp-offline-af")]["jobs"] == 3
    assert rows[("AF", "easy")]["paper_kth"] == 96


def test_percentages_are_relative_to_list_reg_on_the_same_jobs() -> None:
    w = tiny()
    config = StudyConfig(estimates="requested", time_limit=0.5, schedulers=("sjf-conservative", "cp-offline-af"))
    result = run_study(w, config)
    assert [(r["metric"], r["scheduler"]) for r in result.table] == [
        ("BSLD", "sjf-conservative"),
        ("AF", "sjf-conservative"),
    ]
    row = result.table[1]
    sjf = run_scheduler(w, "sjf-conservative", "requested", 0.5).metrics.AF
    reg = run_scheduler(w, "fcfs-conservative", "requested", 0.5).metrics.AF
    assert row["percent_of_list_reg"] == round(100 * sjf / reg, 1)
    assert row["paper_kth"] == 81  # Table 2, KTH-SP2, requested time limits


def test_study_config_sizes_skip_offline_cp_with_requested_times() -> None:
    config = StudyConfig(list_jobs=None, cp_jobs=50, offline_jobs=20, estimates="requested")
    assert (config.size("easy"), config.size("cp-af"), config.size("cp-offline-af")) == (None, 50, 0)
    assert StudyConfig(offline_jobs=20).size("cp-offline-af") == 20


def test_offline_run_reports_its_status() -> None:
    result = run_scheduler(tiny().prefix(4), "cp-offline-af", "exact", 1.0)
    assert result.details["status"] in {"OPTIMAL", "FEASIBLE", "REFERENCE"}


def write_trace(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.swf"
    lines = ["; MaxNodes: 4"] + [
        f"{i + 1} {s} -1 {d} {r} -1 -1 {r} {d + 3} -1 1 1 1 -1 1 -1 -1 -1" for i, (s, d, r) in enumerate(ROWS)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_hpc_command_prints_the_metric_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = write_trace(tmp_path)
    assert main(["hpc", "--trace", str(trace), "--scheduler", "easy", "--estimates", "requested", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"AF", "AWF", "BSLD", "P2SF", "utilization", "makespan", "jobs"} <= out.keys()
    assert out["jobs"] == 7


def test_hpc_study_command_prints_one_json_object(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = write_trace(tmp_path)
    main(["hpc-study", "--trace", str(trace), "--schedulers", "easy,laf-conservative", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert {r["scheduler"] for r in out["table"]} == {"easy", "laf-conservative"}
    main(["hpc-study", "--trace", str(trace), "--schedulers", "easy"])
    assert "% List-REG" in capsys.readouterr().out


def test_every_order_maps_to_its_four_options_with_easy_reserving_for_one_job() -> None:
    for order in Order:
        assert make_scheduler(f"{order.value}-easy", 1.0) == ListScheduler(order, Option.BACKFILL, 1)
        assert make_scheduler(f"{order.value}-conservative", 1.0) == ListScheduler(order, Option.BACKFILL, None)
        assert make_scheduler(f"{order.value}-greedy", 1.0) == ListScheduler(order, Option.GREEDY, None)
        strict = make_scheduler(f"{order.value}-strict", 1.0)
        assert isinstance(strict, ListScheduler) and (strict.order, strict.option) == (order, Option.STRICT)


def test_study_config_defaults_are_the_hpc_study_command_defaults() -> None:
    # the library defaults (CP prefixes skipped, 60 s per off-line window) are the CLI's, field by field
    args = build_parser().parse_args(["hpc-study", "--trace", "t.swf"])
    config = StudyConfig()
    assert (config.list_jobs, config.cp_jobs, config.offline_jobs) == (args.jobs, args.cp_jobs, args.offline_jobs)
    assert (config.list_jobs, config.cp_jobs, config.offline_jobs) == (None, 0, 0)
    assert (config.estimates, config.time_limit, config.offline_time_limit) == (
        args.estimates, args.time_limit, args.offline_time_limit)
    assert config.offline_time_limit == 60.0
    assert (config.size("cp-af"), config.size("cp-offline-af")) == (0, 0)


def test_study_table_prints_the_paper_value_where_table_two_has_one_and_a_blank_elsewhere() -> None:
    rows = [
        {"metric": "AF", "scheduler": "easy", "jobs": 7, "percent_of_list_reg": 95.24, "paper_kth": 96},
        {"metric": "AWF", "scheduler": "cp-awf", "jobs": 4, "percent_of_list_reg": 101.0, "paper_kth": None},
    ]
    text = study_table(StudyResult(estimates="exact", time_limit=0.5, runs=[], table=rows))
    lines = text.splitlines()
    assert lines[0] == "estimates=exact  CP time limit per round=0.5s"
    assert lines[2].split() == ["AF", "easy", "7", "95.2%", "96%"]
    assert lines[3].split() == ["AWF", "cp-awf", "4", "101.0%"]


def test_cp_schedulers_get_the_per_round_limit_and_offline_windows_their_own() -> None:
    cp_af = make_scheduler("cp-af-plus", 0.7)
    assert isinstance(cp_af, CpScheduler) and cp_af.time_limit == 0.7
    config = StudyConfig(cp_jobs=3, offline_jobs=3, time_limit=0.3, offline_time_limit=0.4,
                         schedulers=("cp-af", "cp-offline-af"))
    limits = {r["scheduler"]: r["time_limit"] for r in run_study(tiny(), config).runs if "time_limit" in r}
    assert limits == {"cp-af": 0.3, "cp-offline-af": 0.4}


def test_offline_cp_optimises_its_metric_hinted_with_the_list_reg_schedule_of_its_window(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[tuple[Objective, tuple[int, ...]]] = []

    def fake(window: Workload, objective: Objective, reference: Sequence[int], time_limit: float) -> OfflineResult:
        seen.append((objective, tuple(reference)))
        return OfflineResult(tuple(reference), "REFERENCE", 0.0)

    monkeypatch.setattr(study, "solve_offline", fake)
    window = tiny().prefix(5)
    run_scheduler(window, "cp-offline-bsld", "requested", 1.0)
    # List-REG with actual runtimes on R = 4 (sizes 3, 3, 4, 1, 2; runtimes 10, 5, 3, 20, 2; submits 0-4):
    # job 0 [0, 10); job 1 reserved [10, 15), job 2 [15, 18); job 3 (1 node, 20 s) cannot use the spare node
    # from 3 without overlapping job 2's 4-node slot, so it starts at 18, and job 4 (2 nodes) beside it at 18
    assert seen == [(Objective.BSLD, (0, 10, 15, 18, 18))]


def test_the_study_tells_of_each_run_before_it_starts_once_per_scheduler_and_prefix() -> None:
    jobs = tuple(Job(id=i, submit=i, runtime=2 + i % 3, size=1 + i % 2, requested=5) for i in range(12))
    told: list[tuple[str, int]] = []
    run_study(Workload(jobs=jobs, nodes=2), StudyConfig(list_jobs=12, schedulers=("saf-conservative", "easy")),
              lambda name, n: told.append((name, n)))
    assert sorted(told) == [("easy", 12), ("fcfs-conservative", 12), ("saf-conservative", 12)]
