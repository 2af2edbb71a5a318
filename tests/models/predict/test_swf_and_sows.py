"""The predictsim cleaning mode, .swf.gz reading, and the W.json export round trip."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import numpy as np
import pytest

from mechanism.platform import Platform
from models.data import KTH_SP2
from models.hpc.swf import PREDICTSIM_RULES, clean, load_workload, parse_swf, read_swf
from models.predict.sows import ExportConfig, export_sows, headroom_model, rounds_law, sow_document, trace_bounds
from models.predictive import Discrete
from models.workloads import parse_workload, workload_document
from tests.models.predict.conftest import make_table


def _line(job: int, submit: int, run: int, alloc: int, req_procs: int, req_time: int) -> str:
    return f"{job} {submit} 5 {run} {alloc} -1 -1 {req_procs} {req_time} -1 1 3 4 -1 1 -1 -1 -1"


def test_cleaning_drops_and_caps_jobs_as_predictsim_does() -> None:
    lines = ["; MaxProcs: 8",
             _line(1, 0, 0, 2, 2, 100),  # run time 0: dropped
             _line(2, 1, 10, 2, 2, -1),  # no requested time: dropped
             _line(3, 2, 10, -1, -1, 100),  # no processors at all: dropped
             _line(4, 3, 10, -1, 4, 100),  # size from requested processors
             _line(5, 4, 300, 20, -1, 100),  # requested missing: size from allocated, capped at 8; run capped at 100
             _line(6, 5, 10, 2, -1, 100),  # requested missing: size from allocated
             _line(7, 6, 10, 2, 3, 100)]  # both known: the requested count wins, as in pyss
    workload, report = clean(parse_swf(lines), mode="predictsim")
    assert set(report.counts) == set(PREDICTSIM_RULES)
    assert [(j.id, j.size, j.runtime, j.requested) for j in workload.jobs] == [
        (4, 4, 10, 100), (5, 8, 100, 100), (6, 2, 10, 100), (7, 3, 10, 100)]
    assert report.counts["dropped_nonpositive_runtime"] == 1 and report.counts["runtime_capped_to_requested"] == 1
    assert report.counts["size_from_allocated"] == 2 and report.counts["size_capped_to_machine"] == 1


def test_kth_sizes_follow_the_requested_processors() -> None:
    """219 KTH-SP2 records allocate other than they request; predictsim sizes them by the request."""
    workload, _ = load_workload(KTH_SP2, mode="predictsim")
    records = {r.job_number: r for r in read_swf(KTH_SP2).records}
    differ = [j for j in workload.jobs if records[j.id].allocated_processors != records[j.id].requested_processors]
    assert len(differ) == 219
    assert all(j.size == records[j.id].requested_processors for j in differ)


def test_unknown_cleaning_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="cleaning mode='bogus' must be one of"):
        clean(parse_swf(["; MaxProcs: 8"]), mode="bogus")


def test_gzip_reads_as_the_plain_file(tmp_path: Path) -> None:
    packed = tmp_path / "KTH-SP2.swf.gz"
    with open(KTH_SP2, "rb") as src, gzip.open(packed, "wb") as dst:
        shutil.copyfileobj(src, dst)
    assert read_swf(packed) == read_swf(KTH_SP2)
    assert load_workload(packed, mode="predictsim") == load_workload(KTH_SP2, mode="predictsim")


def test_kth_keeps_every_job_under_predictsim_rules() -> None:
    _, report = load_workload(KTH_SP2, mode="predictsim")
    assert report.kept == 28_481


def test_rounds_law_merges_and_caps() -> None:
    law = Discrete(np.array([30.0, 3600.0, 3700.0, 90_000.0]), np.array([[0.25, 0.25, 0.25, 0.25]]))
    # 30 s and 3600 s are round 1; 3700 s is round 2; 90000 s is capped at D_m = 5
    assert rounds_law(law, 0, 3600, 5) == [(1, 0.5), (2, 0.25), (5, 0.25)]


def test_export_round_trips_through_the_workload_parser() -> None:
    rng = np.random.default_rng(3)
    n = 60
    runtime = rng.integers(60, 20_000, n)
    table = make_table(np.cumsum(rng.integers(0, 2000, n)).tolist(), runtime.tolist(),
                       (runtime + rng.integers(0, 5000, n)).tolist(), rng.integers(0, 4, n).tolist(),
                       size=rng.integers(1, 100, n).tolist())
    doc = export_sows(table, 100, ExportConfig(round_seconds=1800, nodes=16, max_concurrency=8))
    workload = parse_workload(doc)
    again = workload_document(workload)
    assert again["platform"] == Platform(**doc["platform"]).model_dump(mode="json", exclude_none=True)
    for mine, back in zip(doc["jobs"], again["jobs"], strict=True):
        assert back["realized"] == mine["realized"] and back["birth"] == mine["birth"]
        assert back["concurrency"] == mine["concurrency"] <= 8
        assert [o[:3] for o in back["outcomes"]] == mine["outcomes"]
        assert back["value_steps"] == mine["value_steps"]
    assert parse_workload(again) == workload


def test_one_sow_document_serves_both_exports_with_the_value_on_the_given_rounds() -> None:
    # rounds of 100 s on C = 4 nodes of a 16-node machine; requested 250 s and 900 s: D_m = 9, S_m = 29
    table = make_table([0, 350], [120, 90], [250, 900], size=[8, 1])
    config = ExportConfig(round_seconds=100, nodes=4)
    assert trace_bounds(table, config) == (9, 29)
    laws = {0: [(2, 1.0)], 1: [(1, 0.5), (9, 0.5)]}
    doc = sow_document(table, 16, config, laws, lambda i: [3, 1][i])
    first, second = doc["jobs"]
    # job 0: ceil(8 * 4 / 16) = 2 nodes, V = 2 * 3 = 6 until 2 * 3 + 1 = 7, then 6 / 4 until S_m; ran 2 rounds
    assert first == {"id": "job-0", "birth": 0, "concurrency": 2, "value_steps": [[7, 6.0], [29, 1.5]],
                     "outcomes": [[0, 2, 1.0]], "signal_mode": "none", "realized": [0, 2]}
    # job 1: born in round 3, 1 node, V = 1 (below 4: no second step), deadline 3
    assert second["birth"] == 3 and second["concurrency"] == 1 and second["value_steps"] == [[3, 1.0]]
    assert second["outcomes"] == [[0, 1, 0.5], [0, 9, 0.5]] and second["realized"] == [0, 1]
    assert doc["platform"] == {"C": 4, "C_m": 4, "D_m": 9, "S_m": 29, "H": 6.0, "seed": 0, "samples": 1000}
    # without given rounds the value comes from the requested time: ceil(250 / 100) = 3 rounds for job 0
    assert sow_document(table, 16, config, laws, lambda i: None)["jobs"][0]["value_steps"] == [[7, 6.0], [29, 1.5]]


def test_headroom_is_a_point_capacity_model_below_c_with_prices_floored_at_c() -> None:
    table = make_table([0, 350], [120, 90], [250, 900], size=[8, 1])
    laws = {0: [(2, 1.0)], 1: [(1, 1.0)]}
    plain = sow_document(table, 16, ExportConfig(round_seconds=100, nodes=4), laws, lambda i: None)
    room = sow_document(table, 16, ExportConfig(round_seconds=100, nodes=4, headroom=1), laws, lambda i: None)
    assert "capacity" not in plain["platform"]  # no headroom: the platform (and its digests) as without the option
    assert room["jobs"] == plain["jobs"]
    assert room["platform"] == {**plain["platform"], "capacity": {
        "kind": "ar1", "mean": 3.0, "phi": 0.0, "errors": [0.0], "weights": [1.0], "low": 3, "high": 3,
        "quantile": 0.3, "price_floor": 4.0}}
    assert Platform(**room["platform"]).sim_capacity == Platform(**plain["platform"]).sim_capacity


@pytest.mark.parametrize("headroom", [-1, 4, 5])
def test_headroom_outside_zero_to_c_minus_one_is_refused(headroom: int) -> None:
    with pytest.raises(ValueError, match=rf"headroom={headroom} must lie in \[0, nodes - 1 = 3\]"):
        ExportConfig(nodes=4, headroom=headroom)


def test_headroom_fails_a_job_the_oracle_cannot_fit_in_c_minus_h_at_the_prices_of_fixed_c() -> None:
    from mechanism.engine import Engine
    from mechanism.sow import SoW

    base = Platform(C=4, C_m=4, D_m=3, S_m=10, H=100.0, seed=0, samples=200)
    quotes = {}
    for name, platform in (("fixed", base), ("headroom", base.model_copy(update={"capacity": headroom_model(4, 1)}))):
        engine = Engine(platform)

        def sow(c: int, d: int, deadline: int, p: Platform = platform) -> SoW:
            return SoW.parse({"concurrency": c, "value_steps": [[deadline, 50.0]], "outcomes": [[0, d, 1.0]]}, p)

        # a: 2 nodes for 3 rounds from round 0; b: 2 nodes, 1 round, worth something only if it starts at once;
        # c: all 4 nodes for 1 round
        quotes[name] = [engine.submit("a", sow(2, 3, 10)).to_dict()["outcomes"][0],
                        engine.submit("b", sow(2, 1, 1)).to_dict()["outcomes"][0],
                        engine.submit("c", sow(4, 1, 10)).to_dict()["outcomes"][0]]
    fixed, room = quotes["fixed"], quotes["headroom"]
    assert room[0] == fixed[0] and fixed[0]["start"] == 0  # the first job: the same price, start and estimates
    # with C = 4, b fits beside a (2 + 2 <= 4) at round 0; the oracle of C - H = 3 nodes fails it there (never)
    assert fixed[1]["start"] == 0 and fixed[1]["failure"] == 0.0 and room[1]["start"] is None
    # c needs all of C: it runs after a under fixed C, and never where the oracle has 3 nodes
    assert fixed[2]["start"] == 3 and room[2]["start"] is None


@pytest.mark.parametrize(("settings", "match"), [
    ({"nodes": 4, "headroom": 1, "reserve": (2.0, 0.5)},
     r"reserve=\(2.0, 0.5\) and headroom=1 exclude each other"),
    ({"nodes": 1, "reserve": (2.0, 0.5)}, r"reserve=\(2.0, 0.5\) needs nodes >= 2"),
])
def test_a_reserve_beside_a_headroom_or_on_one_node_is_refused(settings: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ExportConfig(**settings)  # type: ignore[arg-type]


def test_a_reserve_is_the_platforms_rule_with_at_most_c_minus_one_nodes() -> None:
    table, laws = make_table([0, 350], [120, 90], [250, 900], size=[8, 1]), {0: [(2, 1.0)], 1: [(1, 1.0)]}
    doc = sow_document(table, 16, ExportConfig(round_seconds=100, nodes=4, reserve=(2.0, 0.5)), laws, lambda i: None)
    assert doc["platform"]["reserve"] == {"up": 2.0, "down": 0.5, "most": 3} and "capacity" not in doc["platform"]
