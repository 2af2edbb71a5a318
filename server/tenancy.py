"""The tenant registry: which tenant names the store has served, which may come back (`reinstate`), who owns a job."""

from __future__ import annotations

from server import namespace
from server.config import OPERATOR, ConfigError, ServerConfig
from server.writer import SchedulerCore


class Tenancy(SchedulerCore):
    """Tenant names are namespaces for good: a name that owns jobs comes back only as the same tenant."""

    _tenants_before: frozenset[str] | None  # the store's tenant record before this start-up replaced it

    def known_tenant(self, name: str) -> bool:
        """A tenant the operator may name: configured now, or owning jobs (held or archived) from when it was (a
        tenant taken out of the configuration keeps its jobs, events and invoice)."""
        if name in self.config.tenants or name == OPERATOR:
            return True
        with self.reading():
            return self._owns_jobs(name)

    def _owns_jobs(self, name: str) -> bool:
        """Whether tenant `name` owns a job, held or archived (under the lock, or before the server runs)."""
        return any(namespace.tenant_of(key) == name for key in self.engine.jobs) or self.store.archive.holds_tenant(
            name
        )

    def _adopt_tenants(self, config: ServerConfig) -> None:
        """Record `config`'s tenants as the store's, refusing (ConfigError) a name that the store's last configuration
        did not have and that owns jobs, unless its entry says `reinstate = true`: the name is the namespace, so a
        new tenant given it would own the earlier tenant's jobs, invoices and request ids. A read-only store (an
        offline replay) records nothing; a store that recorded no tenants yet takes these as they are."""
        if self.store.read_only:
            return
        previous = self.store.configured_tenants()
        if previous is not None:
            back = [
                n for n in config.tenants if n not in previous and n not in config.reinstated and self._owns_jobs(n)
            ]
            if back:
                raise ConfigError(
                    f"tenants {', '.join(map(repr, back))}: own jobs but were not in the configuration "
                    "this store last served with: a name is its tenant's namespace for good, "
                    "and a new tenant given it would own "
                    "the earlier one's jobs, invoices and request ids; give a new tenant a new name, or "
                    "set `reinstate = true` in the entry if the same tenant is coming back"
                )
        if previous != frozenset(config.tenants):
            self.store.record_tenants(config.tenants)

    def not_served(self) -> None:
        """Put back the tenant record this start-up replaced, when the server then failed to start (a port in use, a
        TLS key unreadable): a configuration that never served must not decide which names may come back."""
        if not self.store.read_only:
            self.store.record_tenants(self._tenants_before)

    def owner(self, job_id: str) -> str | None:
        """The tenant of any job, held or archived; None for an unknown id."""
        held = job_id in self.engine.jobs
        return namespace.tenant_of(job_id) if held else self.store.archive.owner(job_id)

