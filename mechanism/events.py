"""Events: every state change of every job, numbered in the order the engine made them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

EVENT_TYPES = ("quote", "arrive", "start", "evict", "cancel", "complete", "expire", "not_scheduled")


@dataclass(frozen=True)
class Event:
    seq: int
    round: int
    type: str
    job: str
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "round": self.round, "type": self.type, "job": self.job, **self.data}
