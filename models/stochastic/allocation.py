"""A fractional unit allocation (seed 002 App. E, Definition 1) built greedily from the LP solution, and its checker."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from models.stochastic.lp import LPSolution, Outcomes

TOLERANCE = 1e-9


@dataclass(frozen=True)
class UnitAllocation:
    """Bundles B_k (units[k, r] nodes of round first_round + r) and outcome sets A_k (`sets[k]`), with z' <= z."""

    C_m: int
    supply: int  # whole units per round partitioned into bundles: floor(C')
    first_round: int
    units: np.ndarray  # int64 (K, rounds)
    sets: tuple[np.ndarray, ...]  # outcome indices of A_k
    z: np.ndarray  # z' per outcome: the part of the LP's z kept (0 if dropped)
    held: np.ndarray | None = None  # int64 (rounds,): units earlier bundles hold (the LP's `held`); None: none

    @property
    def bundles(self) -> int:
        return int(self.units.shape[0])


def bundle_sums(outcomes: Outcomes, alloc: UnitAllocation) -> tuple[np.ndarray, np.ndarray]:
    """V(A_k) = sum V~(omega) z'_omega and W(A_k) = sum w(omega) z'_omega per bundle."""
    v = np.array([math.fsum((outcomes.value[s] * alloc.z[s]).tolist()) for s in alloc.sets])
    w = np.array([math.fsum((outcomes.width[s] * alloc.z[s]).tolist()) for s in alloc.sets])
    return v, w


def unit_prices(outcomes: Outcomes, alloc: UnitAllocation) -> np.ndarray:
    """Lemma E.2: p_k = V(A_k) / (2 W(A_k)), per unit of width."""
    v, w = bundle_sums(outcomes, alloc)
    return v / (2.0 * w)


def build_unit_allocation(sol: LPSolution, C_m: int) -> UnitAllocation:
    """Pack the LP's outcomes into bundles of C_m units per covered round, greedily (docs/stochastic.md).

    Outcomes go in order of value per unit of width (V~/w = V/c, highest first), then start, each whole into the
    bundle `_choose_bundle` picks (an open bundle holds a mass w z of at most C_m: condition 2). A bundle takes C_m
    units of every round it covers (conditions 1 and 3), at most floor(C' / C_m) bundles a round. What does not
    fit is dropped (z' < z): the construction is always a valid fractional unit allocation of some z' <= z; how
    much of Val(z) it keeps is measured, not guaranteed.
    """
    lp, om = sol.lp, sol.lp.outcomes
    supply = math.floor(lp.capacity + TOLERANCE)
    rounds = lp.supply.shape[0]
    per_round = np.maximum(supply - lp.held_units, 0) // C_m  # bundle slots of each round beside earlier bundles
    z_kept = np.zeros(om.size)
    count = np.zeros(rounds, dtype=np.int64)  # bundles covering each round
    covers: list[np.ndarray] = []  # bool (rounds,) per bundle
    room: list[float] = []  # C_m - W(A_k) so far
    members: list[list[int]] = []
    live = np.flatnonzero(sol.z > 0.0)
    density = om.value[live] / om.width[live]
    for i in live[np.lexsort((live, om.start[live], -density))].tolist():
        lo, hi = int(om.start[i]) - lp.first_round, int(om.end[i]) - lp.first_round
        mass = float(om.width[i] * sol.z[i])
        best = _choose_bundle(covers, room, count, per_round, lo, hi, mass)
        if best is None:
            continue
        k = best
        if k == len(covers):
            covers.append(np.zeros(rounds, dtype=bool))
            room.append(float(C_m))
            members.append([])
        count[lo:hi] += ~covers[k][lo:hi]
        covers[k][lo:hi] = True
        kept = min(room[k], mass)
        z_kept[i] = sol.z[i] if kept >= mass else kept / float(om.width[i])
        room[k] = max(room[k] - kept, 0.0)
        members[k].append(i)
    units = (np.array(covers, dtype=np.int64).reshape(len(covers), rounds)) * C_m
    return UnitAllocation(C_m=C_m, supply=supply, first_round=lp.first_round, units=units,
                          sets=tuple(np.array(m, dtype=np.int64) for m in members), z=z_kept, held=lp.held_units)


