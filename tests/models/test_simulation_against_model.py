"""The simulation driver, the named workloads and the sweep, against docs/model.md and docs/workloads-and-sows.md."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cli.commands.welfare import welfare_task
from cli.main import main
from mechanism.engine import Engine, Quote, RoundReport
from mechanism.sow import Signal, SoW
from models.simulation import drive, run_simulation
from models.sweep import run_tasks
from models.workloads import make_workload, parse_workload

PLATFORM = {"C": 2, "C_m": 2, "D_m": 2, "S_m": 4, "H": 10.0, "epsilon": 0.1, "eps0": 0.05, "delta0": 0.05,
            "seed": 1, "samples": 200}


class Recorder:
    """The engine, with every call the driver makes logged as (round, call, job)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.log: list[tuple[int, str, str]] = []

    def submit(self, job_id: str, sow: SoW) -> Quote:
        self.log.append((self.engine.now, "submit", job_id))
        return self.engine.submit(job_id, sow)

    def report_arrival(self, job_id: str, signal: Signal) -> Any:
        self.log.append((self.engine.now, "arrive", job_id))
        return self.engine.report_arrival(job_id, signal)

    def report_completion(self, job_id: str) -> Any:
        self.log.append((self.engine.now, "complete", job_id))
        return self.engine.report_completion(job_id)

    def advance(self) -> RoundReport:
        self.log.append((self.engine.now, "advance", ""))
        return self.engine.advance()


def recorded(doc: dict[str, Any]) -> tuple[Recorder, Any]:
    w = parse_workload(doc)
    rec = Recorder(Engine(w.platform, oracle="exact"))
    return rec, drive(w, rec)


def test_overload_cancels_the_newest_job_and_only_the_completed_one_pays() -> None:
    """A (c=2, born 0) runs 1 or 2 rounds from 0; B (c=2, born 0, arrives at 1) is quoted start 1 at a 50 % risk
    (U = 0.5 (10 - price) beats V = 1 at start 2). A really runs 2 rounds: in round 1 the load is 4 > C = 2, so
    B, the newest, is cancelled. Welfare V_A = 10; revenue pi_0(0, 2, 2) = 2 (p(0) + p(0)) = 2 (1/4 + 1/4) = 1;
    busy node-rounds 2 + 2 over C x rounds = 2 x 2."""
    doc = {"platform": PLATFORM, "jobs": [
        {"id": "A", "birth": 0, "concurrency": 2, "value_steps": [[4, 10.0]],
         "outcomes": [[0, 1, 0.5, None], [0, 2, 0.5, None]], "realized": [0, 2]},
        {"id": "B", "birth": 0, "concurrency": 2, "value_steps": [[2, 10.0], [4, 1.0]],
         "outcomes": [[1, 1, 1.0, None]], "realized": [1, 1]}]}
    rec, r = recorded(doc)
    # submissions, then arrivals, then completions (of the round's last occupied round s + d - 1), then advance
    assert rec.log == [(0, "submit", "A"), (0, "submit", "B"), (0, "arrive", "A"), (0, "advance", ""),
                       (1, "complete", "A"), (1, "arrive", "B"), (1, "complete", "B"), (1, "advance", "")]
    assert [(e.round, e.type, e.job) for e in r.events if e.type != "quote"] == [
        (0, "arrive", "A"), (0, "start", "A"), (1, "arrive", "B"), (1, "cancel", "B"), (1, "complete", "A")]
    assert [(j.id, j.state, j.start, j.failure_raw) for j in r.jobs] == [("A", "completed", 0, 0.0),
                                                                           ("B", "cancelled", 1, 0.5)]
    s = r.summary()
    assert (s["welfare"], s["revenue"], s["utility"], s["rounds"], s["utilization"]) == (10.0, 1.0, 9.0, 2, 1.0)
    assert (s["completed"], s["cancelled"], s["evicted"], s["expired"], s["not_scheduled"]) == (1, 1, 0, 0, 0)


