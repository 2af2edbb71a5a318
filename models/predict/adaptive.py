"""Adaptive conformal inference on a predictor's laws: the quoted `level`-quantile follows its own misses.

Gibbs and Candès (2021), "Adaptive conformal inference under distribution shift" (ACI): keep alpha_t; job t gets
G = h_t o F, F its inner law's CDF and h_t the monotone piecewise-linear map of [0, 1] through (0, 0),
(1 - alpha_t, level) and (1, 1), so G's `level`-quantile is F's (1 - alpha_t)-quantile; when job t's runtime is
known, alpha <- alpha + gamma * (1 - level - err_t), err_t = 1 if the runtime exceeded the quantile quoted to t.
For alpha_t <= 0 the quoted set is every duration (G's quantile is the law's cap, its request; err_t = 0), for
alpha_t >= 1 it is empty (G's quantile is the law's smallest atom; err_t = 1), as in ACI. The support is unchanged
and h_t is monotone with h_t(0) = 0 and h_t(1) = 1, so G is a law on the same atoms, capped where F is; every
other quantile moves the same way as the `level`-quantile (h_t decreases pointwise as alpha_t falls).

Feedback is delayed: a job's err_t is learned when it completes (`observe`, the order the inner predictor learns
in), so jobs quoted while others are running share an alpha. ACI's bound on the long-run miscoverage over the T
jobs whose errors were learned, |mean(err) - (1 - level)| <= (max(alpha_1, 1 - alpha_1) + gamma) / (gamma T),
becomes (max(alpha_1, 1 - alpha_1) + gamma D) / (gamma T) with D the most jobs ever quoted and not yet learned
from (`stats["pending_max"]`; D = 1 without delay): after alpha crosses 1 only the at most D - 1 jobs quoted before
the crossing can raise it, by gamma (1 - level) each, so alpha stays in [-level gamma D, 1 + (1 - level) gamma D].
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from models.predict.recalibrate import CdfMapped
from models.predictive import Discrete

GAMMA = 0.02  # ACI's step: its bound (0.9 + gamma) / (2,000 gamma) is 0.023 <= 0.03 at T = 2,000 jobs
LEVEL = 0.9  # the quantile ACI sets


def level_map(u: NDArray[np.float64], source: float, level: float) -> NDArray[np.float64]:
    """h: the monotone piecewise-linear map of [0, 1] through (0, 0), (source, level), (1, 1); source >= 1 maps
    [0, 1) to [0, level) (the level-quantile is the cap), source <= 0 maps (0, 1] to [level, 1] (the smallest atom)."""
    if source >= 1.0:
        return np.where(u >= 1.0, 1.0, level * u)
    if source <= 0.0:
        return np.where(u > 0.0, level + (1.0 - level) * u, 0.0)
    return np.interp(u, [0.0, source, 1.0], [0.0, level, 1.0])


@dataclass(frozen=True)
class AciRule:
    """ACI at `level` with step `gamma`: the map of a law's CDF at a given alpha, the quantile it quotes (what a
    miss is judged against), and alpha's update on one learned error. Stateless: its users keep alpha."""

    level: float = LEVEL
    gamma: float = GAMMA

    def __post_init__(self) -> None:
        if not 0.0 < self.level < 1.0:
            raise ValueError(f"level={self.level} must lie in (0, 1)")
        if not 0.0 < self.gamma <= 1.0:
            raise ValueError(f"gamma={self.gamma} must lie in (0, 1]")

    @property
    def alpha_1(self) -> float:
        """alpha before any error is learned: 1 - level."""
        return 1.0 - self.level

    def map(self, cum: NDArray[np.float64], alpha: float) -> NDArray[np.float64]:
        """h_alpha of the cumulative probabilities `cum`."""
        return level_map(cum, 1.0 - alpha, self.level)

    def quoted(self, out: Discrete, alpha: float) -> list[float]:
        """Each row's quoted `level`-quantile of the mapped laws `out`: every duration (inf) when alpha <= 0, none
        (-inf) when alpha >= 1."""
        if alpha <= 0.0:
            return [np.inf] * len(out)
        if alpha >= 1.0:
            return [-np.inf] * len(out)
        return [float(q) for q in out.quantile(self.level)]

    def step(self, alpha: float, runtime: float, quoted: float) -> tuple[float, bool]:
        """alpha after a job quoted `quoted` ran `runtime`, and whether that was a miss (runtime > quoted)."""
        missed = runtime > quoted
        return alpha + self.gamma * (1.0 - self.level - float(missed)), missed


@dataclass
class Adaptive(CdfMapped):
    """`inner`'s laws with their `level`-quantile set by adaptive conformal inference (see the module docstring)."""

    name: str = "adaptive"
    level: float = LEVEL
    gamma: float = GAMMA
    alpha: float = field(default=0.0, init=False)
    _rule: AciRule = field(default_factory=AciRule, init=False, repr=False)
    _state: dict[str, float] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self._rule = AciRule(self.level, self.gamma)
        self._reset()

    def _reset(self) -> None:
        self.alpha = self._rule.alpha_1
        self._state = {"alpha_min": self.alpha, "alpha_max": self.alpha, "learned": 0, "missed": 0, "pending_max": 0}

    @property
    def stats(self) -> dict[str, float]:
        """The inner predictor's stats (if any) and alpha's range, the jobs learned from and missed, and D."""
        return {**getattr(self.inner, "stats", {}), **self._state}

    def _map(self, cum: NDArray[np.float64]) -> NDArray[np.float64]:
        return self._rule.map(cum, self.alpha)

    def _records(self, law: Discrete, cum: NDArray[np.float64], out: Discrete) -> list[Any]:
        self._state["pending_max"] = max(self._state["pending_max"], len(self._pending) + len(out))
        return self._rule.quoted(out, self.alpha)

    def _learn(self, record: Any, runtime: float) -> None:
        self.alpha, missed = self._rule.step(self.alpha, runtime, record)
        self._state["alpha_min"] = min(self._state["alpha_min"], self.alpha)
        self._state["alpha_max"] = max(self._state["alpha_max"], self.alpha)
        self._state["learned"] += 1
        self._state["missed"] += int(missed)

    def bound(self) -> float:
        """ACI's bound on |mean err - (1 - level)| over the jobs learned from, with the delay D = pending_max."""
        alpha_1 = self._rule.alpha_1
        delay = max(1.0, self._state["pending_max"])
        return (max(alpha_1, 1.0 - alpha_1) + self.gamma * delay) / (self.gamma * max(1.0, self._state["learned"]))
