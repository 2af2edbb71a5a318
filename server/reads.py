"""Reads that span the history the engine holds and the part it has forgotten into the archive: job lists, invoice
pages, event batches. Each holds O(page + held history) in memory, never O(all history), and takes O(page + held
history) time, but for an invoice's count and total, which stream its period once; call them under the scheduler's lock.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from mechanism.engine import Engine, JobView
from mechanism.events import Event
from mechanism.jobs import Job, JobState
from mechanism.ledger import Charge
from mechanism.views import Payload
from server.archive import Archive

Owner = Callable[[str], str]  # job id -> tenant, for jobs the engine holds


@dataclass(frozen=True)
class JobPage:
    jobs: list[tuple[JobView, str]]  # (view, owner tenant) in submission order
    next_after: int | None  # the seq to pass back for the next page; None on the last page


@dataclass(frozen=True)
class InvoicePage:
    charges: list[tuple[int, Charge]]  # (ledger index, charge), ascending
    count: int  # charges of the whole period
    total: float  # their sum (math.fsum: exact, in any order)
    next_after: int | None  # the ledger index to pass back for the next page; None on the last page


def job_page(engine: Engine, archive: Archive, owner: Owner, tenant: str | None, after: int, size: int,
             states: frozenset[str]) -> JobPage:
    """Jobs with a seq above `after` of `tenant` (all if None) in `states` (all if empty), at most `size`."""
    active_only = bool(states) and all(JobState(s).active for s in states)
    held: Iterator[tuple[Job, str]] = (
        (j, owner(j.id)) for j in engine.jobs_after(after, active_only)
        if (not states or j.state.value in states) and (tenant is None or owner(j.id) == tenant))
    archived = [] if active_only or not engine.forgotten.retired or after >= engine.submitted else \
        archive.jobs(after, size + 1, tenant, states)  # every seq is below `submitted` (and SQLite's integers)
    first = list(itertools.islice(heapq.merge(held, archived, key=lambda pair: pair[0].seq), size + 1))
    page = first[:size]
    return JobPage([(engine.view_of(j), t) for j, t in page], page[-1][0].seq if len(first) > size else None)


def invoice_page(engine: Engine, archive: Archive, owner: Owner, tenant: str, after: int, size: int,
                 rounds: tuple[int, int | None]) -> InvoicePage:
    """Charges of `tenant` billed in [rounds[0], rounds[1]) with a ledger index above `after`, at most `size`,
    with the count and total of the whole period."""
    base = engine.forgotten.charges
    in_period = [(base + i, c) for i, c in enumerate(engine.ledger.charges)
                 if rounds[0] <= c.round and (rounds[1] is None or c.round < rounds[1]) and owner(c.job) == tenant]
    archived = archive.charges(tenant, after, size + 1, rounds) if base and after < base else []
    first = (archived + [(i, c) for i, c in in_period if i > after])[:size + 1]
    count, total = _count_and_fsum(itertools.chain(archive.amounts(tenant, rounds) if base else (),
                                                   (c.amount for _, c in in_period)))
    return InvoicePage(first[:size], count, total, first[size - 1][0] if len(first) > size else None)


def _count_and_fsum(amounts: Iterable[float]) -> tuple[int, float]:
    """How many amounts there are and their exact sum (math.fsum), in one pass that holds none of them."""
    count = 0

    def each() -> Iterator[float]:
        nonlocal count
        for amount in amounts:
            count += 1
            yield amount
    total = math.fsum(each())
    return count, total


def event_batch(engine: Engine, archive: Archive, owner: Owner, start: int, limit: int,
                tenant: str | None) -> tuple[list[Event], int]:
    """Up to `limit` events from seq `start` on, of `tenant`'s jobs only if given, and the seq to read next."""
    base = engine.forgotten.events
    if start < base:
        events = archive.events(start, limit, tenant)
        return events, (events[-1].seq + 1 if len(events) == limit else base)
    held = engine.events[start - base: start - base + limit]
    return [e for e in held if tenant is None or owner(e.job) == tenant], start + len(held)


def start_payloads(engine: Engine, events: list[Event]) -> dict[int, Payload]:
    """The payload of each start event's job, by event seq (a start whose job has none kept: left out, an executor
    asks GetJob). Read from the job, not the clock: the same on every read of the event."""
    out: dict[int, Payload] = {}
    for e in events:
        if e.type == "start":
            payload = engine.payload(e.job)
            if payload is not None:
                out[e.seq] = payload
    return out
