"""ActiveLimits: a new job is refused exactly when its tenant already holds max_active_jobs active jobs."""

from __future__ import annotations

import numpy as np

from mechanism.engine import Engine
from server import namespace
from server.limits import ActiveLimits
from tests.conftest import random_sow, small_platform


def test_the_refusal_follows_a_brute_force_count_of_each_tenants_active_jobs() -> None:
    platform = small_platform(C=4, samples=300)
    engine, rng = Engine(platform), np.random.default_rng(5)
    limits = ActiveLimits({"acme": 2, "globex": 1})
    refused = admitted = 0
    for i in range(40):
        tenant = ("acme", "globex", "initech")[i % 3]
        active = sum(1 for j in engine.jobs.values() if j.state.active and namespace.tenant_of(j.id) == tenant)
        refusal = limits.refusal(engine, tenant)
        if tenant == "initech" or active < limits.limits[tenant]:
            assert refusal is None
            key = namespace.key(tenant, f"j{i}")
            engine.submit(key, random_sow(rng, platform))
            limits.admitted(engine, key)
            admitted += 1
        else:
            refused += 1
            assert refusal == (f"tenant {tenant!r} has {active} active jobs, its limit "
                               f"max_active_jobs={limits.limits[tenant]}; submit again when some have ended")
        if i % 2:
            engine.advance()  # jobs end: expired, completed or never scheduled
    assert refused > 3 and admitted > 20  # both ways, many times