def _choose_bundle(covers: list[np.ndarray], room: list[float], count: np.ndarray, per_round: np.ndarray, lo: int,
                   hi: int, mass: float) -> int | None:
    """The bundle for an outcome over rounds [lo, hi) of mass `mass` (len(covers) = a new one), None if none.

    First an open bundle already covering [lo, hi) with room for the whole mass (the fullest such: it keeps the
    others' room for wider outcomes); else a new bundle of exactly [lo, hi); else the open bundle covering
    [lo, hi) with the most room (part of the mass). A bundle never grows past its first outcome's rounds: one
    spanning several intervals would hold nodes in every round of their union for a mass of at most C_m in all.
    """
    covering = [k for k, c in enumerate(covers) if room[k] > TOLERANCE and bool(c[lo:hi].all())]
    whole = [k for k in covering if room[k] >= mass - TOLERANCE]
    if whole:
        return min(whole, key=lambda k: (room[k], k))
    if np.all(count[lo:hi] < per_round[lo:hi]):
        return len(covers)
    if covering:
        return min(covering, key=lambda k: (-room[k], k))
    return None


def check_unit_allocation(outcomes: Outcomes, z_lp: np.ndarray, alloc: UnitAllocation) -> list[str]:
    """Every way `alloc` fails Definition 1 (empty if it is a fractional unit allocation of its z' <= z_lp)."""
    bad: list[str] = []
    z = alloc.z
    if z.shape != z_lp.shape or np.any(z < 0.0) or np.any(z > z_lp + TOLERANCE):
        bad.append("z' must satisfy 0 <= z' <= z (a part of the LP solution)")
        return bad
    if len(alloc.sets) != alloc.units.shape[0]:
        bad.append(f"{len(alloc.sets)} outcome sets for {alloc.units.shape[0]} bundles")
        return bad
    seen = np.zeros(z.size, dtype=np.int64)
    for s in alloc.sets:
        np.add.at(seen, s, 1)
    if np.any(seen > 1):
        bad.append(f"outcomes {np.flatnonzero(seen > 1)[:5].tolist()} are in more than one set A_k")
    missing = np.flatnonzero((z > 0.0) & (seen == 0))
    if missing.size:
        bad.append(f"outcomes {missing[:5].tolist()} have z' > 0 but are in no set A_k")
    units = alloc.units
    if np.any(units < 0):
        bad.append("a bundle holds a negative number of units")
    taken = units.sum(axis=0) + (alloc.held if alloc.held is not None else 0)
    over = np.flatnonzero(taken > alloc.supply)
    if over.size:
        bad.append(f"rounds {(over[:5] + alloc.first_round).tolist()} give bundles more than the supply "
                   f"{alloc.supply} units (earlier bundles' included)")
    for k, s in enumerate(alloc.sets):
        where = f"bundle {k}"
        thin = np.flatnonzero((units[k] > 0) & (units[k] < alloc.C_m))
        if thin.size:  # condition 3
            bad.append(f"{where} holds fewer than C_m={alloc.C_m} units of rounds "
                       f"{(thin[:5] + alloc.first_round).tolist()}")
        weight = math.fsum((outcomes.width[s] * z[s]).tolist())
        if weight > alloc.C_m + TOLERANCE:  # condition 2
            bad.append(f"{where} has W(A_k)={weight:.6g} above C_m={alloc.C_m}")
        for i in s.tolist():  # condition 1
            lo, hi = int(outcomes.start[i]) - alloc.first_round, int(outcomes.end[i]) - alloc.first_round
            if lo < 0 or hi > units.shape[1] or np.any(units[k, lo:hi] < outcomes.width[i]):
                bad.append(f"{where}: outcome {i}'s interval [{outcomes.start[i]}, {outcomes.end[i]}) is not "
                           "inside it")
    return bad
