"""Per-tenant job-id namespaces: the engine's job key is the tenant's name, '/', and the tenant's own job id.

Tenant names (server/config.py TENANT_NAME) and the reserved principals contain no '/', so a key splits at its
first '/' into exactly the (tenant, job id) it was made from, whatever the job id holds. Two tenants may use the
same job id, and a tenant can neither see nor take another tenant's ids: a job of another tenant is, to it, a job
that does not exist.
"""

from __future__ import annotations

SEPARATOR = "/"


def key(tenant: str, job_id: str) -> str:
    """The engine's key of `tenant`'s job `job_id`."""
    if not tenant or SEPARATOR in tenant:
        raise ValueError(f"tenant={tenant!r} cannot name a namespace (empty, or holds {SEPARATOR!r})")
    return f"{tenant}{SEPARATOR}{job_id}"


def split(job_key: str) -> tuple[str, str]:
    """(tenant, job id) of an engine key made by `key`."""
    tenant, sep, job_id = job_key.partition(SEPARATOR)
    if not sep or not tenant:
        raise ValueError(f"job key {job_key!r} is not '<tenant>{SEPARATOR}<job id>'")
    return tenant, job_id


def tenant_of(job_key: str) -> str:
    """The tenant whose job has this engine key."""
    return split(job_key)[0]


def local(job_key: str) -> str:
    """The tenant's own id of the job with this engine key."""
    return split(job_key)[1]


def named(job_key: str) -> dict[str, str]:
    """The `tenant` and `job_id` fields of a command on the job with this engine key."""
    tenant, job_id = split(job_key)
    return {"tenant": tenant, "job_id": job_id}
