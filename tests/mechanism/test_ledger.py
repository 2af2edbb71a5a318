"""The ledger (docs/model.md section 6, step 5): charges kept in order, revenue their sum, no negative bill."""

from __future__ import annotations

import pytest

from mechanism.ledger import Charge, Ledger


def charge(job: str, amount: float) -> Charge:
    return Charge(job=job, round=3, start=1, duration=3, concurrency=2, amount=amount)


def test_an_empty_ledger_has_no_revenue() -> None:
    assert Ledger().revenue == 0.0


def test_revenue_is_the_sum_of_every_charge_including_the_first() -> None:
    ledger = Ledger()
    for job, amount in (("a", 1.5), ("b", 0.25), ("c", 4.0)):
        ledger.bill(charge(job, amount))
    assert ledger.revenue == 5.75  # 1.5 + 0.25 + 4.0, exact in binary
    assert [c.job for c in ledger.charges] == ["a", "b", "c"]


def test_a_zero_charge_is_recorded() -> None:
    ledger = Ledger()
    ledger.bill(charge("free", 0.0))
    assert [c.amount for c in ledger.charges] == [0.0]


def test_a_negative_charge_is_refused_and_not_recorded() -> None:
    ledger = Ledger()
    with pytest.raises(ValueError, match=r"charge amount=-0\.5 must be >= 0"):
        ledger.bill(charge("x", -0.5))
    assert ledger.charges == []
