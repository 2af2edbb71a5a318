"""Reduced-cost fixing: time-indexed starts that no schedule better than a known one can take (LP duality).

For the time-indexed model (models/offline/milp.py)  max c^T x,  A x <= b,  x in {0,1}^n,  and ANY row prices
y >= 0, with reduced costs r = c - A^T y and B(y) = b^T y + sum_k max(r_k, 0), every x in [0,1]^n with A x <= b has

    c^T x = r^T x + y^T A x <= r^T x + y^T b = B(y) - sum_{r_k > 0} r_k (1 - x_k) + sum_{r_k < 0} r_k x_k.

So a 0/1 schedule that sets x_k against the sign of r_k (x_k = 1 where r_k < 0, x_k = 0 where r_k > 0) is worth at
most B(y) - |r_k|. If B(y) - |r_k| < L, the value of a known schedule, no schedule worth more than L does so: x_k is
fixed to its sign's side, and the optimum is max(L, optimum of the fixed model). y are HiGHS's LP row duals clipped
at 0 and B(y) is recomputed here, so the fixing is exact whatever the LP solver's tolerances; with optimal duals
B(y) is the LP optimum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from models.offline.hindsight import HindsightInstance
from models.offline.milp import TimeIndexedModel, build, load

Start = tuple[str, int]


@dataclass(frozen=True)
class LpPrices:
    """The LP's primal x, row prices y >= 0, reduced costs r = c - A^T y and the bound B(y), per column of `model`."""

    model: TimeIndexedModel
    x: np.ndarray
    y: np.ndarray
    reduced: np.ndarray
    bound: float
    solve_seconds: float


@dataclass(frozen=True)
class Fixing:
    """Starts fixed to 0 (`zero`) or 1 (`one`) for schedules worth more than `incumbent`; B(y) and the largest |r|."""

    incumbent: float
    bound: float
    zero: frozenset[Start]
    one: frozenset[Start]
    columns: int
    max_reduced_cost: float

    @property
    def fixed(self) -> int:
        return len(self.zero) + len(self.one)


def lp_prices(instance: HindsightInstance, time_limit: float = 60.0, threads: int = 1) -> LpPrices:
    """Solve the time-indexed LP with HiGHS and price its columns with the clipped row duals."""
    model = build(instance)
    if model.n_cols == 0:
        empty = np.zeros(0)
        return LpPrices(model, empty, np.zeros(model.n_rows), empty, 0.0, 0.0)
    h = load(model, False, time_limit, threads, False)
    h.run()
    solution = h.getSolution()
    x = np.asarray(solution.col_value, dtype=np.float64)
    y = np.maximum(np.asarray(solution.row_dual, dtype=np.float64), 0.0)
    return price(model, x, y, float(h.getRunTime()))


def price(model: TimeIndexedModel, x: np.ndarray, y: np.ndarray, seconds: float = 0.0) -> LpPrices:
    """r = c - A^T y and B(y) = b^T y + sum max(r, 0) for row prices y (refused unless y >= 0, one per row)."""
    if y.shape != (model.n_rows,):
        raise ValueError(f"y has shape {y.shape}, expected one price per row ({model.n_rows},)")
    if np.any(y < 0) or not np.all(np.isfinite(y)):
        raise ValueError(f"y has min={float(np.min(y)) if len(y) else 0.0}, below the bound 0 (or not finite)")
    # (A^T y)_k: sum of coef * y[row] over the entries of column k (every column has at least its job row).
    used = np.add.reduceat(model.coef * y[model.row_index], model.col_ptr[:-1]) if model.n_cols else np.zeros(0)
    reduced = model.cost - used
    bound = math.fsum((y * model.row_upper).tolist()) + math.fsum(np.maximum(reduced, 0.0).tolist())
    return LpPrices(model, x, y, reduced, bound, seconds)


def fix(prices: LpPrices, incumbent: float) -> Fixing:
    """The starts whose flip against the sign of r costs more than B(y) - incumbent (with a float margin)."""
    if not math.isfinite(incumbent):
        raise ValueError(f"incumbent={incumbent} is not a finite schedule value")
    model, r = prices.model, prices.reduced
    margin = 1e-7 * max(1.0, abs(prices.bound))
    # B(y) - |r_k| < L - margin: flipping x_k leaves no room above the incumbent.
    flip = (r != 0.0) & (prices.bound - np.abs(r) < incumbent - margin)
    starts = list(zip(model.column_job, model.column_start.tolist(), strict=True))
    zero = frozenset(starts[k] for k in np.flatnonzero(flip & (r < 0)))
    one = frozenset(starts[k] for k in np.flatnonzero(flip & (r > 0)))
    return Fixing(incumbent=incumbent, bound=prices.bound, zero=zero, one=one, columns=model.n_cols,
                  max_reduced_cost=float(np.max(np.abs(r))) if len(r) else 0.0)


def split_jobs(prices: LpPrices, tol: float = 1e-6) -> tuple[int, int]:
    """(jobs the LP runs whole at one start, jobs it spreads over several starts): where its fractionality is."""
    model, x = prices.model, prices.x
    support: dict[str, int] = {}
    total: dict[str, float] = {}
    for j, v in zip(model.column_job, x.tolist(), strict=True):
        if v > tol:
            support[j] = support.get(j, 0) + 1
            total[j] = total.get(j, 0.0) + v
    whole = sum(1 for j, n in support.items() if n == 1 and total[j] > 1.0 - tol)
    spread = sum(1 for n in support.values() if n > 1)
    return whole, spread
