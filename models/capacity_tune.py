"""Choosing the prices' capacity quantile q for a platform: replay its job stream on the rows the model is fitted on.

No single q serves every workload (docs/capacity-model.md, "The quantile q"): a lower q prices against less capacity
and admits less work, which pays where many jobs compete for a full platform and costs where recurring work would
have fitted. So the platform chooses q the way an operator would, from what it has before the played rows exist:
its capacity model's fit rows and its own job stream. For each q of the grid, `seeds` realizations of the job
stream (seeds the evaluation does not use) are simulated under the capacity model with that q, against the fit
rows as the realized capacity; the q of the largest mean welfare is chosen, the default on a tie.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mechanism.capacity import DEFAULT_QUANTILE
from models.capacity_fit import DEFAULT_LEVEL_WEIGHT, LevelWeight, with_capacity
from models.simulation import Workload, run_simulation

QUANTILE_GRID = (0.1, 0.3, 0.5)  # the values docs/capacity-model.md compares
TUNE_SEEDS = 40  # job realizations per q
TUNE_FIRST_SEED = 10_000  # the tuning's seeds are 10000, ...: the evaluations' seed ranges lie below
TUNE_STRIDE = 13  # replay k starts at fit row k * stride, as the evaluation's runs do on the played rows


@dataclass(frozen=True)
class QuantileChoice:
    """The chosen q and, per q of the grid, the mean welfare and evictions + cancellations of its replays."""

    quantile: float
    welfare: dict[float, float] = field(default_factory=dict)
    evicted_cancelled: dict[float, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return {"quantile": self.quantile,
                "grid": [{"quantile": q, "welfare": self.welfare[q], "evicted_cancelled": self.evicted_cancelled[q]}
                         for q in sorted(self.welfare)]}


def tune_quantile(make: Callable[[int], Workload], spec: str, fit_rows: int, scale: float | None = None,
                  level_weight: LevelWeight = DEFAULT_LEVEL_WEIGHT, price_floor: bool = False,
                  grid: tuple[float, ...] = QUANTILE_GRID, seeds: int = TUNE_SEEDS,
                  first_seed: int = TUNE_FIRST_SEED, stride: int = TUNE_STRIDE) -> QuantileChoice:
    """The q of `grid` whose replays on the fit rows of `spec` have the largest mean welfare (`make(seed)` is the
    platform's job stream for a seed; ties go to the default q, then to the lower q)."""
    if not grid or any(not 0.0 < q < 1.0 for q in grid):
        raise ValueError(f"quantile grid {grid!r} must be non-empty, each q strictly between 0 and 1")
    if seeds < 1:
        raise ValueError(f"tuning seeds={seeds} must be >= 1")
    welfare: dict[float, float] = {}
    evicted_cancelled: dict[float, float] = {}
    streams = [make(seed) for seed in range(first_seed, first_seed + seeds)]  # the same job streams for every q
    for q in grid:
        runs = [run_simulation(with_capacity(jobs, spec, "forecast", scale, q, start=k * stride, fit_rows=fit_rows,
                                             level_weight=level_weight, price_floor=price_floor,
                                             replay_fit_rows=True))
                for k, jobs in enumerate(streams)]
        welfare[q] = sum(r.welfare for r in runs) / seeds
        evicted_cancelled[q] = sum(r.evicted_cancelled for r in runs) / seeds
    best = max(grid, key=lambda q: (welfare[q], q == DEFAULT_QUANTILE, -q))
    return QuantileChoice(best, welfare, evicted_cancelled)
