"""One law type for a predicted quantity: X_h = loc_h + scale_h Z for h < n, one standard law Z shared by the rows.

Z is either atoms (a one-row `Discrete`) or a Gaussian mixture (a one-row `Mixture`). A job's runtime law
(models/predict) is one row with loc 0 and scale 1 on atoms; a capacity forecast's error law (models/cuc, Alg. 2)
has a row per step ahead, loc_h the step's centre, scale_h its spread and Z the mixture of the standardised errors.
The scalar operations on Z (`z_quantile`, `z_cdf`, `z_excess`, `z_quantile_above`) are what the schedulers' hot
loops and the capacity constraint call; each is computed once per law and argument. `quantile`, `cdf`, `mean` and
`sample` make a `Law` a `models.predictive.Predictive` batch of its n rows.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from itertools import accumulate

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import ndtr

from models.arrays import FloatArray
from models.predictive import Discrete, Mixture

_SQRT_2PI = np.sqrt(2 * np.pi)

_ZERO, _ONE = np.zeros(1), np.ones(1)  # the default loc and scale: one row, Z itself (shared, read-only)
_ZERO.flags.writeable = _ONE.flags.writeable = False


@dataclass(frozen=True, eq=False)
class Law:
    """X_h = loc_h + scale_h Z: `z` a one-row `Discrete` (atoms) or `Mixture`; `loc` and `scale` of length n."""

    z: Discrete | Mixture
    loc: FloatArray = field(default_factory=lambda: _ZERO)
    scale: FloatArray = field(default_factory=lambda: _ONE)
    _support: list[float] = field(init=False, repr=False)
    _cum: list[float] = field(init=False, repr=False)
    _memo: dict[tuple[str, float, float], float | None] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if len(self.z) != 1:
            raise ValueError(f"z has {len(self.z)} rows: the standard law is one row")
        if self.loc is not _ZERO or self.scale is not _ONE:  # the defaults need no check (a job's law: hot)
            loc = np.atleast_1d(np.asarray(self.loc, dtype=np.float64))
            scale = np.atleast_1d(np.asarray(self.scale, dtype=np.float64))
            if loc.shape != scale.shape or loc.ndim != 1:
                raise ValueError(f"loc has shape {loc.shape} and scale {scale.shape}: both must be (n,)")
            if np.any(scale < 0) or not np.all(np.isfinite(scale)):
                raise ValueError("scale must be finite and non-negative")
            object.__setattr__(self, "loc", loc)
            object.__setattr__(self, "scale", scale)
        object.__setattr__(self, "_support", self.z.support.tolist() if isinstance(self.z, Discrete) else [])
        object.__setattr__(self, "_cum", np.cumsum(self.z.probs[0]).tolist() if isinstance(self.z, Discrete) else [])
        object.__setattr__(self, "_memo", {})

    @classmethod
    def atoms(cls, support: FloatArray, probs: FloatArray) -> Law:
        """One quantity on the strictly increasing `support` with P(X = support[k]) = probs[k]."""
        return cls(Discrete(support, probs))

    @classmethod
    def valid_atoms(cls, support: list[float], probs: list[float]) -> Law:
        """`atoms` for a support the caller built strictly increasing and probabilities it built summing to 1
        (a job's law, made once per cluster and requested time in the schedulers' hot loop): the same law,
        without `Discrete`'s checks and with the cumulative sums taken left to right as np.cumsum takes them."""
        z = Discrete.__new__(Discrete)
        object.__setattr__(z, "support", np.array(support, dtype=np.float64))
        object.__setattr__(z, "probs", np.array([probs], dtype=np.float64))
        law = cls.__new__(cls)
        for name, value in (("z", z), ("loc", _ZERO), ("scale", _ONE), ("_support", list(support)),
                            ("_cum", list(accumulate(probs))), ("_memo", {})):
            object.__setattr__(law, name, value)
        return law

    @classmethod
    def mixture(cls, weights: FloatArray, means: FloatArray, sds: FloatArray, loc: ArrayLike,
                scale: ArrayLike) -> Law:
        """X_h = loc_h + scale_h Z with Z ~ sum_k weights_k N(means_k, sds_k^2)."""
        z = Mixture(np.asarray(weights, dtype=np.float64), np.asarray(means, dtype=np.float64)[None, :],
                    np.asarray(sds, dtype=np.float64)[None, :])
        return cls(z, np.asarray(loc, dtype=np.float64), np.asarray(scale, dtype=np.float64))

    @property
    def support(self) -> FloatArray:
        """Z's atoms (the quantity's own, with loc 0 and scale 1)."""
        return self._discrete().support

    @property
    def probs(self) -> FloatArray:
        """P(Z = support[k]), 1-d."""
        return self._discrete().probs[0]

    def _discrete(self) -> Discrete:
        if not isinstance(self.z, Discrete):
            raise ValueError("z is a Gaussian mixture: support and probs are defined for atoms only")
        return self.z

    # --- the standard law Z, as scalars --------------------------------------------------------------
    def z_quantile(self, q: float) -> float:
        """Φ_Z^{-1}(q): the first atom whose cumulative probability reaches q (as `Discrete.quantile`), or the
        mixture's bisection (`Mixture.quantile`)."""
        if self._cum:
            return self._support[min(bisect_left(self._cum, q - 1e-12), len(self._cum) - 1)]
        key = ("quantile", q, 0.0)
        if key not in self._memo:
            self._memo[key] = float(self.z.quantile(q)[0])
        value = self._memo[key]
        assert value is not None
        return value

    def z_cdf(self, x: float) -> float:
        """P(Z <= x)."""
        if self._cum:
            k = bisect_right(self._support, x)
            return self._cum[k - 1] if k else 0.0
        return float(self.z.cdf(x)[0])

    def z_excess(self, x: float) -> float:
        """E[(Z - x)^+]: how far, in expectation, Z lands past x."""
        if isinstance(self.z, Discrete):
            return float(np.dot(self.z.probs[0], np.maximum(self.z.support - x, 0.0)))
        m, s, w = self.z.means[0], self.z.sds[0], self.z.weights
        d = (m - x) / s
        # the standard normal's cdf and pdf as scipy.stats.norm computes them (without importing scipy.stats)
        return float(np.dot(w, (m - x) * ndtr(d) + s * np.exp(-d ** 2 / 2.0) / _SQRT_2PI))

    def z_quantile_above(self, x: float, q: float) -> float | None:
        """The q-quantile of Z given Z > x (None when no mass is left beyond x)."""
        discrete = isinstance(self.z, Discrete)
        first = bisect_right(self._support, x) if discrete else 0
        key = ("above", float(first) if discrete else x, q)  # atoms: every x between two atoms gives one answer
        if key in self._memo:
            return self._memo[key]
        value: float | None
        if isinstance(self.z, Discrete):
            total = float(self.z.probs[0][first:].sum())  # numpy's pairwise sum, as the cdf below divides by it
            if total <= 1e-12:
                value = None
            else:  # np.cumsum's running sums (left to right) over the total, searched as np.searchsorted does
                cum = [c / total for c in accumulate(self.z.probs[0][first:].tolist())]
                k = bisect_left(cum, q - 1e-12)
                value = self._support[first + min(k, len(cum) - 1)]
        else:
            below = float(self.z.cdf(x)[0])
            level = below + q * (1.0 - below)
            value = None if 1.0 - below <= 1e-12 or not 0.0 < level < 1.0 else float(self.z.quantile(level)[0])
        self._memo[key] = value
        return value

    # --- the n rows, as a Predictive batch -----------------------------------------------------------
    def __len__(self) -> int:
        return int(self.loc.size)

    def mean(self) -> FloatArray:
        return np.asarray(self.loc + self.scale * float(self.z.mean()[0]), dtype=np.float64)

    def quantile(self, q: float) -> FloatArray:
        return np.asarray(self.loc + self.scale * self.z_quantile(q), dtype=np.float64)

    def cdf(self, x: ArrayLike) -> FloatArray:
        x = np.broadcast_to(np.asarray(x, dtype=np.float64), self.loc.shape)
        safe = np.where(self.scale > 0, self.scale, 1.0)
        standard = np.array([self.z_cdf(float(v)) for v in (x - self.loc) / safe])
        return np.asarray(np.where(self.scale > 0, standard, (x >= self.loc).astype(float)), dtype=np.float64)

    def sample(self, size: int, rng: np.random.Generator) -> FloatArray:
        draws = self.z.sample(size * len(self), rng).reshape(size, len(self))
        return np.asarray(self.loc + self.scale * draws, dtype=np.float64)
