"""From a prior to the platform's bundles: runs, the Definition 1 check at build time, refusals, summaries."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from mechanism.engine import Engine
from models.stochastic.allocation import check_unit_allocation
from models.stochastic.evaluation import summary
from models.stochastic.pricing import check_stochastic_workload, priced_workload, runs_of, stochastic_pricing
from models.workloads import make_workload, stochastic_workload


def test_runs_of() -> None:
    assert runs_of(np.array([0, 1, 1, 0, 1]) > 0, 10) == ((11, 13), (14, 15))
    assert runs_of(np.zeros(3, dtype=bool), 0) == ()
    assert runs_of(np.ones(2, dtype=bool), 5) == ((5, 7),)


def test_bundles_in_the_platform_are_the_checked_allocation() -> None:
    w = stochastic_workload(seed=0, load=0.5, rounds=6)
    assert w.prior is not None
    pricing = stochastic_pricing(w.prior, w.platform)
    p = pricing.platform
    assert p.pricing == "stochastic" and {k: v for k, v in p.model_dump().items() if k not in ("pricing", "bundles")} \
        == w.platform.model_dump()
    alloc = pricing.allocation
    assert check_unit_allocation(pricing.solution.lp.outcomes, pricing.solution.z, alloc) == []
    nonempty = [k for k, s in enumerate(alloc.sets) if s.size]
    assert len(p.bundles) == len(nonempty)
    for b, k in zip(p.bundles, nonempty, strict=True):
        held = np.zeros(alloc.units.shape[1], dtype=bool)
        for lo, hi in b.rounds:
            held[lo - alloc.first_round: hi - alloc.first_round] = True
        assert held.tolist() == (alloc.units[k] > 0).tolist()
    # The LP capacity is C' = C/2 of the relaxed simulator (MODEL.md section 4).
    assert pricing.solution.lp.capacity == w.platform.sim_capacity / 2
    # Same prior, same bundles, bit for bit.
    assert stochastic_pricing(w.prior, w.platform).platform == p


def test_a_workload_without_a_prior_or_with_hidden_durations_is_refused() -> None:
    with pytest.raises(ValueError, match="needs a workload with a prior"):
        check_stochastic_workload(make_workload("toy"))
    w = stochastic_workload(seed=0, load=0.5, rounds=3)
    blind = dataclasses.replace(w.jobs[0], sow=w.jobs[0].sow.model_copy(update={"signal_mode": "none"}))
    blind.sow.__dict__.pop("signals", None)  # the copy must not keep the cached labels
    with pytest.raises(ValueError, match=r"jobs\[0\] .* needs the duration revealed at arrival"):
        check_stochastic_workload(dataclasses.replace(w, jobs=(blind, *w.jobs[1:])))


def test_a_priced_workload_runs_and_replays() -> None:
    w, _ = priced_workload(stochastic_workload(seed=1, load=0.5, rounds=4))
    digests = []
    for _ in range(2):
        e = Engine(w.platform)
        for job in sorted(w.jobs, key=lambda j: j.birth):
            while e.now < job.birth:
                e.advance()
            e.submit(job.id, job.sow)
        digests.append(e.digest())
    assert digests[0] == digests[1]


def test_summary_is_the_ratio_of_means() -> None:
    rows = [{"offline": 10.0, "exponential": {"welfare": 5.0, "ratio": 2.0}, "stochastic": {"welfare": 10.0,
                                                                                         "ratio": 1.0}},
            {"offline": 30.0, "exponential": {"welfare": 15.0, "ratio": 2.0}, "stochastic": {"welfare": 10.0,
                                                                                          "ratio": 3.0}}]
    s = summary(rows)
    assert s["offline_mean"] == 20.0 and s["stochastic_better"] == 1
    assert s["exponential"]["ratio"] == 2.0 and s["stochastic"]["ratio"] == 2.0
    assert s["stochastic"]["ratio_mean"] == 2.0
