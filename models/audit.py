"""What a misreport gains: a job's expected utility under a reference law for alternative declarations, same menu.

The mechanism (docs/model.md sections 7 and 9) chooses, per declared (arrival, signal) group, the start that
maximises the estimated utility under the declared SoW at the announced menu and failure estimates. Declaring
another SoW can only change which plan is chosen; this module evaluates each plan under the reference law (the
outcomes that are expected really to happen): an outcome whose group the declaration does not hold is refused
(0), one whose duration the declaration does not hold is evicted past the longest declared duration of its group
(0: evicted jobs pay nothing), otherwise it earns (1 - E_bar(s, c, d)) (V(s + d) - pi_b(s, c, d)).
The family of alternatives keeps the concurrency (over-reporting it is the known exception, docs/design.md).

A second exception shows here: a declaration that truncates a group's durations below the reference's turns the
truncated outcomes into overrun evictions, which pay nothing, so an outcome that would finish past its deadline at
a positive price (a loss) becomes 0. Against declarations that cover the reference (`covers`) the declared plan
is never beaten (Thm 3.2); truncations can gain (tests/models/test_audit.py pins one).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from mechanism.launch_plan import FailureEstimates, LaunchPlan, choose_plan
from mechanism.platform import Platform
from mechanism.pricing import PriceMenu
from mechanism.sow import SoW

Estimates = Callable[[int], FailureEstimates]  # concurrency -> E(s, d) at the job's birth


@dataclass(frozen=True)
class Audit:
    """The best alternative's expected-utility gain over the declaration, under the reference law."""

    best_gain: float
    best_misreport: dict[str, Any] | None  # the alternative SoW (None: no alternative gains)
    tried: int
    declared_utility: float

    def to_dict(self) -> dict[str, Any]:
        return {"best_gain": self.best_gain, "best_misreport": self.best_misreport, "tried": self.tried,
                "declared_utility": self.declared_utility}


class Alternative(NamedTuple):
    """An alternative declaration: what the job would have told (reported as `best_misreport`) and its SoW."""

    misreport: dict[str, Any]
    sow: SoW


def utility_under(plan: LaunchPlan, declared: SoW, reference: SoW, menu: PriceMenu, est: FailureEstimates) -> float:
    """Expected utility, under `reference`, of following `plan` (chosen for `declared`)."""
    starts = {(g.arrival - plan.birth, g.signal): g.start for g in plan.groups}
    longest: dict[tuple[int, Any], int] = {}
    for o, sig in zip(declared.outcomes, declared.signals, strict=True):
        key = (o.arrival_offset, sig)
        longest[key] = max(longest.get(key, 0), o.duration)
    terms: list[float] = []
    for o, sig in zip(reference.outcomes, reference.signals, strict=True):
        key = (o.arrival_offset, sig)
        s = starts.get(key)
        if s is None or o.duration > longest[key]:
            continue
        rel = s - plan.birth
        keep = 1.0 - float(est.announced[rel, o.duration - 1])
        value = float(reference.value(rel + o.duration))
        terms.append(o.probability * keep * (value - float(menu.price(s, declared.concurrency, o.duration))))
    return math.fsum(terms)


def audit(declared: SoW, reference: SoW, alternatives: Iterable[SoW | Alternative], birth: int, menu: PriceMenu,
          estimates: Estimates) -> Audit:
    """The largest gain, under `reference`, of declaring an alternative instead of `declared` at the same menu (an
    alternative given as a bare SoW is reported as that SoW)."""
    def utility(sow: SoW) -> float:
        est = estimates(sow.concurrency)
        return utility_under(choose_plan(sow, birth, menu, est), sow, reference, menu, est)

    base = utility(declared)
    best_gain, best, tried = 0.0, None, 0
    for alt in alternatives:
        tried += 1
        sow = alt.sow if isinstance(alt, Alternative) else alt
        gain = utility(sow) - base
        if gain > best_gain:
            best_gain, best = gain, alt.misreport if isinstance(alt, Alternative) else sow.model_dump(mode="json")
    return Audit(best_gain, best, tried, base)


def covers(declared: SoW, reference: SoW) -> bool:
    """Whether every reference outcome's group is declared with a longest duration at least the outcome's: no
    reference outcome is evicted at the declared cap (where an evicted job pays nothing)."""
    longest: dict[tuple[int, Any], int] = {}
    for o, sig in zip(declared.outcomes, declared.signals, strict=True):
        key = (o.arrival_offset, sig)
        longest[key] = max(longest.get(key, 0), o.duration)
    return all(o.duration <= longest.get((o.arrival_offset, sig), 0)
               for o, sig in zip(reference.outcomes, reference.signals, strict=True))


def sow_alternatives(sow: SoW, platform: Platform) -> Iterator[SoW]:
    """The stated family for an explicit SoW: durations shifted by -2..2 rounds and scaled by 0.5, 2; arrivals
    shifted by -1, 1; each outcome dropped; one outcome added per (arrival, duration) pair not declared (with the
    smallest declared probability, the rest renormalised). Invalid members (outside the platform's bounds) are
    left out."""
    base = sow.model_dump(mode="json")
    rows = [dict(o) for o in base["outcomes"]]

    def make(outcomes: list[dict[str, Any]]) -> SoW | None:
        merged: dict[tuple[int, int, Any], float] = {}
        for o in outcomes:
            key = (int(o["arrival_offset"]), int(o["duration"]), o.get("signal"))
            merged[key] = merged.get(key, 0.0) + float(o["probability"])
        total = math.fsum(merged.values())
        if total <= 0:
            return None
        data = {**base, "outcomes": [{"arrival_offset": a, "duration": d, "probability": p / total, "signal": s}
                                     for (a, d, s), p in sorted(merged.items(), key=lambda kv: kv[0][:2])]}
        try:
            return SoW.parse(data, platform)
        except ValueError:
            return None

    candidates: list[list[dict[str, Any]]] = []
    for shift in (-2, -1, 1, 2):
        candidates.append([{**o, "duration": o["duration"] + shift} for o in rows])
    for scale in (0.5, 2.0):
        candidates.append([{**o, "duration": max(1, math.ceil(o["duration"] * scale))} for o in rows])
    for shift in (-1, 1):
        candidates.append([{**o, "arrival_offset": o["arrival_offset"] + shift} for o in rows])
    if len(rows) > 1:
        candidates += [rows[:i] + rows[i + 1:] for i in range(len(rows))]
    declared = {(o["arrival_offset"], o["duration"]) for o in rows}
    smallest = min(o["probability"] for o in rows)
    arrivals = sorted({o["arrival_offset"] for o in rows})
    signal = rows[0].get("signal") if sow.signal_mode == "explicit" else None
    for a in arrivals:
        for d in range(1, platform.D_m + 1):
            if (a, d) not in declared:
                candidates.append([*rows, {"arrival_offset": a, "duration": d, "probability": smallest,
                                           "signal": signal}])
    seen: set[str] = set()
    for outcomes in candidates:
        if any(o["duration"] < 1 or o["arrival_offset"] < 0 for o in outcomes):
            continue
        alt = make(outcomes)
        if alt is None:
            continue
        key = alt.model_dump_json()
        if key not in seen:
            seen.add(key)
            yield alt
