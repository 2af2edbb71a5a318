"""Seed 004's simulation: forecast each window's max, schedule into 100 - u, score, over one VM or many.

Training policies (1.6): offline fits once on the first `train_samples` samples; online refits before every
`refit_every`-th window on the `train_samples` samples before it (fixed) or on everything before it (growing).
Aggregation vs extrapolation (1.5): `steps` = 1 forecasts the next window from windows of the same size;
`steps` = k forecasts it as k sub-windows of 1/k the size, k steps ahead: the window survives when every
sub-window does and its utilisation is their mean. The adjustment policy (1.9) is applied last.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from models.arrays import FloatArray
from models.forecast.base import Ahead, Forecaster, LocationScale
from models.forecast.registry import ModelSpec
from models.forecast.scores import Score, adjust, survival, utilization
from models.forecast.series import Series, aggregate

TRAIN_POLICIES = ("offline", "online")
ONLINE_SIZES = ("fixed", "growing")
SAMPLE_MINUTES = 5


@dataclass(frozen=True)
class Protocol:
    """How one VM is simulated: window, training policy, extrapolation, adjustment, granularity."""

    window_minutes: int = 60
    train_samples: int = 840
    train: str = "offline"
    online_size: str = "fixed"
    refit_every: int = 1
    steps: int = 1
    adjustment: tuple[int, int] | None = None
    granularity: float = 0.0

    def __post_init__(self) -> None:
        if self.window_minutes < SAMPLE_MINUTES or self.window_minutes % SAMPLE_MINUTES:
            raise ValueError(f"window_minutes={self.window_minutes} must be a positive multiple of "
                             f"{SAMPLE_MINUTES}")
        if self.train not in TRAIN_POLICIES:
            raise ValueError(f"train={self.train!r} is not one of {', '.join(TRAIN_POLICIES)}")
        if self.online_size not in ONLINE_SIZES:
            raise ValueError(f"online_size={self.online_size!r} is not one of {', '.join(ONLINE_SIZES)}")
        if self.refit_every < 1:
            raise ValueError(f"refit_every={self.refit_every} must be >= 1 window")
        if self.steps < 1 or self.samples_per_window % self.steps:
            raise ValueError(f"steps={self.steps} must be >= 1 and divide the {self.samples_per_window} "
                             "samples of a window")
        if self.train_samples < self.samples_per_window:
            raise ValueError(f"train_samples={self.train_samples} must hold at least one window "
                             f"({self.samples_per_window} samples)")
        if not 0 <= self.granularity <= 100:
            raise ValueError(f"granularity={self.granularity} must lie in [0, 100]")

    @property
    def samples_per_window(self) -> int:
        return self.window_minutes // SAMPLE_MINUTES

    @property
    def base_minutes(self) -> int:
        """The size of the windows the forecaster sees (the window itself unless extrapolating)."""
        return self.window_minutes // self.steps


def _check_cutoffs(cutoffs: FloatArray) -> FloatArray:
    cutoffs = np.asarray(cutoffs, dtype=np.float64).ravel()
    if cutoffs.size == 0 or np.any((cutoffs <= 0) | (cutoffs >= 1)):
        raise ValueError(f"cut-off probabilities must lie strictly between 0 and 1, got {cutoffs.tolist()}")
    return cutoffs


def _upper_bounds(model: Forecaster, series: Series, origins: np.ndarray, steps: int,
                  cutoffs: FloatArray) -> FloatArray:
    """(origins, steps, cutoffs) upper bounds u = the 1 - c quantile of each forecast."""
    if steps == 1:
        law = model.one_step(series, origins)
        return np.stack([law.quantile(1.0 - c) for c in cutoffs], axis=-1)[:, None, :]
    if isinstance(model, LocationScale):
        law = model.steps_ahead(series, origins, steps)
        return np.stack([law.quantile(1.0 - c) for c in cutoffs], axis=-1).reshape(origins.size, steps, -1)
    out = np.empty((origins.size, steps, cutoffs.size))
    for i, t in enumerate(origins):
        law = model.predict(Ahead(series.head(int(t)), steps))
        out[i] = np.stack([law.quantile(1.0 - c) for c in cutoffs], axis=-1)
    return out


def _refit_begins(protocol: Protocol, origins: np.ndarray, first: int) -> tuple[np.ndarray, np.ndarray]:
    """For each origin, the origin and the first window of the fit it is forecast with."""
    fit_at = origins[(np.arange(origins.size) // protocol.refit_every) * protocol.refit_every]
    begins = np.zeros_like(fit_at) if protocol.online_size == "growing" else np.maximum(0, fit_at - first)
    return fit_at, begins


def _rolling(model: Forecaster, protocol: Protocol, series: Series, origins: np.ndarray, first: int,
             cutoffs: FloatArray) -> FloatArray | None:
    """Online refits in closed form when the model has one (AR1 by least squares), else None."""
    rolling = getattr(model, "rolling_one_step", None)
    if rolling is None:
        return None
    fit_at, begins = _refit_begins(protocol, origins, first)
    law = rolling(series, origins, begins, fit_at)
    if law is None:
        return None
    return np.stack([law.quantile(1.0 - c) for c in cutoffs], axis=-1)[:, None, :]


def simulate_vm(spec: ModelSpec, protocol: Protocol, samples_max: FloatArray, samples_avg: FloatArray | None,
                cutoffs: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Per-window survival and utilisation, shape (test windows, cutoffs), for one VM."""
    cutoffs = _check_cutoffs(cutoffs)
    series = aggregate(samples_max, samples_avg, protocol.samples_per_window // protocol.steps)
    k = protocol.steps
    first = protocol.train_samples // (protocol.samples_per_window // k)
    first += (-first) % k  # test windows start on a whole window
    origins = np.arange(first, len(series) - k + 1, k)
    if origins.size == 0:
        raise ValueError(f"{len(series)} windows leave none to test after {first} training windows")
    bounds = np.empty((origins.size, k, cutoffs.size))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = spec.build(protocol.base_minutes)
        if protocol.train == "offline" or not model.learns:
            model.fit(series.head(first))
            bounds[:] = _upper_bounds(model, series, origins, k, cutoffs)
        elif k == 1 and (fast := _rolling(model, protocol, series, origins, first, cutoffs)) is not None:
            bounds[:] = fast
        else:
            for block in range(0, origins.size, protocol.refit_every):
                t = int(origins[block])
                begin = 0 if protocol.online_size == "growing" else max(0, t - first)
                model.fit(series.window(begin, t))
                chunk = origins[block:block + protocol.refit_every]
                bounds[block:block + chunk.size] = _upper_bounds(model, series, chunk, k, cutoffs)
    actual = series.y[origins[:, None] + np.arange(k)[None, :]][:, :, None]
    surv = survival(bounds, actual, protocol.granularity)
    util = utilization(bounds, actual, protocol.granularity)
    # a window survives when every sub-window does (NA if any is NA); utilisation is their mean
    surv_w, util_w = surv.min(axis=1), util.mean(axis=1)
    if protocol.adjustment is not None:
        pairs = [adjust(surv_w[:, j], util_w[:, j], *protocol.adjustment) for j in range(cutoffs.size)]
        surv_w = np.stack([p[0] for p in pairs], axis=1)
        util_w = np.stack([p[1] for p in pairs], axis=1)
    return surv_w, util_w


@dataclass(frozen=True)
class VMResult:
    vm: str
    scores: tuple[Score, ...]  # one per cut-off
    error: str | None = None


def evaluate(spec: ModelSpec, protocol: Protocol, ids: list[str], maxes: FloatArray, avgs: FloatArray | None,
             cutoffs: FloatArray) -> tuple[list[Score], list[VMResult]]:
    """Every VM column of maxes (samples, vms); the pooled score per cut-off and the per-VM rows.

    A VM whose fit fails (e.g. a constant series) is reported with its error and left out of the pool.
    """
    cutoffs = _check_cutoffs(cutoffs)
    rows: list[VMResult] = []
    for j, vm in enumerate(ids):
        try:
            surv, util = simulate_vm(spec, protocol, maxes[:, j], None if avgs is None else avgs[:, j], cutoffs)
        except (ValueError, np.linalg.LinAlgError) as exc:
            rows.append(VMResult(vm, (), f"{type(exc).__name__}: {exc}"))
            continue
        rows.append(VMResult(vm, tuple(Score.of(surv[:, c], util[:, c]) for c in range(cutoffs.size))))
    pooled = [Score.pooled([r.scores[c] for r in rows if r.error is None]) for c in range(cutoffs.size)]
    return pooled, rows
