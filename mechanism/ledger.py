"""The ledger: a completed job pays pi_b(s, c, d) from its frozen menu; every other end pays 0."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Charge:
    job: str
    round: int
    start: int
    duration: int
    concurrency: int
    amount: float


class Ledger:
    def __init__(self) -> None:
        self.charges: list[Charge] = []

    def bill(self, charge: Charge) -> None:
        if charge.amount < 0:
            raise ValueError(f"charge amount={charge.amount} must be >= 0")
        self.charges.append(charge)

    @property
    def revenue(self) -> float:
        return float(sum(c.amount for c in self.charges))
