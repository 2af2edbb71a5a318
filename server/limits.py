"""Per-tenant limits on active jobs (platform.toml `max_active_jobs`), checked on live submissions only."""

from __future__ import annotations

from collections.abc import Mapping

from mechanism.engine import Engine
from server import namespace


class ActiveLimits:
    """For each tenant with a max_active_jobs, the keys of its jobs that may still be active.

    Taken from the engine's active jobs at the first check, then extended by each admitted job and pruned of the
    ended ones only when they reach the limit, so that a check reads the tenant's own jobs, not every active job.
    """

    def __init__(self, limits: Mapping[str, int]) -> None:
        self.limits = limits
        self._jobs: dict[str, list[str]] | None = None

    def refusal(self, engine: Engine, tenant: str) -> str | None:
        """Why a new job of `tenant` would exceed its limit, or None if it would not (or it has none)."""
        jobs = self._listed(engine, tenant)
        if jobs is None:
            return None
        limit = self.limits[tenant]
        if len(jobs) >= limit:  # fewer listed are fewer active; else drop the ended ones and count again
            jobs[:] = [key for key in jobs if (job := engine.jobs.get(key)) is not None and job.state.active]
        if len(jobs) < limit:
            return None
        return f"tenant {tenant!r} has {len(jobs)} active jobs, its limit max_active_jobs={limit}; submit again " \
               "when some have ended"

    def admitted(self, engine: Engine, key: str) -> None:
        """The job with engine key `key` was just submitted."""
        jobs = self._listed(engine, namespace.tenant_of(key))
        if jobs is not None:
            jobs.append(key)

    def _listed(self, engine: Engine, tenant: str) -> list[str] | None:
        if tenant not in self.limits:
            return None
        if self._jobs is None:
            self._jobs = {name: [] for name in self.limits}
            for job in engine.jobs_after(-1, active_only=True):
                if (owner := namespace.tenant_of(job.id)) in self.limits:
                    self._jobs[owner].append(job.id)
        return self._jobs[tenant]
