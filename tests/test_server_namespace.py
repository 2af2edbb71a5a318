"""Per-tenant namespaces: an engine job key splits into exactly the tenant and job id it was made from."""

from __future__ import annotations

import pytest

from server import namespace


def test_a_job_key_splits_into_the_tenant_and_the_job_id_it_was_made_from() -> None:
    for tenant, job_id in [("acme", "j1"), ("a.b-c_d", "x/y/z"), ("operator", "/"), ("t", " ")]:
        assert namespace.split(namespace.key(tenant, job_id)) == (tenant, job_id)
    with pytest.raises(ValueError, match=r"tenant='a/b' cannot name a namespace"):
        namespace.key("a/b", "j")
    with pytest.raises(ValueError, match=r"tenant='' cannot name a namespace"):
        namespace.key("", "j")
    for bad in ("j1", "/j1"):
        with pytest.raises(ValueError, match=r"is not '<tenant>/<job id>'"):
            namespace.split(bad)
