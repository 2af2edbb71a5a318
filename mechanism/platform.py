"""Platform bounds and mechanism parameters (docs/model.md section 1)."""

from __future__ import annotations

import math
from typing import Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from mechanism.capacity import CapacityModel
from mechanism.reserve import Reserve
from mechanism.validation import number

MAX_OUTCOMES = 10_000
MAX_BUNDLES = 100_000
MAX_BUNDLE_ROUND = 10_000_000
MAX_BUNDLE_WINDOW = 10_000


class Bundle(BaseModel):
    """A bundle B_k of the stochastic pricing (Lemma E.2): its unit price p_k and the rounds it holds nodes of."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    price: float = Field(ge=0.0, allow_inf_nan=False, description="p_k per node of a run it holds")
    rounds: tuple[tuple[int, int], ...] = Field(min_length=1, description="half-open runs [lo, hi) of rounds")

    _numbers = field_validator("price", mode="before")(number)

    @field_validator("rounds")
    @classmethod
    def _runs_ordered(cls, runs: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
        lower = 0  # runs are sorted and apart: each starts after the previous one's end
        for i, (lo, hi) in enumerate(runs):
            if not lower <= lo < hi <= MAX_BUNDLE_ROUND:
                raise ValueError(f"rounds[{i}]=[{lo}, {hi}) must satisfy {lower} <= lo < hi <= {MAX_BUNDLE_ROUND} "
                                 "(runs sorted, apart, not empty)")
            lower = hi + 1
        return runs


Overload = Literal["newest", "newest_demanding"]  # step 3's rules (docs/model.md 6)
OVERLOAD_RULES: tuple[str, ...] = get_args(Overload)


class Platform(BaseModel):
    """C identical nodes, the SoW bounds C_m, D_m, S_m, H, and the mechanism's parameters."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    C: int = Field(ge=1, le=1_000_000, description="identical nodes")
    C_m: int = Field(ge=1, description="max concurrency of a job")
    D_m: int = Field(ge=1, le=10_000, description="max duration in rounds")
    S_m: int = Field(ge=1, le=10_000, description="a job's value is 0 at S_m rounds after birth")
    H: float = Field(ge=1.0, le=1e12, description="max value; positive values lie in [1, H]")
    epsilon: float = Field(default=0.1, gt=0.0, lt=1.0, description="slack of Alg. 2")
    eps0: float = Field(default=0.02, gt=0.0, lt=1.0, description="failure-oracle accuracy")
    delta0: float = Field(default=0.01, gt=0.0, lt=1.0, description="failure-oracle confidence")
    seed: int = Field(default=0, ge=0, lt=2**63)
    samples: int | None = Field(default=None, ge=1, le=10_000_000, description="Monte Carlo samples; default Lemma F.1")
    # The stochastic variant (Thm 5.2): bundle prices of Lemma E.2 in place of the exponential ones (eq. 7).
    pricing: Literal["exponential", "stochastic"] = Field(default="exponential", description="price menus")
    bundles: tuple[Bundle, ...] = Field(default=(), max_length=MAX_BUNDLES, description="pricing 'stochastic'")
    bundle_window: int = Field(default=0, ge=0, le=MAX_BUNDLE_WINDOW, description=(
        "pricing 'stochastic': 0 keeps the bundles for good; W > 0 re-solves them every W rounds on the last W "
        "rounds' submissions (a rolling horizon, docs/stochastic.md)"))
    capacity: CapacityModel | None = Field(
        default=None, description="capacity of future rounds: None = fixed C; else a stochastic process")
    reserve: Reserve | None = Field(default=None, description=(
        "None: the failure oracle assumes C; else nodes it leaves out, raised after overloads (docs/model.md 10.9)"))
    overload: Overload = Field(default="newest", description=(
        "step 3's victim while the load exceeds C: 'newest', the newest active job, demanding this round or not "
        "(Remark 2); 'newest_demanding', the newest active job that demands this round (docs/model.md 6)"))

    # `C = "32"` or `true` in a file is refused
    _numbers = field_validator("C", "C_m", "D_m", "S_m", "H", "epsilon", "eps0", "delta0", "seed", "samples",
                               "bundle_window", mode="before")(number)

    @model_serializer(mode="wrap")
    def _defaults_unsaid(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The exponential prices, a fixed capacity and Remark 2's overload rule, the defaults, are not written
        out: the dumps, files and state digests of such a platform read as they always did."""
        data: dict[str, Any] = handler(self)
        if self.pricing == "exponential" and not self.bundles:
            data.pop("pricing", None)
            data.pop("bundles", None)
        if self.capacity is None:
            data.pop("capacity", None)
        if self.reserve is None:
            data.pop("reserve", None)
        if self.bundle_window == 0:
            data.pop("bundle_window", None)
        if self.overload == "newest":
            data.pop("overload", None)
        return data

    @property
    def cancels_waiting(self) -> bool:
        """Whether an overflow of the earlier jobs' load cancels a newer job that is only waiting (Remark 2's rule)."""
        return self.overload == "newest"

    @model_validator(mode="after")
    def _check_relations(self) -> Platform:
        if self.C_m > self.C:
            raise ValueError(f"C_m={self.C_m} exceeds the bound C={self.C}")
        if self.pricing == "stochastic" and not self.bundles:
            raise ValueError("pricing='stochastic' needs bundles (from the prior's LP: models/stochastic)")
        if self.pricing == "exponential" and self.bundles:
            raise ValueError(f"bundles ({len(self.bundles)}) are given but pricing is 'exponential'")
        if self.pricing == "exponential" and self.bundle_window:
            raise ValueError(f"bundle_window={self.bundle_window} is given but pricing is 'exponential'")
        if self.reserve is not None and self.capacity is not None:
            raise ValueError("reserve needs a fixed capacity: capacity is a model (its failure estimates already "
                             "follow the model's capacity)")
        if self.reserve is not None and self.reserve.most > self.C - 1:
            raise ValueError(f"reserve.most={self.reserve.most} exceeds the bound C - 1 = {self.C - 1}")
        return self

    @property
    def sim_capacity(self) -> float:
        """C' = C (1 - epsilon/10), the capacity of the relaxed simulator (Alg. 2); with a capacity model C is
        replaced by the model's `quantile` of its stationary capacity (docs/capacity-model.md)."""
        if self.capacity is not None:
            return max(self.capacity.price_capacity(), 1.0) * (1.0 - self.epsilon / 10.0)  # at least 1 node
        return self.C * (1.0 - self.epsilon / 10.0)

    @property
    def capacity_top(self) -> int:
        """The greatest capacity any round can have in the oracle: C, or the capacity model's `high`."""
        return self.C if self.capacity is None else self.capacity.high

    @property
    def sample_count(self) -> int:
        """N: explicit `samples`, else ceil(2 ln(D_m S_m / delta0) / eps0^2) (Lemma F.1)."""
        if self.samples is not None:
            return self.samples
        return lemma_f1_samples(self.D_m, self.S_m, self.eps0, self.delta0)

    @property
    def failure_threshold(self) -> float:
        """Announced estimates at or below epsilon/10 + eps0 are zeroed (Alg. 2 line 6, widened by eps0)."""
        return self.epsilon / 10.0 + self.eps0

    @property
    def horizon(self) -> int:
        """Rounds after birth that a job can occupy: starts up to S_m - 1, plus a duration up to D_m."""
        return self.S_m + self.D_m - 1


def lemma_f1_samples(D_m: int, S_m: int, eps0: float, delta0: float) -> int:
    """T = 2 ln(D_m S_m / delta0) / eps0^2 samples give eps0-accurate estimates w.p. 1 - delta0 (Lemma F.1)."""
    return math.ceil(2.0 * math.log(D_m * S_m / delta0) / eps0**2)


def hoeffding_radius(samples: int, D_m: int, S_m: int, delta0: float) -> float:
    """The eps0 that `samples` samples guarantee for every (s, d) at once with prob. 1 - delta0."""
    return math.sqrt(2.0 * math.log(D_m * S_m / delta0) / samples)
