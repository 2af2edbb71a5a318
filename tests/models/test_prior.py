"""The prior in workloads: the `stochastic` named workload draws from it, and W.json carries it."""

from __future__ import annotations

import pytest

from models.prior import parse_prior
from models.workloads import make_workload, parse_workload, workload_document


def test_stochastic_workload_is_drawn_from_its_prior_and_seeded() -> None:
    a, b = make_workload("stochastic", seed=4), make_workload("stochastic", seed=4)
    assert a.jobs == b.jobs and a.prior == b.prior
    assert make_workload("stochastic", seed=5).prior == a.prior  # the prior is fixed: the seed draws from it
    assert a.prior is not None
    by_id = {j.id: j for j in a.prior.jobs}
    for job in a.jobs:
        assert job.sow in by_id[job.id].sows and job.sow.signal_mode == "duration"
        assert (job.arrival_offset, job.duration) in {(o.arrival_offset, o.duration) for o in job.sow.outcomes}
    assert len(make_workload("stochastic", seed=4, load=2.0).jobs) > len(a.jobs)


def test_w_json_round_trips_the_prior() -> None:
    w = make_workload("stochastic", seed=1)
    back = parse_workload(workload_document(w), name="stochastic")
    assert back.prior == w.prior and back.jobs == w.jobs


def test_w_json_job_outside_its_prior_is_refused() -> None:
    doc = workload_document(make_workload("stochastic", seed=1))
    doc["jobs"][0]["birth"] += 1
    with pytest.raises(ValueError, match=r"jobs\[0\] .* must be those of one of its prior's SoWs"):
        parse_workload(doc)
    doc = workload_document(make_workload("stochastic", seed=1))
    doc["prior"]["jobs"] = doc["prior"]["jobs"][1:]
    missing = {j["id"] for j in doc["jobs"]} - {j["id"] for j in doc["prior"]["jobs"]}
    with pytest.raises(ValueError, match=r"has no entry in prior\.jobs"):
        parse_workload(doc)
    assert missing


def test_prior_section_shape_is_checked() -> None:
    w = make_workload("stochastic", seed=1)
    with pytest.raises(ValueError, match="one key"):
        parse_prior({"jobs": [], "x": 1}, w.platform)
    with pytest.raises(ValueError, match=r"prior.jobs\[0\] must be an object with the keys"):
        parse_prior({"jobs": [{"id": "a"}]}, w.platform)
    with pytest.raises(ValueError, match=r"sows\[0\] must be an object with a number probability"):
        parse_prior({"jobs": [{"id": "a", "birth": 0, "sows": [{"probability": "1", "sow": {}}]}]}, w.platform)
    with pytest.raises(ValueError, match=r"sows\[0\].sow: "):
        parse_prior({"jobs": [{"id": "a", "birth": 0, "sows": [{"probability": 1.0, "sow": {}}]}]}, w.platform)