def test_idle_rounds_before_the_first_birth_count_in_the_utilisation() -> None:
    """rounds = round 0 through the round the last job ends; a job born at 2 running 1 round on C = 2 nodes with
    c = 1: 1 busy node-round / (2 x 3)."""
    doc = {"platform": PLATFORM, "jobs": [{"id": "a", "birth": 2, "concurrency": 1, "value_steps": [[4, 5.0]],
                                           "outcomes": [[0, 1, 1.0, None]], "realized": [0, 1]}]}
    r = run_simulation(parse_workload(doc))
    assert (r.rounds, r.busy_node_rounds, r.utilization, r.running) == (3, 1, 1 / 6, [0, 0, 1])


def test_a_duration_shorter_than_declared_completes_and_pays_for_the_rounds_it_ran() -> None:
    """Outside the support but at a declared arrival: the job completes at s + d with V(s + d), charged
    pi_b(s, c, d) for its realized d (here 1 x p(0) = 1 / (2 D_m) = 1/4)."""
    doc = {"platform": PLATFORM, "jobs": [{"id": "a", "birth": 0, "concurrency": 1, "value_steps": [[4, 5.0]],
                                           "outcomes": [[0, 2, 1.0, None]], "realized": [0, 1]}]}
    rec, r = recorded(doc)
    assert (0, "complete", "a") in rec.log and r.rejected_reports == 0
    done = [e for e in r.events if e.type == "complete"]
    assert [(e.data["start"], e.data["duration"], e.data["value"], e.data["charge"]) for e in done] == [
        (0, 1, 5.0, 0.25)]


def test_a_realized_outcome_with_an_undeclared_label_is_refused_and_expires() -> None:
    """Explicit signals: the realized (0, 2) is not declared, so it has no label; (0, None) is not a declared
    group, so the arrival report is refused and the job expires at its last declared arrival."""
    doc = {"platform": PLATFORM, "jobs": [{"id": "a", "birth": 0, "concurrency": 1, "value_steps": [[4, 5.0]],
                                           "outcomes": [[0, 1, 0.5, "x"], [1, 1, 0.5, "y"]], "realized": [0, 2]}]}
    r = run_simulation(parse_workload(doc))
    assert r.rejected_reports == 1 and r.counts["expired"] == 1
    assert [(e.round, e.type) for e in r.events if e.type != "quote"] == [(1, "expire")]


@pytest.mark.parametrize("name", ["toy", "pipelines", "overload"])
def test_named_workload_runs_add_up(name: str) -> None:
    """Every job ends once; welfare = sum of V(s + d) over completions; revenue = their charges."""
    w = make_workload(name, seed=3, **({"jobs": 15} if name == "toy" else {"rounds": 12}))
    r = run_simulation(w)
    assert sum(r.counts[k] for k in ("completed", "evicted", "cancelled", "expired", "not_scheduled")) == len(w.jobs)
    done = [e for e in r.events if e.type == "complete"]
    by_id = {j.id: j for j in w.jobs}
    assert len(done) == r.counts["completed"]
    for e in done:
        job = by_id[e.job]
        assert e.data["duration"] == job.duration and e.round == e.data["start"] + job.duration - 1
        assert e.data["value"] == job.sow.value(e.data["start"] + job.duration - job.birth)
    assert r.welfare == pytest.approx(sum(e.data["value"] for e in done))
    assert r.revenue == pytest.approx(sum(e.data["charge"] for e in done))
    assert r.busy_node_rounds == sum(r.running) and len(r.running) == r.rounds


@pytest.mark.parametrize("name", ["toy", "pipelines", "overload"])
def test_the_same_seed_gives_the_same_workload_and_every_sow_fits_its_platform(name: str) -> None:
    a, b, other = (make_workload(name, seed=s, load=1.5) for s in (5, 5, 6))
    assert a == b and a != other
    for j in a.jobs:
        j.sow.check_bounds(a.platform)
        assert (j.arrival_offset, j.duration) in {(o.arrival_offset, o.duration) for o in j.sow.outcomes}


