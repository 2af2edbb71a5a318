"""Events: every state change of every job, numbered in the order the engine made them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from json.encoder import encode_basestring_ascii
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

    def canonical_json(self) -> str:
        """json.dumps(self.to_dict(), sort_keys=True), the text the event chain hashes; a quote's (one per
        submission) written directly, in the same bytes, without the encoder's generic walk."""
        data = self.data
        if self.type != "quote" or len(data) != 2 or type(self.job) is not str or type(self.seq) is not int \
                or type(self.round) is not int or type(data.get("utility")) is not float \
                or type(data.get("plan")) is not list:
            return json.dumps(self.to_dict(), sort_keys=True)
        groups = []
        for g in data["plan"]:
            if type(g) is not dict or len(g) != 3:
                return json.dumps(self.to_dict(), sort_keys=True)
            a, sig, start = g.get("arrival"), g.get("signal", 0), g.get("start", "")
            if type(a) is not int or (sig is not None and type(sig) is not str) \
                    or (start is not None and type(start) is not int):  # a missing key fails too
                return json.dumps(self.to_dict(), sort_keys=True)
            groups.append(f'{{"arrival": {a}, "signal": {"null" if sig is None else encode_basestring_ascii(sig)}, '
                          f'"start": {"null" if start is None else start}}}')
        return (f'{{"job": {encode_basestring_ascii(self.job)}, "plan": [{", ".join(groups)}], "round": {self.round}, '
                f'"seq": {self.seq}, "type": "quote", "utility": {_json_float(data["utility"])}}}')


def _json_float(x: float) -> str:
    """A float as json.dumps writes it."""
    if x != x:
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "Infinity" if x > 0 else "-Infinity"
    return float.__repr__(x)
