"""In-process simulation: totals, workloads, W.json files and the `sowsched simulate` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.main import main
from models.simulation import run_simulation
from models.workloads import job_lines, load_workload_file, make_workload, parse_workload, workload_document

PLATFORM = {"C": 4, "C_m": 2, "D_m": 3, "S_m": 8, "H": 50.0, "epsilon": 0.1, "eps0": 0.05, "delta0": 0.05,
            "seed": 1, "samples": 500}


def job(id_: str, birth: int, realized: list[int], **kw: object) -> dict[str, object]:
    base: dict[str, object] = {"id": id_, "birth": birth, "concurrency": 1, "value_steps": [[6, 20.0]],
                               "outcomes": [[0, 1, 0.5, None], [1, 2, 0.5, None]], "realized": realized}
    base.update(kw)
    return base


def test_totals_are_consistent_with_job_records() -> None:
    r = run_simulation(make_workload("overload", seed=2, rounds=15))
    done = [j for j in r.jobs if j.state == "completed"]
    assert r.welfare == pytest.approx(sum(j.value for j in done))
    assert r.revenue == pytest.approx(sum(j.charge for j in done))
    assert r.utility == pytest.approx(r.welfare - r.revenue)
    assert sum(r.counts.values()) == len(r.jobs)
    assert 0.0 <= r.utilization <= 1.0
    assert r.busy_node_rounds == sum(r.running)


def test_overload_workload_evicts_or_cancels() -> None:
    r = run_simulation(make_workload("overload", seed=0))
    assert r.counts["evicted"] + r.counts["cancelled"] > 0


def test_pipelines_workload_completes_most_jobs() -> None:
    r = run_simulation(make_workload("pipelines", seed=0, rounds=40))
    assert r.counts["completed"] >= 0.8 * len(r.jobs)


def test_workload_file_jobs_in_the_same_round_are_submitted_in_file_order() -> None:
    doc = {"platform": PLATFORM, "jobs": [job("b", 0, [0, 1]), job("a", 0, [1, 2]), job("c", 1, [0, 1])]}
    r = run_simulation(parse_workload(doc))
    quotes = [e.job for e in r.events if e.type == "quote"]
    assert quotes == ["b", "a", "c"]
    assert r.counts["completed"] == 3


def test_realized_outcome_outside_the_support_is_refused_and_the_job_expires() -> None:
    # Declared arrivals 0 or 2; it really arrives at 1: the report is refused, and after round 2 it expires.
    doc = {"platform": PLATFORM, "jobs": [job("x", 0, [1, 1], outcomes=[[0, 1, 0.5, None], [2, 1, 0.5, None]])]}
    r = run_simulation(parse_workload(doc))
    assert r.rejected_reports == 1 and r.counts["expired"] == 1


def test_duration_longer_than_declared_is_evicted_as_overrun() -> None:
    doc = {"platform": PLATFORM, "jobs": [job("x", 0, [0, 3], outcomes=[[0, 1, 0.5, None], [0, 2, 0.5, None]])]}
    r = run_simulation(parse_workload(doc))
    assert r.counts["evicted"] == 1 and r.revenue == 0.0


@pytest.mark.parametrize(
    ("doc", "match"),
    [
        (
            {"platform": PLATFORM, "jobs": [job("a", 0, [0, 1]), job("a", 1, [0, 1])]},
            r"jobs\[1\]\.id='a' is used twice",
        ),
        (
            {"platform": PLATFORM, "jobs": [job("a", 0, [0, 1], concurrency=3)]},
            r"(?s)jobs\[0\] \(id 'a'\):.*concurrency=3 exceeds the bound C_m=2",
        ),
        (
            {"platform": PLATFORM, "jobs": [job("a", 0, [0, 0])]},
            r"realized=\[0, 0\] needs arrival_offset >= 0 and duration >= 1",
        ),
        ({"platform": {**PLATFORM, "C": 0}, "jobs": []}, r"platform\.C"),
        ({"platform": PLATFORM, "jobs": [job("a", -1, [0, 1])]}, r"birth"),
        (
            {"platform": PLATFORM, "jobs": [job("a", 10**6 + 1, [0, 1])]},  # a simulation plays every round up to it
            r"jobs\[0\]\.birth \(value 1000001\): Input should be less than or equal to 1000000",
        ),
        (
            {"platform": PLATFORM, "jobs": [job("a", 0, [10**9, 1])]},
            r"realized=\[1000000000, 1\] exceeds the bound 1000000 \(rounds\)",
        ),
        ({"platform": PLATFORM}, r"jobs"),
    ],
)
def test_bad_workload_files_are_rejected_with_the_field(doc: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        parse_workload(doc)


def test_invalid_json_reports_line_and_column(tmp_path: Path) -> None:
    f = tmp_path / "w.json"
    f.write_text('{"platform": {\n  "C": 4,,\n}}')
    with pytest.raises(ValueError, match="not valid JSON at line 2 column 10"):
        load_workload_file(f)


def test_a_bad_job_in_a_file_is_named_with_the_file_and_its_line(tmp_path: Path) -> None:
    f = tmp_path / "w.json"
    jobs = [job("a", 0, [0, 1]), job("b", 1, [0, 1]), job("c", 2, [0, 1], concurrency=3)]
    f.write_text(json.dumps({"platform": PLATFORM, "jobs": jobs}, indent=1))
    line = [i + 1 for i, text in enumerate(f.read_text().splitlines()) if text == "  {"][2]  # the third job's "{"
    with pytest.raises(ValueError, match=rf"^{f}: line {line}: jobs\[2\] \(id 'c'\):.*concurrency=3 exceeds the bound"):
        load_workload_file(f)


@pytest.mark.parametrize(("text", "lines"), [
    ('{"jobs": [{"id": "a"},\n\n {"id": "b"}], "platform": {}}', [1, 3]),
    ('{"platform": {"jobs": [{}]},\n "jobs": [\n{"x": [{"jobs": [1]}]}, 7]}', [3, 3]),  # the top-level key only
    ('{"jobs": [1], "jobs": [\n2]}', [2]),  # the last "jobs", as json.loads reads it
    ('{"jobs": []}', []), ('[{"jobs": [1]}]', []), ('{}', []),
])
def test_job_lines_are_where_each_top_level_job_starts(text: str, lines: list[int]) -> None:
    assert job_lines(text) == lines


@pytest.mark.parametrize(("name", "load", "match"), [
    ("nope", 1.0, "workload='nope' is not one of toy, pipelines, overload"),
    ("toy", 0.0, r"load=0.0 is outside \(0, 100\]"),
    ("overload", 1e6, r"load=1000000.0 is outside \(0, 100\]: it scales the job rate"),
    ("toy", float("nan"), r"load=nan is outside \(0, 100\]"),
])
def test_bad_workload_names_and_loads_are_rejected(name: str, load: float, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        make_workload(name, load=load)


def test_cli_simulate_prints_the_summary_and_writes_events(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = {"platform": PLATFORM, "jobs": [job("b", 0, [0, 1]), job("a", 1, [1, 2])]}
    w = tmp_path / "w.json"
    w.write_text(json.dumps(doc))
    out = tmp_path / "ev.jsonl"
    assert main(["simulate", "--workload-file", str(w), "--events", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    for key in ("welfare", "revenue", "utility", "completed", "evicted", "cancelled", "expired", "not_scheduled",
                "utilization"):
        assert key in summary
    events = [json.loads(line) for line in out.read_text().splitlines()]
    assert {"round", "type", "job"} <= set(events[0])
    quote = next(e for e in events if e["type"] == "quote")
    assert {"plan", "utility"} <= set(quote) and {"arrival", "signal", "start"} == set(quote["plan"][0])
    assert all("charge" in e for e in events if e["type"] == "complete")


def test_cli_simulate_reports_a_bad_file_clearly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--workload-file", str(tmp_path / "missing.json"), "--json"]) == 2
    assert "No such file" in capsys.readouterr().err


def test_exact_oracle_runs_a_small_workload_and_agrees_roughly_with_mc() -> None:
    doc = {"platform": {**PLATFORM, "samples": 4000},
           "jobs": [job(f"j{i}", i // 2, [i % 2, 1 + i % 2]) for i in range(6)]}
    w = parse_workload(doc)
    exact, mc = run_simulation(w, oracle="exact"), run_simulation(w, oracle="mc")
    assert exact.counts["completed"] + exact.counts["evicted"] + exact.counts["cancelled"] > 0
    assert abs(exact.welfare - mc.welfare) <= 0.5 * max(exact.welfare, 1.0)


def test_a_bad_file_is_one_line_naming_each_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = tmp_path / "w.json"
    w.write_text(json.dumps({"platform": {**PLATFORM, "C": 0}, "jobs": [job("a", 0, [0, 0])]}))
    assert main(["simulate", "--workload-file", str(w), "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "errors.pydantic.dev" not in err
    assert "platform.C (value 0): Input should be greater than or equal to 1" in err
    assert "jobs[0].realized" in err


def test_a_job_outside_the_bounds_in_a_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = tmp_path / "w.json"
    w.write_text(json.dumps({"platform": PLATFORM, "jobs": [job("a", 0, [0, 1], concurrency=0)]}))
    assert main(["simulate", "--workload-file", str(w)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "jobs[0] (id 'a'): concurrency (value 0): Input should be greater" in err


def test_load_with_a_workload_file_is_refused_naming_both_flags(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    w = tmp_path / "w.json"
    w.write_text(json.dumps({"platform": PLATFORM, "jobs": [job("a", 0, [0, 1])]}))
    assert main(["simulate", "--workload-file", str(w), "--load", "2"]) == 2
    assert f"--load 2.0 does not apply with --workload-file {w}" in capsys.readouterr().err


def test_an_unwritable_events_file_is_refused_before_the_run(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--workload", "toy", "--events", str(tmp_path / "no" / "ev.jsonl"), "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "sowsched simulate: [Errno 2] No such file or directory" in err


def test_a_negative_seed_is_refused_by_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["simulate", "--workload", "toy", "--seed", "-1"])
    assert info.value.code == 2 and "argument --seed: -1 is below the bound 0" in capsys.readouterr().err


@pytest.mark.parametrize(("name", "params"), [("toy", {"jobs": 12}), ("pipelines", {"rounds": 24}),
                                              ("overload", {"rounds": 10})])
def test_a_workload_written_as_w_json_reads_back_as_the_same_workload_and_run(name: str, params: dict) -> None:
    w = make_workload(name, seed=4, **params)
    doc = json.loads(json.dumps(workload_document(w)))  # through JSON text, as a file holds it
    back = parse_workload(doc, name=w.name)
    assert back == w
    a, b = run_simulation(w), run_simulation(back)
    assert a.summary() == b.summary() and [e.to_dict() for e in a.events] == [e.to_dict() for e in b.events]


def test_cli_simulate_writes_the_workload_it_simulates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "W.json"
    assert main(["simulate", "--workload", "overload", "--seed", "2", "--load", "0.5", "--json", "--no-offline",
                 "--write-workload", str(out)]) == 0
    named = json.loads(capsys.readouterr().out)
    assert main(["simulate", "--workload-file", str(out), "--json", "--no-offline"]) == 0
    from_file = json.loads(capsys.readouterr().out)
    assert {k: v for k, v in from_file.items() if k != "workload"} == {
        k: v for k, v in named.items() if k != "workload"
    }


def test_cli_simulate_text_names_the_exact_oracle_instead_of_monte_carlo_samples(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--workload", "toy", "--oracle", "exact", "--no-offline"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert head.endswith("on C=8 nodes (exact failure oracle)") and "Monte Carlo" not in head
    assert main(["simulate", "--workload", "toy", "--no-offline"]) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith("(N=2000 Monte Carlo samples)")


def test_cli_simulate_reports_the_clairvoyant_optimum_the_bench_finds_and_the_ratio_to_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    from models.offline.report import OfflineConfig, evaluate

    assert main(["simulate", "--workload", "pipelines", "--seed", "1", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    offline = summary["offline"]
    row = evaluate(make_workload("pipelines", seed=1), 1.0, 1, OfflineConfig(time_limit=5.0))  # `bench welfare`'s row
    assert (offline["value"], offline["bound"], offline["status"]) == (
        row["offline_value"],
        row["offline_bound"],
        "optimal",
    )
    assert offline["value"] >= summary["welfare"] > 0
    assert offline["ratio"] == pytest.approx(offline["value"] / summary["welfare"]) == row["ratio"]
    assert main(["simulate", "--workload", "pipelines", "--seed", "1"]) == 0
    text = capsys.readouterr().out
    assert f"offline opt  {offline['value']:12.2f}   (the clairvoyant optimum of the same realization, CP-SAT, " \
           "proven optimal)" in text
    assert f"ratio        {offline['ratio']:12.3f}   (offline / mechanism welfare: the mechanism reached " \
           f"{100 / offline['ratio']:.1f} %)" in text


def test_cli_simulate_shows_an_unproven_optimum_with_its_bound_and_the_ratio_range(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--workload", "overload", "--seed", "0", "--offline-time-limit", "0.05", "--json"]) == 0
    offline = json.loads(capsys.readouterr().out)["offline"]
    assert offline["status"] == "feasible" and offline["bound"] > offline["value"]
    assert offline["ratio_bound"] > offline["ratio"]
    from cli.commands.simulate import offline_lines

    assert offline_lines(offline)[1] == (
        f"  ratio        {offline['ratio']:12.3f}   (up to {offline['ratio_bound']:.3f} "
        f"by the bound: the mechanism reached {100 / offline['ratio_bound']:.1f}-"
        f"{100 / offline['ratio']:.1f} %)"
    )


def test_cli_simulate_without_offline_skips_it_and_a_bad_limit_is_a_usage_error(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--workload", "toy", "--json", "--no-offline"]) == 0
    assert json.loads(capsys.readouterr().out)["offline"] is None
    with pytest.raises(SystemExit) as exit_:
        main(["simulate", "--workload", "toy", "--offline-time-limit", "0"])
    assert exit_.value.code == 2
    assert "--offline-time-limit" in capsys.readouterr().err


def test_a_file_nested_too_deeply_for_the_json_parser_is_a_one_line_error(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    w = tmp_path / "w.json"
    w.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match=rf"^{w}: not valid JSON: nested too deeply"):
        load_workload_file(w)
    assert main(["simulate", "--workload-file", str(w), "--json", "--no-offline"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err


def test_a_file_that_is_not_utf8_is_an_error_naming_the_file(tmp_path: Path) -> None:
    w = tmp_path / "w.json"
    w.write_bytes(b'{"jobs": [], "platform": "\xff"}')
    with pytest.raises(ValueError, match=rf"^{w}: not UTF-8 text at byte 26: invalid start byte$"):
        load_workload_file(w)


@pytest.mark.parametrize(("offline", "ratio_line"), [
    # nothing earned by either, proven: the ratio is 1
    ({"status": "optimal", "value": 0.0, "bound": 0.0, "gap": 0.0, "ratio": 1.0, "ratio_bound": 1.0},
     "  ratio               1.000   (offline / mechanism welfare: the mechanism reached 100.0 %)"),
    # the mechanism earned nothing, the optimum something: unbounded, proven or not
    ({"status": "optimal", "value": 5.0, "bound": 5.0, "gap": 0.0, "ratio": None, "ratio_bound": None},
     "  ratio               inf   (the mechanism earned nothing the optimum could)"),
    ({"status": "feasible", "value": 5.0, "bound": 7.0, "gap": 2 / 7, "ratio": None, "ratio_bound": None},
     "  ratio               inf   (the mechanism earned nothing the optimum could)"),
    # neither earned anything, but the optimum is unproven and its bound is positive: 1, up to unbounded
    ({"status": "feasible", "value": 0.0, "bound": 7.0, "gap": 1.0, "ratio": 1.0, "ratio_bound": None},
     "  ratio               1.000   (up to inf by the bound: the mechanism and the best schedule found earned "
     "nothing)"),
])
def test_offline_lines_at_the_edges_of_the_ratio(offline: dict[str, object], ratio_line: str) -> None:
    from cli.commands.simulate import offline_lines

    assert offline_lines({"solver": "cpsat", **offline})[1] == ratio_line


def test_overload_demands_about_2_8_times_what_its_16_nodes_hold_and_load_scales_it() -> None:
    """Poisson(4 load) jobs per round, mean concurrency 14/3, mean realized duration 1.5 + 3 * 0.3 = 2.4: 44.8
    node-rounds a round at load 1, 2.8 times C = 16 (docs/workloads-and-sows.md)."""
    def demand(load: float) -> float:
        ws = [make_workload("overload", seed=s, load=load, rounds=40) for s in range(40)]
        return sum(j.sow.concurrency * j.duration for w in ws for j in w.jobs) / (40 * 16 * 40)

    assert 2.6 <= demand(1.0) <= 3.0
    assert 5.2 <= demand(2.0) <= 6.0


@pytest.mark.parametrize("source", ["workload", "file", "trace"])
def test_simulate_json_reports_the_platform_seed_it_ran_with(source: str, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from tests.cli.commands.test_predict import write_trace

    w = tmp_path / "w.json"
    w.write_text(json.dumps({"platform": PLATFORM, "jobs": [job("a", 0, [0, 1]), job("b", 1, [1, 2])]}))
    args = {"workload": ["--workload", "toy"], "file": ["--workload-file", str(w)],
            "trace": ["--trace", str(write_trace(tmp_path, jobs=10)), "--jobs", "10", "--round-seconds", "60"]}[source]
    seeds = {}
    for seed in (None, 7, 11):
        assert main(["simulate", *args, *([] if seed is None else ["--seed", str(seed)]), "--no-offline",
                     "--json"]) == 0
        seeds[seed] = json.loads(capsys.readouterr().out)["seed"]
    # without --seed: a named workload's 0, the file's platform.seed, a trace's 0
    assert seeds == {None: PLATFORM["seed"] if source == "file" else 0, 7: 7, 11: 11}


@pytest.mark.parametrize("source", [["--workload", "toy"], ["--workload-file", "w.json"]])
def test_a_seed_beyond_the_platform_bound_is_refused_by_the_parser(source: list[str],
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    # platform.seed < 2**63: a named workload failed with pydantic's multi-line dump, a file ran with the seed
    with pytest.raises(SystemExit) as info:
        main(["simulate", *source, "--seed", str(2**63), "--no-offline"])
    assert info.value.code == 2
    assert f"argument --seed: {2**63} exceeds the bound {2**63 - 1}" in capsys.readouterr().err


def test_a_job_id_the_engine_refuses_is_refused_when_the_file_is_read(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    # it passed the file's checks, then the engine's submit raised EngineError: a traceback
    w = tmp_path / "w.json"
    w.write_text(json.dumps({"platform": PLATFORM, "jobs": [job("a", 0, [0, 1]), job("b\nc", 0, [0, 1])]}))
    with pytest.raises(ValueError, match=rf"^{w}: line 1: jobs\[1\]\.id: job id 'b\\nc' has a character that is not "
                                         "printable at position 1$"):
        load_workload_file(w)
    assert main(["simulate", "--workload-file", str(w), "--no-offline"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def _too_large_for_the_exact_oracle(tmp_path: Path) -> Path:
    """Five jobs of 12 outcomes born together: the fifth would need 12^4 > 20,000 joint outcomes."""
    outcomes = [[a, d, 1 / 12, None] for a in range(4) for d in range(1, 4)]
    w = tmp_path / "w.json"
    w.write_text(json.dumps({"platform": PLATFORM, "jobs": [job(f"j{i}", 0, [3, 1], outcomes=outcomes)
                                                            for i in range(5)]}))
    return w


def test_an_instance_too_large_for_the_exact_oracle_is_one_line_and_exit_1(tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    w = _too_large_for_the_exact_oracle(tmp_path)
    assert main(["simulate", "--workload-file", str(w), "--oracle", "exact", "--json"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("sowsched simulate: exact oracle needs 20736 joint outcomes of 4 earlier jobs, above the "
                          "bound max_combinations=20000")


def test_a_run_that_fails_leaves_an_earlier_events_file_as_it_was(tmp_path: Path) -> None:
    w, events = _too_large_for_the_exact_oracle(tmp_path), tmp_path / "ev.jsonl"
    events.write_text("earlier run\n")
    assert main(["simulate", "--workload-file", str(w), "--oracle", "exact", "--events", str(events)]) == 1
    assert events.read_text() == "earlier run\n"


def test_a_run_that_fails_creates_no_events_file(tmp_path: Path) -> None:
    w, events = _too_large_for_the_exact_oracle(tmp_path), tmp_path / "ev.jsonl"
    assert main(["simulate", "--workload-file", str(w), "--oracle", "exact", "--events", str(events)]) == 1
    assert not events.exists()


def test_an_events_path_that_is_a_directory_is_refused_before_the_run(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--workload", "toy", "--events", str(tmp_path), "--no-offline"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and f"sowsched simulate: [Errno 21] Is a directory: '{tmp_path}'" in err


@pytest.mark.parametrize("other", ["--workload-file", "--write-workload"])
def test_events_into_the_workload_file_are_refused_before_it_is_truncated(other: str, tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    w = tmp_path / "w.json"
    text = json.dumps({"platform": PLATFORM, "jobs": [job("a", 0, [0, 1])]})
    w.write_text(text)
    source = ["--workload-file", str(w)] if other == "--workload-file" else ["--workload", "toy", other, str(w)]
    assert main(["simulate", *source, "--events", str(tmp_path / "." / "w.json"), "--no-offline"]) == 2
    assert w.read_text() == text
    assert f"--events {tmp_path / '.' / 'w.json'} is the same file as {other} {w}" in capsys.readouterr().err


def test_an_events_path_that_is_a_symlink_to_a_file_not_yet_written_is_written_through_it(tmp_path: Path) -> None:
    # e.g. latest.jsonl -> runs/today.jsonl: the check must follow the link as the write does (open "x" on a
    # dangling link fails with "File exists")
    (tmp_path / "runs").mkdir()
    link = tmp_path / "latest.jsonl"
    link.symlink_to(tmp_path / "runs" / "today.jsonl")
    assert main(["simulate", "--workload", "toy", "--events", str(link), "--no-offline", "--json"]) == 0
    assert link.is_symlink() and (tmp_path / "runs" / "today.jsonl").read_text().count("\n") > 0


def test_an_events_write_that_fails_after_the_run_is_one_line_exit_1_and_keeps_the_earlier_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import cli.commands.simulate as sim
    events = tmp_path / "ev.jsonl"
    events.write_text("earlier run\n")
    real_replace = sim.os.replace

    def disk_full(src: str, dst: Path) -> None:
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(sim.os, "replace", disk_full)
    assert main(["simulate", "--workload", "toy", "--events", str(events), "--no-offline"]) == 1
    out, err = capsys.readouterr()
    assert (
        out == "" and err == f"sowsched simulate: cannot write --events {events}: [Errno 28] No space left on device\n"
    )
    assert events.read_text() == "earlier run\n" and sorted(p.name for p in tmp_path.iterdir()) == ["ev.jsonl"]
    monkeypatch.setattr(sim.os, "replace", real_replace)
    events.chmod(0o640)
    assert main(["simulate", "--workload", "toy", "--events", str(events), "--no-offline"]) == 0
    assert events.read_text().count("\n") > 1 and events.stat().st_mode & 0o777 == 0o640  # replaced, mode kept


def test_events_written_through_a_symbolic_link_replace_the_linked_file(tmp_path: Path) -> None:
    target, link = tmp_path / "real.jsonl", tmp_path / "link.jsonl"
    link.symlink_to(target)
    assert main(["simulate", "--workload", "toy", "--events", str(link), "--no-offline"]) == 0
    assert link.is_symlink() and target.read_text().count("\n") > 1