def test_toy_is_seed_002_section_1_1() -> None:
    """Arrival k < X w.p. 2^(k-X), else X; one node, one round; worth 2^(X-k) when it runs in round k (f = k+1)."""
    w = make_workload("toy", seed=0)
    X = 6
    sow = w.jobs[0].sow
    assert sorted((o.arrival_offset, o.duration, o.probability) for o in sow.outcomes) == [
        *((k, 1, 2.0 ** (k - X)) for k in range(X)), (X, 1, 2.0 ** -X)]
    assert [sow.value(k + 1) for k in range(X + 2)] == [2.0 ** (X - k) for k in range(X + 1)] + [0.0]
    assert sow.concurrency == 1 and w.platform.H == 2.0 ** X and w.platform.C == X + 2


@pytest.mark.parametrize("load", [0.5, 1.0, 2.0])
def test_load_scales_the_toy_job_rate(load: float) -> None:
    w = make_workload("toy", seed=0, load=load)
    births = np.array([j.birth for j in w.jobs])
    assert len(w.jobs) == round(40 * load) and births.max() < 40
    assert np.bincount(births).mean() == pytest.approx(load, rel=0.05)


def test_pipelines_are_as_the_readme_describes() -> None:
    """Every 8-16 rounds, three rounds ahead +-2, concurrency 1-8, duration revealed for half, half value late."""
    w = make_workload("pipelines", seed=2)
    runs: dict[str, list[int]] = {}
    for j in w.jobs:
        runs.setdefault(j.id.split("-")[0], []).append(j.birth)
        assert {o.arrival_offset for o in j.sow.outcomes} == {1, 2, 3, 4, 5}
        assert j.sow.concurrency in (1, 2, 4, 8)
        (deadline, full), (last, half) = j.sow.value_steps
        assert deadline < last == w.platform.S_m and half == pytest.approx(max(1.0, full / 2))
    assert len(runs) == 8
    assert all(len(set(np.diff(b))) == 1 and 8 <= np.diff(b)[0] <= 16 for b in runs.values() if len(b) > 1)
    modes = {j.id.split("-")[0]: j.sow.signal_mode for j in w.jobs}
    assert sorted(modes.values()) == ["duration"] * 4 + ["none"] * 4


def test_a_written_workload_with_labels_and_outside_support_outcomes_reads_back() -> None:
    doc = {"platform": {**PLATFORM, "C_m": 2, "D_m": 3, "S_m": 8}, "jobs": [
        {"id": "a", "birth": 0, "concurrency": 1, "value_steps": [[6, 9.0]],
         "outcomes": [[0, 1, 1 / 3, "x"], [0, 2, 1 / 3, "y"], [1, 3, 1 / 3, None]], "realized": [0, 2]},
        {"id": "b", "birth": 1, "concurrency": 2, "signal_mode": "duration", "value_steps": [[3, 9.0], [8, 1.0]],
         "outcomes": [[0, 1, 0.5, None], [0, 2, 0.5, None]], "realized": [0, 3]}]}
    from models.workloads import workload_document

    w = parse_workload(doc)
    assert parse_workload(json.loads(json.dumps(workload_document(w)))) == w


def test_sweep_rows_do_not_depend_on_the_number_of_workers() -> None:
    tasks = [{"workload": "toy", "load": load, "seed": s, "solver": "cpsat", "time_limit": 0.5}
             for load in (0.5, 1.0) for s in (0, 1)]
    one = run_tasks(welfare_task, tasks, processes=1, progress=False)
    assert run_tasks(welfare_task, tasks, processes=2, progress=False) == one
    assert [(r["load"], r["seed"]) for r in one] == [(0.5, 0), (0.5, 1), (1.0, 0), (1.0, 1)]


