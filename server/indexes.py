"""Per-tenant indexes of the engine's history, so a tenant's job list or invoice page costs O(page), not O(history)."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Mapping
from dataclasses import dataclass

from mechanism.engine import Engine


@dataclass(frozen=True)
class InvoicePage:
    """Ledger indices of one page of a tenant's charges in a period, the period's size and the next page token."""

    charges: list[int]
    period: list[int]  # every charge of the period (for the total)
    next_after: int | None  # the ledger index to pass back for the next page; None on the last page


class InvoiceIndex:
    """Per tenant, the ledger indices of its charges and their billing rounds (both ascending: the ledger is
    appended round by round). Derived from the engine and the job owners; `catch_up` after every round."""

    def __init__(self) -> None:
        self._seen = 0  # ledger entries indexed so far
        self._charges: dict[str, list[int]] = {}
        self._rounds: dict[str, list[int]] = {}

    def catch_up(self, engine: Engine, owners: Mapping[str, str]) -> None:
        charges = engine.ledger.charges
        for i in range(self._seen, len(charges)):
            tenant = owners[charges[i].job]
            self._charges.setdefault(tenant, []).append(i)
            self._rounds.setdefault(tenant, []).append(charges[i].round)
        self._seen = len(charges)

    def page(self, tenant: str, after: int, size: int, from_round: int | None = None,
             to_round: int | None = None) -> InvoicePage:
        """Charges of `tenant` billed in [from_round, to_round) with a ledger index above `after`, at most `size`."""
        charges, rounds = self._charges.get(tenant, []), self._rounds.get(tenant, [])
        lo = 0 if from_round is None else bisect_left(rounds, from_round)
        hi = len(rounds) if to_round is None else max(lo, bisect_left(rounds, to_round))
        first = max(lo, bisect_right(charges, after))
        last = min(hi, first + size)
        return InvoicePage(charges[first:last], charges[lo:hi], charges[last - 1] if last < hi else None)


class JobIndex:
    """Per tenant, the seqs of its jobs in submission order. Derived from the engine and the job owners."""

    def __init__(self) -> None:
        self._seen = -1  # the last seq indexed
        self._seqs: dict[str, list[int]] = {}

    def catch_up(self, engine: Engine, owners: Mapping[str, str]) -> None:
        for job in engine.jobs_after(self._seen):
            self._seqs.setdefault(owners[job.id], []).append(job.seq)
            self._seen = job.seq

    def after(self, tenant: str, seq: int) -> list[int]:
        """The seqs of `tenant`'s jobs above `seq`, ascending."""
        seqs = self._seqs.get(tenant, [])
        return seqs[bisect_right(seqs, seq):]
