"""Per-tenant namespaces: an engine job key splits into exactly the tenant and job id it was made from."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server import namespace
from server.config import TENANT_NAME

TENANTS = st.from_regex(TENANT_NAME, fullmatch=True)


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


@settings(derandomize=True)  # seeded: the same examples every run
@given(TENANTS, st.text(), TENANTS, st.text())
def test_two_jobs_share_a_key_only_if_they_have_the_same_tenant_and_job_id(t1: str, j1: str, t2: str,
                                                                          j2: str) -> None:
    assert namespace.split(namespace.key(t1, j1)) == (t1, j1)
    assert (namespace.key(t1, j1) == namespace.key(t2, j2)) == ((t1, j1) == (t2, j2))
