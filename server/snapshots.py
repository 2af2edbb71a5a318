"""Snapshots: the scheduler's active state saved every `snapshot_every` commands, with the history since the last one
moved to the store's archive in the same transaction (the format and the replay identity: server/snapshot.py)."""

from __future__ import annotations

import logging
import time

from server import namespace, snapshot
from server.store import Snapshot, StoreError
from server.writer import SchedulerCore

SNAPSHOT_EVERY = 1000  # logged commands between snapshots

log = logging.getLogger("sowsched.scheduler")


class Snapshots(SchedulerCore):
    """Taking snapshots: now (`snapshot`), or after a batch once the interval has passed (`_maybe_snapshot`)."""

    @property
    def snapshot_seq(self) -> int:
        """The log seq the newest snapshot covers (0: none; after a failed snapshot, the one it attempted)."""
        return self._snapshot_seq

    def snapshot(self) -> int:
        """Save the state now (the writer's lock held, between batches); the seq it covers.

        Only the active part of the engine is written, with the history added since the last snapshot archived in
        the same transaction; then the engine forgets that history (the archive serves it), so memory follows the
        active jobs and the snapshot interval.
        """
        if self._seq == self._snapshot_seq:
            return self._seq  # nothing logged since: that snapshot is this state
        marks = self.engine.history_marks()
        live = self.engine.without_history()
        state = snapshot.SchedulerState(live, self._seq, marks)
        history = self.engine.history_since(self._archived)
        named = {j.id for j in history.jobs} | {e.job for e in history.events} | {c.job for c in history.charges}
        self.store.save_snapshot(Snapshot(self._seq, snapshot.code_identity(), self.engine.digest(),
                                          snapshot.dump(state)), history, {i: namespace.tenant_of(i) for i in named})
        self._snapshot_seq, self._archived = self._seq, marks
        self.engine.forget_history(marks)
        self.store.archive.show(marks)
        return self._seq

    def _maybe_snapshot(self) -> None:
        if not self.snapshot_every or self._seq - self._snapshot_seq < self.snapshot_every:
            return
        started = time.perf_counter()
        try:
            self.snapshot()
        except Exception as exc:  # whatever went wrong, the batch is committed: only restarts get slower
            self._snapshot_seq = self._seq
            log.error("snapshot failed", exc_info=not isinstance(exc, StoreError | OSError),
                      extra={"fields": {"seq": self._seq, "error": repr(exc)}})
            return
        self.metrics.snapshot(time.perf_counter() - started)
        log.info(
            "snapshot", extra={"fields": {"seq": self._seq, "ms": round(1000 * (time.perf_counter() - started), 1)}}
        )

