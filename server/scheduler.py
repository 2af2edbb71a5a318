"""The durable scheduler: one writer applies commands to the engine in order and logs each before it is acknowledged.

`DurableScheduler` composes its parts, one job each: the group-commit writer (server/writer.py), recovery from the
newest trusted snapshot and the log (server/recovery.py), snapshots (server/snapshots.py) and the tenant registry
(server/tenancy.py). This module starts them in order and reloads the configuration.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from mechanism.engine import Engine, EngineError
from mechanism.history import HistoryMarks
from server.config import CLOCK, ConfigError, ServerConfig
from server.errors import FailedPrecondition, LimitReached, PermissionDenied, Refused, Unauthenticated, Unavailable
from server.limits import ActiveLimits
from server.observer import NO_METRICS, Acknowledged, Observer
from server.recovery import Recovery, ReplayDiverged
from server.snapshots import SNAPSHOT_EVERY, Snapshots
from server.store import CommandStore
from server.tenancy import Tenancy
from server.writer import Encoder, LegacyEncoder, Ticket, Writer


def _identity_changes(old: dict[str, Any], new: dict[str, Any]) -> Iterator[str]:
    """The fields (`platform.C`, `oracle`, ...) in which two log identities differ, each with both values."""
    for key in sorted(old.keys() | new.keys()):
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            yield from (f"{key}.{inner}" for inner in _identity_changes(a, b))
        elif a != b:
            yield f"{key} ({a!r} -> {b!r})"


class DurableScheduler(Writer, Recovery, Snapshots, Tenancy):
    """The engine behind one lock, its command log and request ids; replays the log on start."""

    def __init__(self, config: ServerConfig, store: CommandStore, encode: Encoder,
                 snapshot_every: int = SNAPSHOT_EVERY, metrics: Observer = NO_METRICS,
                 legacy: LegacyEncoder | None = None) -> None:
        if snapshot_every < 0:
            raise ValueError(f"snapshot_every={snapshot_every} is below the bound 0 (0 turns snapshots off)")
        self.config = config
        self.engine = Engine(config.platform, oracle=config.oracle)
        self.store = store
        self._encode = encode
        self._legacy = legacy  # replay also accepts the replies of earlier wire formats for the same result
        self.metrics = metrics  # told of every logged command, snapshot and settler pass
        self._lock = threading.Lock()
        self.changed = threading.Condition(self._lock)
        self._broken: str | None = None
        self._queue: list[Ticket] = []  # commands waiting for the writer
        self._queue_lock = threading.Lock()
        self.snapshot_every = snapshot_every
        self._seq = 0  # the last logged command applied
        self.limits = ActiveLimits(config.max_active_jobs)  # checked on live submissions only, not on replay
        self._archived = HistoryMarks(0, 0, 0)  # the engine history the store's archive holds
        try:
            self.restored_from = self._restore()  # snapshot seq, 0 for none
            self.engine.archive = store.archive
            self._snapshot_seq = self.restored_from
            self.replayed = self._replay()
            self._tenants_before = self.store.configured_tenants() if not store.read_only else None
            self._adopt_tenants(config)
        except BaseException:  # not started: release the log and its one-writer lock
            store.close()
            raise
        self._unsettled = threading.Event()  # a batch was applied: the engine may have oracle work to do early
        self._settler = threading.Thread(target=self._settle_loop, name="sowsched-settle", daemon=True)
        self._settler.start()

    def reconfigure(self, config: ServerConfig) -> None:
        """Serve with new tokens, tenants and limits (platform.toml reloaded); the platform and the oracle are the
        ones the log was written with and cannot change while it is in use."""
        changed = sorted(_identity_changes(self.config.identity(), config.identity()))
        if changed:
            raise ConfigError(
                f"{', '.join(changed)} changed: the log was written with the old value{'s' * (len(changed) > 1)}; "
                "a platform or oracle change needs a new store"
            )
        with self._lock:
            self._adopt_tenants(config)
            self.config = config
            self.limits = ActiveLimits(config.max_active_jobs)
            self.changed.notify_all()  # event streams re-check their callers' tokens now


__all__ = ["CLOCK", "SNAPSHOT_EVERY", "Acknowledged", "DurableScheduler", "EngineError", "FailedPrecondition",
           "LimitReached", "PermissionDenied", "Refused", "ReplayDiverged", "Unauthenticated", "Unavailable"]
