"""Capacity of future rounds: an AR(1) process on whole nodes with a discrete error law (docs/capacity-model.md).

X_tau = mean + phi (X_{tau-1} - mean) + e_tau and C_tau = clamp(floor(X_tau + 1/2), low, high), the errors e_tau
independent with P(e = errors[i]) = weights[i]; the state X is real (rounding it would make the process stick
wherever the pull back to the mean is below half a node). The process is exogenous: nothing the mechanism does
changes it. A Monte Carlo sample of round t starts from X_{t-1} = C_{t-1}, the capacity realized last, or, when round
t's own capacity was reported before the round's first quote, from C_t itself (then known, not drawn); it draws
e_{t+i} from the counter-based stream `capacity_key(seed, t, i)` (mechanism/rng.py), so a path is a pure function of
(seed, round, sample). The oracle reads a reported capacity through `clamp` (into [low, high]).

Optionally the mean is a level that tracks the feed (`level_weight` lam > 0): mu_t = clamp((1 - lam) mu_{t-1} +
lam C_{t-1}, low, high) from mu_0 = mean, and round t's paths and C' quantiles use the model with mean mu_t
(`at_level`). lam = 0 (the default) is the fixed mean, and such a model dumps as it did before the field existed.

Optionally the prices' capacity has a floor (`price_floor` > 0, in nodes): C_q,tau = max(quantile, floor), so
prices never assume less capacity than the floor (the nominal C, say) while the failure estimates still follow the
model. price_floor = 0 (the default) is no floor and dumps without the field.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from mechanism.validation import number

if TYPE_CHECKING:  # the sampler loads numpy and the compiled streams; the model (a platform field) does not
    import numpy as np

MAX_CAPACITY = 1_000_000  # the bound of Platform.C
MAX_ERRORS = 64  # outcomes of the error law (a draw counts cdf entries up to 64)
WEIGHT_TOLERANCE = 1e-9
DEFAULT_QUANTILE = 0.3  # C' from capacity the platform has about 70 % of the time (docs/capacity-model.md)
QUANTILE_SAMPLES = 20_000  # paths for the stationary quantile that sets C' (prices)
QUANTILE_SEED = 0x5EED_CA9A  # its own stream: C' is a function of the model alone, not of the platform's seed


class CapacityModel(BaseModel):
    """An AR(1) capacity process in whole nodes, with the quantile of its stationary law that prices use for C'."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["ar1"] = "ar1"
    mean: float = Field(ge=0.0, le=MAX_CAPACITY, description="long-run mean capacity mu (nodes)")
    phi: float = Field(gt=-1.0, lt=1.0, description="AR(1) coefficient")
    errors: tuple[float, ...] = Field(min_length=1, max_length=MAX_ERRORS, description="error support (nodes)")
    weights: tuple[float, ...] = Field(min_length=1, max_length=MAX_ERRORS, description="error probabilities")
    low: int = Field(default=0, ge=0, le=MAX_CAPACITY, description="least capacity")
    high: int = Field(ge=1, le=MAX_CAPACITY, description="greatest capacity")
    quantile: float = Field(default=DEFAULT_QUANTILE, gt=0.0, lt=1.0,
                            description="C' = this quantile of the stationary capacity times (1 - epsilon/10)")
    level_weight: float = Field(default=0.0, ge=0.0, lt=1.0,
                                description="lam: the mean tracks the feed, mu_t = (1 - lam) mu_{t-1} + lam C_{t-1}")
    price_floor: float = Field(default=0.0, ge=0.0, le=MAX_CAPACITY,
                               description="the prices' capacity quantile C_q is at least this (nodes); 0: no floor")

    _numbers = field_validator("mean", "phi", "low", "high", "quantile", "level_weight", "price_floor",
                               mode="before")(number)

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        """A fixed-mean model (lam = 0) dumps without `level_weight`, one without a price floor without
        `price_floor`: its platform, and so its digests, stay as they were."""
        out: dict[str, object] = handler(self)
        for key in ("level_weight", "price_floor"):
            if getattr(self, key) == 0.0:
                out.pop(key, None)
        return out

    @field_validator("errors", "weights", mode="before")
    @classmethod
    def _numbers_only(cls, v: object) -> object:
        if isinstance(v, (list, tuple)):
            for x in v:
                number(x)
        return v

    @model_validator(mode="after")
    def _check(self) -> CapacityModel:
        if len(self.errors) != len(self.weights):
            raise ValueError(f"errors has {len(self.errors)} entries but weights has {len(self.weights)}")
        if not all(math.isfinite(e) and abs(e) <= MAX_CAPACITY for e in self.errors):
            raise ValueError(f"errors must be finite and within +-{MAX_CAPACITY}")
        if not all(math.isfinite(w) and w > 0.0 for w in self.weights):
            raise ValueError("weights must be positive")
        total = math.fsum(self.weights)
        if abs(total - 1.0) > WEIGHT_TOLERANCE:
            raise ValueError(f"weights sum to {total!r}, not 1 (tolerance {WEIGHT_TOLERANCE:g})")
        if self.low > self.high:
            raise ValueError(f"low={self.low} exceeds high={self.high}")
        if not self.low <= self.mean <= self.high:
            raise ValueError(f"mean={self.mean} lies outside [low, high] = [{self.low}, {self.high}]")
        return self

    @property
    def cdf(self) -> np.ndarray:
        """Cumulative weights, the last exactly 1 (a draw is the first index with cdf > u)."""
        return _cdf(self.weights)

    @property
    def error_array(self) -> np.ndarray:
        import numpy as np

        return np.array(self.errors, dtype=np.float64)

    def step(self, previous: float, error: float) -> float:
        """X_tau from X_{tau-1} and e_tau (the compiled oracle computes the same expression in the same order)."""
        return self.mean + self.phi * (previous - self.mean) + error

    def nodes(self, state: float) -> int:
        """C_tau = clamp(floor(X_tau + 1/2), low, high)."""
        return min(max(math.floor(state + 0.5), self.low), self.high)

    def clamp(self, capacity: int) -> int:
        """The process's state for an observed capacity (observations outside [low, high] are clamped)."""
        return min(max(capacity, self.low), self.high)

    def next_level(self, level: float, capacity: int) -> float:
        """mu_{t+1} = clamp((1 - lam) mu_t + lam clamp(C_t), low, high): the level after round t realized C_t."""
        lam = self.level_weight
        return min(max((1.0 - lam) * level + lam * self.clamp(capacity), float(self.low)), float(self.high))

    def at_level(self, level: float | None) -> CapacityModel:
        """The model round t forecasts with: mean = mu_t (clamped to [low, high]) when lam > 0, else itself."""
        if self.level_weight == 0.0 or level is None:
            return self
        return self.model_copy(update={"mean": min(max(float(level), float(self.low)), float(self.high))})

    def paths(self, seed: int, round_: int, last: int, horizon: int, samples: int,
              current: int | None = None) -> np.ndarray:
        """K[n, i]: capacity of round round_ + i in sample n, given C_{round_-1} = last, or C_{round_} = current
        when that is known (the sampled paths)."""
        import numpy as np

        from mechanism.rng import capacity_key, uniforms

        cdf = self.cdf
        out = np.empty((samples, horizon), dtype=np.int64)
        first = 0 if current is None else 1
        x = np.full(samples, float(self.clamp(last if current is None else current)))
        if current is not None and horizon:
            out[:, 0] = self.clamp(current)
        err = self.error_array
        for i in range(first, horizon):
            u = uniforms(capacity_key(seed, round_, i), samples)
            e = err[np.minimum(np.searchsorted(cdf, u, side="right"), cdf.size - 1)]
            x = self.mean + self.phi * (x - self.mean) + e  # as `step` and `nodes`, elementwise
            out[:, i] = np.clip(np.floor(x + 0.5), self.low, self.high).astype(np.int64)
        return out

    def path_distribution(self, last: int, horizon: int, current: int | None = None) -> dict[tuple[int, ...], float]:
        """Every capacity path of `horizon` rounds after C_{-1} = last (or with C_0 = current known), with its
        probability (exact; small instances only)."""
        states: list[tuple[tuple[int, ...], float, float]] = [((), float(self.clamp(last)), 1.0)]
        if current is not None:
            states = [((self.clamp(current),), float(self.clamp(current)), 1.0)]
        for _ in range(horizon - len(states[0][0])):
            states = [((*path, self.nodes(x2)), x2, p * w) for path, x, p in states
                      for e, w in zip(self.errors, self.weights, strict=True) for x2 in (self.step(x, e),)]
        paths: dict[tuple[int, ...], float] = {}
        for path, _, p in states:
            paths[path] = paths.get(path, 0.0) + p
        return paths

    def price_capacity(self) -> float:
        """The `quantile` of the stationary capacity law (sampled on its own fixed stream, from the mean), at least
        `price_floor`."""
        return _stationary_quantile(self)

    def price_capacities(self, last: int, horizon: int, current: int | None = None) -> np.ndarray:
        """C_q of rounds t, ..., t + horizon - 1: the `quantile` of C_{t+i} given C_{t-1} = last, or given C_t =
        current when that is known (C_q of round t is then current itself), each at least `price_floor`. Sampled on
        the stationary quantile's stream, so a pure function of (model, start, horizon); read-only (cached)."""
        if current is None:
            return _conditional_quantiles(self, self.clamp(last), False, horizon)
        return _conditional_quantiles(self, self.clamp(current), True, horizon)


