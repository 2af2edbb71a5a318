"""Per-tenant indexes: invoice pages of a billing period and job lists equal a filter of the whole history."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism.ledger import Charge
from server.indexes import InvoiceIndex, JobIndex


def ledger(rounds_and_owners: list[tuple[int, str]]) -> tuple[Any, dict[str, str]]:
    charges, owners = [], {}
    for i, (r, owner) in enumerate(rounds_and_owners):
        charges.append(Charge(f"j{i}", r, r, 1, 1, float(i)))
        owners[f"j{i}"] = owner
    return SimpleNamespace(ledger=SimpleNamespace(charges=charges)), owners


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["a", "b"])), max_size=40),
       size=st.integers(1, 7), from_round=st.none() | st.integers(0, 40), length=st.none() | st.integers(1, 20),
       split=st.integers(0, 40))
def test_paging_a_period_returns_the_tenants_charges_of_the_period_once_each_in_order(
        steps: list[tuple[int, str]], size: int, from_round: int | None, length: int | None, split: int) -> None:
    rounds, r = [], 0
    for gap, owner in steps:  # the ledger is billed round by round
        r += gap
        rounds.append((r, owner))
    engine, owners = ledger(rounds)
    index = InvoiceIndex()
    index.catch_up(SimpleNamespace(ledger=SimpleNamespace(charges=engine.ledger.charges[:split])), owners)
    index.catch_up(engine, owners)  # catching up in two steps is the same as in one
    to_round = None if length is None else (from_round or 0) + length
    expected = [i for i, (rd, owner) in enumerate(rounds) if owner == "a" and rd >= (from_round or 0)
                and (to_round is None or rd < to_round)]
    got, after = [], -1
    while True:
        page = index.page("a", after, size, from_round, to_round)
        assert len(page.charges) <= size and page.period == expected
        got += page.charges
        if page.next_after is None:
            break
        after = page.next_after
    assert got == expected


def test_an_unknown_tenant_has_an_empty_invoice() -> None:
    page = InvoiceIndex().page("nobody", -1, 10)
    assert (page.charges, page.period, page.next_after) == ([], [], None)


@settings(max_examples=40, deadline=None)
@given(owners=st.lists(st.sampled_from(["a", "b", "c"]), max_size=30), split=st.integers(0, 30),
       after=st.integers(-1, 31))
def test_a_tenants_jobs_after_a_seq_are_its_submissions_after_it_in_order(owners: list[str], split: int,
                                                                         after: int) -> None:
    jobs = [SimpleNamespace(id=f"j{i}", seq=i) for i in range(len(owners))]
    by_id = {f"j{i}": t for i, t in enumerate(owners)}
    index = JobIndex()
    index.catch_up(SimpleNamespace(jobs_after=lambda s: iter(jobs[max(s + 1, 0):split])), by_id)  # type: ignore[arg-type]
    index.catch_up(SimpleNamespace(jobs_after=lambda s: iter(jobs[max(s + 1, 0):])), by_id)  # type: ignore[arg-type]
    for tenant in ("a", "b", "c", "nobody"):
        assert index.after(tenant, after) == [i for i, t in enumerate(owners) if t == tenant and i > after]
