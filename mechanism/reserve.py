"""A reserve the platform sets itself: nodes the failure oracle leaves out of C, raised after overloads (model.md 10.9).

H_0 = 0; after round t, H_{t+1} = min(most, H_t + up) if round t's overload step (step 3) cancelled or evicted a
job, else max(0, H_t - down). Round t's failure oracle assumes C - floor(H_t) nodes in every future round (a point
capacity model at that level, docs/model.md 10.5), while the prices and step 3 keep the fixed C. H_t is fixed
before round t's first quote and depends only on what rounds before t did, so no job's report moves the reserve
its own menu was quoted with, and a replay of the same commands rebuilds it.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mechanism.capacity import MAX_CAPACITY, CapacityModel
from mechanism.validation import number


class Reserve(BaseModel):
    """The rule: `up` nodes more after a round with an overload, `down` fewer after any other, within [0, most]."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    up: float = Field(gt=0.0, le=MAX_CAPACITY, allow_inf_nan=False,
                      description="nodes added to the reserve after a round whose overload step removed a job")
    down: float = Field(gt=0.0, le=MAX_CAPACITY, allow_inf_nan=False,
                        description="nodes taken off the reserve after any other round")
    most: int = Field(ge=1, le=MAX_CAPACITY, description="the largest reserve, in nodes (at most C - 1)")

    _numbers = field_validator("up", "down", "most", mode="before")(number)

    def next(self, reserve: float, overloaded: bool) -> float:
        """H_{t+1} from H_t and whether round t's overload step cancelled or evicted a job."""
        return min(float(self.most), reserve + self.up) if overloaded else max(0.0, reserve - self.down)

    @staticmethod
    def held(reserve: float) -> int:
        """The whole nodes the oracle holds back: floor(H_t)."""
        return math.floor(reserve)

    def oracle_model(self, C: int, reserve: float) -> CapacityModel | None:
        """The failure oracle's capacity model with `reserve` held back: a point at C - floor(H_t) (low = high =
        the point), prices floored at C; None (fixed C) when no whole node is held back."""
        held = self.held(reserve)
        if held == 0:
            return None
        point = C - held
        return CapacityModel(mean=point, phi=0.0, errors=(0.0,), weights=(1.0,), low=point, high=point,
                             price_floor=float(C))