@lru_cache(maxsize=64)
def _cdf(weights: tuple[float, ...]) -> np.ndarray:
    import numpy as np

    c = np.cumsum(np.array(weights, dtype=np.float64))
    c[-1] = 1.0
    c.setflags(write=False)
    return c


def mixing_rounds(phi: float) -> int:
    """Rounds after which phi^k < 1e-6: the start no longer matters to the law."""
    return 1 if abs(phi) < 1e-6 else max(1, math.ceil(math.log(1e-6) / math.log(abs(phi))))


@lru_cache(maxsize=256)
def _conditional_quantiles(model: CapacityModel, start: int, known: bool, horizon: int) -> np.ndarray:
    """out[i] = the `quantile` of C_{t+i}: k = i + 1 steps of X_k - mean = phi^k (X_0 - mean) + S_k after C_{t-1} =
    start (k = i after C_t = start when known), S_k = phi S_{k-1} + e_k over QUANTILE_SAMPLES draws of the errors.
    From the round where phi^k < 1e-6 on, the law no longer depends on the start: later rounds repeat that one."""
    import numpy as np

    from mechanism.rng import capacity_key, uniforms

    out = np.empty(horizon, dtype=np.float64)
    first = min(int(known), horizon)
    out[:first] = start
    steps = min(horizon - first, mixing_rounds(model.phi))
    cdf, err = model.cdf, model.error_array
    s = np.zeros(QUANTILE_SAMPLES, dtype=np.float64)
    for k in range(1, steps + 1):
        u = uniforms(capacity_key(QUANTILE_SEED, 0, k - 1), QUANTILE_SAMPLES)
        s = model.phi * s + err[np.minimum(np.searchsorted(cdf, u, side="right"), cdf.size - 1)]
        c = np.clip(np.floor(model.mean + model.phi**k * (start - model.mean) + s + 0.5), model.low, model.high)
        out[first + k - 1] = np.quantile(c, model.quantile, method="inverted_cdf")
    out[first + steps:] = out[first + steps - 1] if steps else start
    np.maximum(out, model.price_floor, out=out)  # prices never assume less than the floor
    out.setflags(write=False)
    return out


@lru_cache(maxsize=64)
def _stationary_quantile(model: CapacityModel) -> float:
    """q-quantile of C_k after enough rounds that the start no longer matters, over QUANTILE_SAMPLES paths."""
    import numpy as np

    from mechanism.rng import capacity_key, uniforms

    cdf, err = model.cdf, model.error_array
    x = np.full(QUANTILE_SAMPLES, model.mean)
    for i in range(min(mixing_rounds(model.phi), 2000)):
        u = uniforms(capacity_key(QUANTILE_SEED, 0, i), QUANTILE_SAMPLES)
        e = err[np.minimum(np.searchsorted(cdf, u, side="right"), cdf.size - 1)]
        x = model.mean + model.phi * (x - model.mean) + e
    c = np.clip(np.floor(x + 0.5), model.low, model.high)
    return max(float(np.quantile(c, model.quantile, method="inverted_cdf")), model.price_floor)
