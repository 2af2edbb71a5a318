"""The server's limits, one name and one home each: on requests, pages, ids, event streams, refusal messages, the
configuration and start-up; and the per-tenant limits on active jobs (platform.toml `max_active_jobs`).

The engine bounds its own job key (mechanism/engine.py `MAX_JOB_KEY`): the server's key is a tenant name, '/', and
the tenant's own job id, so MAX_TENANT_NAME + 1 + MAX_JOB_ID must stay within it (tests/server/test_limits.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from server import namespace

if TYPE_CHECKING:
    from mechanism.engine import Engine

# Requests (server/service.py)
MAX_REQUEST_ID = 128  # characters of a request id
MAX_TENANT_NAME = 64  # characters of a tenant name (server/config.py TENANT_NAME)
MAX_JOB_ID = 128  # characters of a tenant's own job id (the engine's key adds the tenant and '/')
MAX_PAGE = 1000  # jobs or charges in one page of ListJobs or GetInvoice
DEFAULT_PAGE = 100  # the page size when a request asks for 0
MAX_WATCHERS = 32  # default limit of open event streams (half the default worker threads)
STREAM_BATCH = 256  # streamed submissions (SubmitSoWs) that have arrived, applied in one group commit at most
WATCH_BATCH = 256  # events an event stream reads under the lock at a time
MESSAGE_HEAD, MESSAGE_TAIL = 300, 200  # characters of a refusal kept: gRPC sends it as metadata (16 KiB at most)

# Configuration and start-up (server/config.py, server/app.py, server/metrics.py)
MAX_TOKEN_FILE = 4096  # bytes of a token_file (a token, not a log file named by mistake)
MAX_PORT = 65535
MAX_ROUND_SECONDS = 1e9  # the wall clock waits a round at a time; threading's waits end at TIMEOUT_MAX (about 9.2e9 s)


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