def test_the_progress_bar_goes_to_stderr_and_json_alone_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    main(["bench", "welfare", "--workload", "toy", "--loads", "1", "--seeds", "2", "--processes", "1",
          "--time-limit", "0.5", "--json"])
    out, err = capsys.readouterr()
    assert json.loads(out)["seeds"] == 2 and "welfare toy" in err and "2/2" in err


def test_an_overrun_is_evicted_in_the_last_round_of_the_longest_declared_duration() -> None:
    """docs/model.md section 3: started at 0, declared at most 2 rounds, still running at the end of round 1: evicted
    then, with no value and no charge (its completion report would come in round 2, too late)."""
    doc = {"platform": PLATFORM, "jobs": [{"id": "a", "birth": 0, "concurrency": 1, "value_steps": [[4, 5.0]],
                                           "outcomes": [[0, 1, 0.5, None], [0, 2, 0.5, None]], "realized": [0, 3]}]}
    rec, r = recorded(doc)
    assert [(e.round, e.type, e.data.get("reason")) for e in r.events if e.type in ("evict", "complete")] == [
        (1, "evict", "overrun")]
    assert (0, "complete", "a") not in rec.log and r.rounds == 2 and (r.welfare, r.revenue) == (0.0, 0.0)


@st.composite
def tiny_files(draw: st.DrawFn) -> dict[str, Any]:
    """Up to five jobs on C = 2 nodes, some realized outside their declared support."""
    jobs = []
    for i in range(draw(st.integers(1, 5))):
        pairs = draw(st.lists(st.tuples(st.integers(0, 2), st.integers(1, 2)), min_size=1, max_size=3, unique=True))
        realized = draw(st.sampled_from([list(p) for p in pairs] + [[1, 3], [3, 1], [0, 1]]))
        jobs.append({"id": f"j{i}", "birth": draw(st.integers(0, 3)), "concurrency": draw(st.integers(1, 2)),
                     "value_steps": [[2, 9.0], [4, 3.0]], "realized": realized,
                     "outcomes": [[a, d, 1 / len(pairs), None] for a, d in pairs]})
    return {"platform": {**PLATFORM, "D_m": 3}, "jobs": sorted(jobs, key=lambda j: j["birth"])}


@settings(max_examples=40, deadline=None)
@given(tiny_files())
def test_every_job_ends_once_and_completions_follow_the_occupancy_convention(doc: dict[str, Any]) -> None:
    w = parse_workload(doc)
    rec, r = recorded(doc)
    ends = [e for e in r.events if e.type in ("complete", "evict", "cancel", "expire", "not_scheduled")]
    assert sorted(e.job for e in ends) == sorted(j.id for j in w.jobs) and sum(r.counts.values()) == len(w.jobs)
    assert r.rounds == max(e.round for e in ends) + 1 == len(r.running)
    by_id = {j.id: j for j in w.jobs}
    for e in (e for e in ends if e.type == "complete"):
        job, s = by_id[e.job], e.data["start"]
        assert e.round == s + job.duration - 1 and (e.round, "complete", e.job) in rec.log
        assert e.data["value"] == job.sow.value(s + job.duration - job.birth)
    assert r.welfare == sum(e.data["value"] for e in ends if e.type == "complete")
    assert r.revenue == sum(e.data["charge"] for e in ends if e.type == "complete")
    assert r.utilization == sum(r.running) / (2 * r.rounds) <= 1.0
    # the arrival of every job is reported in its realized round, after the round's submissions
    for j in w.jobs:
        reports = [t for t, call, job_id in rec.log if call == "arrive" and job_id == j.id]
        assert reports in ([], [j.birth + j.arrival_offset])
        assert rec.log.index((j.birth, "submit", j.id)) < min(
            (i for i, (t, call, _) in enumerate(rec.log) if t == j.birth and call == "arrive"), default=len(rec.log))
