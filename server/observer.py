"""What the server reports as it works: the observer interface the scheduler calls, off by default."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Acknowledged:
    """A command's reply as sent: freshly applied, or the logged reply of an earlier identical request."""

    reply: bytes
    replayed: bool
    writer_ms: float = 0.0  # time spent holding the writer lock (apply, encode, commit)
    commit_ms: float = 0.0  # its share of the batch's log commit (the fsync), included in writer_ms


class Observer:
    """What the server reports as it works (times in seconds); this base records nothing: metrics off."""

    def rpc(self, method: str, code: str, seconds: float) -> None:
        """One RPC answered with the gRPC status `code` (e.g. OK, INVALID_ARGUMENT) after `seconds`."""

    def command(self, kind: str, ack: Acknowledged) -> None:
        """One command of `kind` applied and logged; `ack` carries its writer and commit times in ms."""

    def snapshot(self, seconds: float) -> None:
        """One state snapshot saved in `seconds`."""

    def settle(self, seconds: float) -> None:
        """One settler pass that did oracle work, holding the writer for `seconds`."""

    def config_reload(self, outcome: str) -> None:
        """One configuration reload (SIGHUP) that was `applied` or `refused` (the old configuration stays)."""


NO_METRICS = Observer()
