"""Lemma E.2 exactly on tiny priors: with the bundle prices of a fractional unit allocation z', the mechanism's
expected welfare E[W] is at least 1/2 Val(z'). E[W] sums every realization of the prior (each job's SoW, then its
task) weighted by its probability, each realization run through the engine."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from models.prior import Prior
from models.simulation import Workload, WorkloadJob, run_simulation
from models.stochastic.pricing import stochastic_pricing
from tests.models.stochastic.conftest import random_prior, tiny_platform


def expected_welfare(prior: Prior, workload_platform: object) -> float:
    """E[W] over every (SoW, task) of every job, by enumeration (no sampling)."""
    per_job = [[(q * o.probability, WorkloadJob(id=job.id, birth=job.birth, sow=sow, arrival_offset=o.arrival_offset,
                                                duration=o.duration))
                for sow, q in zip(job.sows, job.probability, strict=True) for o in sow.outcomes]
               for job in prior.jobs]
    total = []
    for realization in itertools.product(*per_job):
        probability = math.prod(p for p, _ in realization)
        jobs = tuple(sorted((j for _, j in realization), key=lambda j: (j.birth, j.id)))
        workload = Workload(name="e2", platform=workload_platform, jobs=jobs, prior=prior)  # type: ignore[arg-type]
        total.append(probability * run_simulation(workload).welfare)
    return math.fsum(total)


@pytest.mark.parametrize("seed", range(8))
def test_the_expected_welfare_under_bundle_prices_is_at_least_half_the_allocations_value(seed: int) -> None:
    platform = tiny_platform(C=8, C_m=2)
    prior = random_prior(np.random.default_rng(seed), platform, jobs=3)
    pricing = stochastic_pricing(prior, platform)
    kept = pricing.report()["allocation"]["value"]  # Val(z') of the allocation the prices come from
    assert kept > 0
    welfare = expected_welfare(prior, pricing.platform)
    assert welfare >= 0.5 * kept - 1e-9
