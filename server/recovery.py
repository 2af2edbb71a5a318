"""Recovery: restore the newest trusted snapshot (checked against the archive's chains and charges), then replay the
log after it, checking that every command reproduces its logged reply."""

from __future__ import annotations

import logging

from pydantic import ValidationError

from mechanism.engine import CHAIN_START, Engine, EngineError
from mechanism.history import ChainPoint, HistoryMarks
from server import namespace, snapshot
from server.archive import ChargeCheck
from server.replay import apply_command, upgraded
from server.store import StoreError
from server.writer import SchedulerCore

log = logging.getLogger("sowsched.scheduler")


class ReplayDiverged(StoreError):
    """Replaying the log did not reproduce a logged reply: the log and the code disagree."""


class Recovery(SchedulerCore):
    """Start-up: the state the log and the newest trusted snapshot hold (a replay upgrades old logs as it goes)."""

    def _restore(self) -> int:
        """Load the newest snapshot this code wrote whose state, with the archived history before its marks,
        reproduces its digest and hash chains; 0 if there is none. Snapshots written after the one used, and the
        history they archived, are dropped (a reader only ignores them)."""
        if not self.snapshot_every:  # snapshots off: replay the whole log and leave the stored ones alone
            return 0
        code = snapshot.code_identity()
        archive = self.store.archive
        for snap in self.store.snapshots():
            if snap.code != code:
                continue
            checked: ChainPoint | None = None  # the point the archive was checked to, once it agrees
            try:
                state = snapshot.load(snap.state)
                engine = state.engine
                ok = state.seq == snap.seq and engine.history_marks() == engine.forgotten == state.marks \
                    and archive.marks().covers(state.marks)
                if ok:
                    archive.show(state.marks)
                    engine.archive = archive
                    checked = self._check_archive(engine, self._checked_before(state.marks))
                    ok = engine.digest() == snap.digest
            except Exception as exc:  # a damaged snapshot only costs a longer replay
                log.warning("snapshot unreadable", extra={"fields": {"seq": snap.seq, "error": repr(exc)}})
                continue
            if not ok or checked is None:
                log.warning("snapshot does not match its digest or the archive",
                            extra={"fields": {"seq": snap.seq}})
                continue
            self.engine, self._seq = engine, state.seq
            self._archived = state.marks
            self._discard_after(code, snap.seq, state.marks)
            self._record_checked(checked)
            return snap.seq
        archive.show(HistoryMarks(0, 0, 0))
        self._discard_after(code, 0, HistoryMarks(0, 0, 0))
        return 0

    def _check_archive(self, engine: Engine, start: ChainPoint) -> ChainPoint | None:
        """Check the archive before the engine's forgotten marks against its chains and announced charges from
        `start`; the point at those marks, or None if the charges disagree (a chain that differs raises). A check from
        a recorded point that fails is redone from the beginning: a damaged point row must not cost good snapshots."""
        try:
            checked = self._check_archive_from(engine, start)
        except ValueError as exc:
            checked, failure = None, repr(exc)
        else:
            failure = "the archived charges are not the announced ones"
        if checked is not None or start.marks == HistoryMarks(0, 0, 0):
            return checked
        log.warning("archive check from the recorded point failed; checking from the beginning",
                    extra={"fields": {"marks": str(start.marks), "error": failure}})
        return self._check_archive_from(engine, CHAIN_START)

    def _check_archive_from(self, engine: Engine, start: ChainPoint) -> ChainPoint | None:
        archive, charges = self.store.archive, ChargeCheck()
        checked = engine.verify_chains(charges.events(archive.all_events(start.marks.events)),
                                       archive.all_jobs(start.marks.retired), start)
        charges.charges(archive.all_charges(start.marks.charges))
        return checked if charges.agree else None

    def _record_checked(self, point: ChainPoint) -> None:
        """Let the next restore hash only what is archived after `point`. A write that fails (a full disk) costs only
        that restore's time: the row left in place is an earlier point, still true of the rows before it, or none."""
        try:
            self.store.save_verified_point(point)
        except StoreError as exc:
            log.warning("checked point not recorded", extra={"fields": {"marks": str(point.marks), "error": str(exc)}})

    def _checked_before(self, marks: HistoryMarks) -> ChainPoint:
        """Where an earlier restore left off checking the archive, if that lies within `marks`; else the beginning.
        The rows before it were checked then; a read-only open (`sowsched state-digest --store`) checks them all."""
        point = None if self.store.read_only else self.store.verified_point()  # a reader (an audit) checks it all
        if point is None or not marks.covers(point.marks):
            return CHAIN_START
        return point

    def _discard_after(self, code: str, seq: int, marks: HistoryMarks) -> None:
        if not self.store.read_only:  # a reader leaves the writer's snapshots and archive alone
            self.store.discard_after(code, seq, marks)

    def _replay(self) -> int:
        n = 0
        tenants = dict.fromkeys(namespace.tenant_of(job) for job in self.engine.jobs)  # of the jobs held (ordered)
        for cmd in self.store.commands(after=self._seq):
            try:
                result = apply_command(self.engine, cmd.kind, upgraded(self.engine, cmd.kind, cmd.body, tenants))
            except (EngineError, ValidationError, ValueError, KeyError, TypeError) as exc:  # it was accepted once
                raise ReplayDiverged(f"store {self.store.path}: replaying command {cmd.seq} ({cmd.kind}) failed with "
                                     f"{exc!r}; the log was written by different code") from exc
            if cmd.kind == "submit":
                tenants.setdefault(cmd.body["tenant"])
            if self._encode(cmd.kind, result, cmd.body) != cmd.reply and \
                    (self._legacy is None or cmd.reply not in self._legacy(cmd.kind, result)):
                raise ReplayDiverged(f"store {self.store.path}: replaying command {cmd.seq} ({cmd.kind}) did not "
                                     "reproduce its logged reply; the log was written by different code")
            self._seq = cmd.seq
            n += 1
            if not self.store.read_only:  # a long replay archives as it goes: memory stays bounded
                self._maybe_snapshot()
        return n

