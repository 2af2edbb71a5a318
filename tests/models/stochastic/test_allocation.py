"""Definition 1: the checker on hand-made partitions (valid and each way invalid), the greedy construction, prices."""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.sparse as sp

from models.stochastic.allocation import (
    UnitAllocation,
    build_unit_allocation,
    bundle_sums,
    check_unit_allocation,
    unit_prices,
)
from models.stochastic.lp import LPSolution, Outcomes, StochasticLP, build_lp, solve_lp
from tests.models.stochastic.conftest import random_prior, tiny_platform


def hand_outcomes() -> Outcomes:
    """Three outcomes: [0, 2) width 1 value 6, [1, 2) width 0.5 value 2, [2, 4) width 1 value 3."""
    return Outcomes(job=np.array([0, 0, 1]), sow=np.zeros(3, dtype=np.int64), task=np.array([0, 1, 0]),
                    start=np.array([0, 1, 2]), duration=np.array([2, 1, 2]), width=np.array([1.0, 0.5, 1.0]),
                    value=np.array([6.0, 2.0, 3.0]), cap_row=np.array([0, 1, 2]), caps=np.ones(3))


def hand_allocation(**kw: object) -> UnitAllocation:
    """C_m = 2, 4 units a round: bundle 0 = 2 units of rounds 0-1 holding outcomes 0 and 1 (W = 1 + 0.5 * 1),
    bundle 1 = 2 units of rounds 2-3 holding outcome 2 (W = 1 * 0.5)."""
    base: dict[str, object] = {
        "C_m": 2, "supply": 4, "first_round": 0,
        "units": np.array([[2, 2, 0, 0], [0, 0, 2, 2]]),
        "sets": (np.array([0, 1]), np.array([2])), "z": np.array([1.0, 1.0, 0.5])}
    base.update(kw)
    return UnitAllocation(**base)  # type: ignore[arg-type]


Z_LP = np.array([1.0, 1.0, 0.5])


def test_a_partition_meeting_definition_1_has_no_problem() -> None:
    assert check_unit_allocation(hand_outcomes(), Z_LP, hand_allocation()) == []


def test_a_bundles_unit_price_is_its_value_over_twice_its_width() -> None:
    om, alloc = hand_outcomes(), hand_allocation()
    v, w = bundle_sums(om, alloc)
    assert v.tolist() == [8.0, 1.5] and w.tolist() == [1.5, 0.5]
    # p_k = V(A_k) / (2 W(A_k)): 8 / 3 and 1.5 / 1.
    assert unit_prices(om, alloc).tolist() == [8.0 / 3.0, 1.5]


@pytest.mark.parametrize(("change", "message"), [
    ({"z": np.array([1.0, 1.0, 0.6])}, r"0 <= z' <= z"),
    ({"z": np.array([1.0, -0.1, 0.5])}, r"0 <= z' <= z"),
    ({"sets": (np.array([0, 1, 2]), np.array([2]))}, r"outcomes \[2\] are in more than one set"),
    ({"sets": (np.array([0]), np.array([2]))}, r"outcomes \[1\] have z' > 0 but are in no set"),
    ({"sets": (np.array([0, 1]),)}, "1 outcome sets for 2 bundles"),
    ({"units": np.array([[2, 2, 0, 0], [0, 0, 1, 2]])}, r"bundle 1 holds fewer than C_m=2 units of rounds \[2\]"),
    ({"units": np.array([[2, 2, 0, 0], [0, 4, 2, 2]])}, r"rounds \[1\] give bundles more than the supply 4"),
    ({"units": np.array([[2, 0, 0, 0], [0, 0, 2, 2]])}, r"bundle 0: outcome 0's interval \[0, 2\) is not inside"),
    ({"units": np.array([[2, 2, 0, 0], [0, 0, 2, 0]])}, r"bundle 1: outcome 2's interval \[2, 4\) is not inside"),
    ({"units": np.array([[-2, 2, 0, 0], [0, 0, 2, 2]])}, "negative number of units"),
])
def test_a_partition_breaking_definition_1_is_named(change: dict[str, object], message: str) -> None:
    assert any(re.search(message, m) for m in
               check_unit_allocation(hand_outcomes(), Z_LP, hand_allocation(**change)))


def test_too_heavy_a_bundle_breaks_condition_2() -> None:
    heavy = hand_outcomes()
    heavy = Outcomes(**{**heavy.__dict__, "width": np.array([1.5, 1.0, 1.0])})
    assert check_unit_allocation(heavy, Z_LP, hand_allocation()) == ["bundle 0 has W(A_k)=2.5 above C_m=2"]


@pytest.mark.parametrize("seed", range(10))
def test_greedy_construction_is_always_a_fractional_unit_allocation(seed: int) -> None:
    p = tiny_platform(C=12, S_m=6, D_m=3)
    rng = np.random.default_rng(seed)
    prior = random_prior(rng, p, jobs=int(rng.integers(3, 12)), max_sows=3, max_tasks=3)
    sol = solve_lp(build_lp(prior, p, capacity=float(rng.uniform(2.0, 8.0))))
    alloc = build_unit_allocation(sol, p.C_m)
    assert check_unit_allocation(sol.lp.outcomes, sol.z, alloc) == []
    assert np.all(alloc.z <= sol.z) and float(sol.lp.outcomes.value @ alloc.z) <= sol.value + 1e-9
    assert alloc.units.sum(axis=0).max(initial=0) <= alloc.supply


def test_slack_supply_keeps_everything() -> None:
    """With room for a bundle per outcome, nothing is dropped: z' = z."""
    p = tiny_platform(C=100, C_m=2, S_m=4)
    prior = random_prior(np.random.default_rng(3), p, jobs=3)
    sol = solve_lp(build_lp(prior, p, capacity=60.0))
    alloc = build_unit_allocation(sol, p.C_m)
    assert check_unit_allocation(sol.lp.outcomes, sol.z, alloc) == []
    assert alloc.z.tolist() == sol.z.tolist()


def test_greedy_places_whole_then_new_then_partial_and_drops_the_rest() -> None:
    """C' = 2 units a round, C_m = 2: one bundle a round. By density: A [0, 2) mass 1.5 opens bundle 0; B [0, 1)
    mass 1 fits only partly into it (room 0.5: z' = 0.5 of 1); C [2, 3) opens bundle 1; D [1, 3) has no bundle
    covering it and no free slot (bundles never grow): dropped."""
    om = Outcomes(job=np.arange(4), sow=np.zeros(4, dtype=np.int64), task=np.zeros(4, dtype=np.int64),
                  start=np.array([0, 0, 2, 1]), duration=np.array([2, 1, 1, 2]), width=np.array([1.5, 1.0, 1.0, 1.0]),
                  value=np.array([40.0, 10.0, 5.0, 2.0]), cap_row=np.arange(4), caps=np.ones(4))
    lp = StochasticLP(outcomes=om, first_round=0, capacity=2.0, supply=sp.csr_matrix((3, 4)),
                      tasks=sp.csr_matrix((4, 4)))
    alloc = build_unit_allocation(LPSolution(lp=lp, z=np.ones(4), value=57.0, status="optimal"), C_m=2)
    assert alloc.units.tolist() == [[2, 2, 0], [0, 0, 2]]
    assert [s.tolist() for s in alloc.sets] == [[0, 1], [2]]
    assert alloc.z.tolist() == [1.0, 0.5, 1.0, 0.0]
    assert check_unit_allocation(om, np.ones(4), alloc) == []
    assert unit_prices(om, alloc).tolist() == [(40.0 + 5.0) / (2 * 2.0), 5.0 / 2.0]
