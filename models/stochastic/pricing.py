"""From a prior to the platform's bundle prices: the LP under C' = C/2, its unit allocation, p_k (Thm 5.2)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from mechanism.platform import Bundle, Platform
from models.prior import Prior, check_prior
from models.simulation import Workload
from models.stochastic.allocation import UnitAllocation, build_unit_allocation, check_unit_allocation, unit_prices
from models.stochastic.lp import LPSolution, build_lp, solve_lp


@dataclass(frozen=True)
class StochasticPricing:
    """The platform carrying the bundles (plain numbers a replay sees) and how they were derived."""

    platform: Platform
    solution: LPSolution
    allocation: UnitAllocation
    prices: np.ndarray

    def report(self) -> dict[str, Any]:
        """LP size and value, the allocation's kept value and its bundles (JSON-able)."""
        om = self.solution.lp.outcomes
        kept = float(om.value @ self.allocation.z)
        return {"lp": {**self.solution.size(), "capacity": self.solution.lp.capacity,
                       "value": self.solution.value},
                "allocation": {"bundles": self.allocation.bundles, "supply_units": self.allocation.supply,
                               "value": kept, "kept": kept / self.solution.value if self.solution.value else 1.0},
                "prices": {"min": float(self.prices.min(initial=np.inf)) if self.prices.size else None,
                           "median": float(np.median(self.prices)) if self.prices.size else None,
                           "max": float(self.prices.max(initial=0.0)) if self.prices.size else None}}


def runs_of(held: np.ndarray, first_round: int) -> tuple[tuple[int, int], ...]:
    """The maximal runs [lo, hi) of True in `held` (index r is round first_round + r)."""
    edges = np.diff(np.concatenate([[0], held.astype(np.int8), [0]]))
    return tuple((int(lo) + first_round, int(hi) + first_round)
                 for lo, hi in zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1), strict=True))


def stochastic_pricing(prior: Prior, platform: Platform, window: int = 0) -> StochasticPricing:
    """Solve the App. E LP of `prior` with C' = C/2 (C: the relaxed simulator's capacity, MODEL.md section 4),
    build and check its fractional unit allocation, and put the bundles and p_k into the platform; window W > 0:
    a rolling horizon re-solves them every W rounds (models/stochastic/rolling.py)."""
    check_prior(prior, platform)
    base = exponential(platform)
    solution, alloc, prices, bundles = solve_bundles(prior, base)
    if not bundles:
        raise ValueError("the prior's LP allocates nothing: no bundle to price")
    priced = Platform.model_validate({**base.model_dump(), "pricing": "stochastic", "bundles": bundles,
                                      "bundle_window": window})
    return StochasticPricing(platform=priced, solution=solution, allocation=alloc, prices=prices)


def exponential(platform: Platform) -> Platform:
    """The platform without bundle prices (what the LP's capacity C_sim is read from)."""
    return Platform.model_validate({**platform.model_dump(), "pricing": "exponential", "bundles": (),
                                    "bundle_window": 0})


def solve_bundles(prior: Prior, base: Platform, held: Callable[[int, int], np.ndarray] | None = None
                  ) -> tuple[LPSolution, UnitAllocation, np.ndarray, tuple[Bundle, ...]]:
    """The LP of `prior` under C' = C_sim / 2 less the units `held` by earlier bundles, its checked unit allocation,
    and the bundles with p_k (the sets A_k that kept something; their prices alongside)."""
    solution = solve_lp(build_lp(prior, base, base.sim_capacity / 2.0, held))
    alloc = build_unit_allocation(solution, base.C_m)
    problems = check_unit_allocation(solution.lp.outcomes, solution.z, alloc)
    if problems:
        raise RuntimeError("the unit allocation breaks Definition 1: " + "; ".join(problems))
    keep = [k for k, s in enumerate(alloc.sets) if s.size]
    prices = unit_prices(solution.lp.outcomes, alloc)
    bundles = tuple(Bundle(price=float(prices[k]), rounds=runs_of(alloc.units[k] > 0, alloc.first_round))
                    for k in keep)
    return solution, alloc, prices[keep], bundles


def check_stochastic_workload(workload: Workload) -> Prior:
    """The workload's prior, if every job reveals its duration at arrival; else ValueError naming the job."""
    if workload.prior is None:
        raise ValueError(f"pricing 'stochastic' needs a workload with a prior (workload {workload.name!r} has none: "
                         "use --workload stochastic, or a W.json with a \"prior\" section)")
    for i, job in enumerate(workload.jobs):
        for o, sig in zip(job.sow.outcomes, job.sow.signals, strict=True):
            if sig != str(o.duration):
                raise ValueError(f"jobs[{i}] (id {job.id!r}) has signal_mode {job.sow.signal_mode!r}: pricing "
                                 "'stochastic' needs the duration revealed at arrival (signal_mode 'duration')")
    return workload.prior


def priced_workload(workload: Workload) -> tuple[Workload, StochasticPricing]:
    """The workload on a platform with its prior's bundle prices."""
    pricing = stochastic_pricing(check_stochastic_workload(workload), workload.platform)
    return dataclasses.replace(workload, platform=pricing.platform), pricing
