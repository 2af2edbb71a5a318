"""server/limits.py: a new job is refused exactly when its tenant already holds max_active_jobs active jobs; the
bounds on names and ids fit together."""

from __future__ import annotations

import re

import numpy as np
import pytest

from mechanism.engine import MAX_JOB_KEY, Engine, EngineError, check_job_id
from server import namespace
from server.config import TENANT_NAME
from server.limits import MAX_JOB_ID, MAX_TENANT_NAME, ActiveLimits
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


def test_a_tenants_job_key_fits_the_engines_bound_on_job_keys() -> None:
    longest = namespace.key("t" * MAX_TENANT_NAME, "j" * MAX_JOB_ID)
    assert len(longest) == MAX_TENANT_NAME + 1 + MAX_JOB_ID <= MAX_JOB_KEY
    check_job_id(longest)  # the engine takes it
    with pytest.raises(EngineError, match=f"must have 1 to {MAX_JOB_ID} characters"):
        check_job_id("j" * (MAX_JOB_ID + 1), MAX_JOB_ID)  # as the service checks a tenant's own id


def test_the_tenant_name_pattern_takes_names_up_to_the_bound_and_no_longer() -> None:
    assert re.match(TENANT_NAME, "t" * MAX_TENANT_NAME)
    assert not re.match(TENANT_NAME, "t" * (MAX_TENANT_NAME + 1))
