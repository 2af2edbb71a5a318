"""Replay a trace causally through a predictor and score its predictions (MAE, coverage, pinball, log score)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from models.predict.adaptive import Adaptive
from models.predict.baselines import Exact, LastFive, RequestedTime, Tsafrir
from models.predict.boosted import BoostedConfig, BoostedPredictor
from models.predict.jobs import JobTable
from models.predict.learned import LearnedConfig, LearnedPredictor
from models.predict.oracle_mix import OracleMix
from models.predict.protocol import Predictor
from models.predict.recalibrate import Recalibrated
from models.predict.user_mix import UserMix
from models.predictive import Discrete

LEVELS: tuple[float, ...] = (0.5, 0.9, 0.95)


def _oracle_mix(percent: int) -> Callable[[], Predictor]:
    """`learned-oracle-P`: the learned law with P % of its mass on the runtime (an oracle, for bounds)."""
    return lambda: OracleMix(LearnedPredictor(), percent / 100, name=f"learned-oracle-{percent}")


PREDICTORS: dict[str, Callable[[], Predictor]] = {
    "requested": RequestedTime,
    "tsafrir": Tsafrir,
    "last5": LastFive,
    "exact": Exact,
    "learned": LearnedPredictor,
    "learned-gmm": lambda: LearnedPredictor(LearnedConfig(clustering="gmm"), name="learned-gmm"),
    # the clusters also regrown each time the completions double (docs/prediction.md, "An earlier tree")
    "learned-doubling": lambda: LearnedPredictor(LearnedConfig(refit_growth=2.0), name="learned-doubling"),
    "learned-calibrated": lambda: Recalibrated(LearnedPredictor(), name="learned-calibrated"),
    # the 0.9-quantile by adaptive conformal inference, gamma 0.02 from ACI's bound (docs/prediction.md)
    "learned-aci": lambda: Adaptive(LearnedPredictor(), name="learned-aci"),
    # mixed with each user's last runtimes, the weights by log score; then ACI as above (docs/prediction.md)
    "learned-user": lambda: UserMix(LearnedPredictor(), name="learned-user"),
    "learned-aci-user": lambda: Adaptive(UserMix(LearnedPredictor()), name="learned-aci-user"),
    # a bound, not a candidate: 95 % on the user's last runtimes whatever their score
    "learned-user-95": lambda: UserMix(LearnedPredictor(), name="learned-user-95", fixed=0.95),
    "learned-boosted": BoostedPredictor,
    # half the global histogram: the floor chosen on KTH-SP2 and LANL-CM5 (docs/prediction.md, "A sharper model")
    "learned-boosted-wide": lambda: BoostedPredictor(BoostedConfig(floor=0.5), name="learned-boosted-wide"),
    **{f"learned-oracle-{w}": _oracle_mix(w) for w in (50, 80, 95)},
}


def make_predictor(name: str, window: int | None = None) -> Predictor:
    """A fresh predictor by name (one of PREDICTORS); `window` sets the learned models' training window."""
    if name not in PREDICTORS:
        raise ValueError(f"predictor={name!r} must be one of {sorted(PREDICTORS)}")
    predictor = PREDICTORS[name]()
    if window is not None and isinstance(predictor, LearnedPredictor):
        predictor = replace(predictor, config=replace(predictor.config, window=window))
    return predictor


def completions(table: JobTable) -> list[int]:
    """Job indices in the order the trace's own schedule completed them (submit + wait + runtime)."""
    end = table.submit + table.wait + table.runtime
    return sorted(range(len(table)), key=lambda i: (int(end[i]), i))


def replay(table: JobTable, predictor: Predictor, on_batch: Callable[[list[int], Discrete], None]) -> float:
    """Feed `predictor` the trace causally; returns the seconds spent predicting.

    Jobs submitted at one instant are predicted together, after every job that completed strictly before
    that instant has been observed and none other.
    """
    predictor.fit(table)
    end = table.submit + table.wait + table.runtime
    order = completions(table)
    done = 0
    spent = 0.0
    i = 0
    n = len(table)
    while i < n:
        now = int(table.submit[i])
        batch = [i]
        while batch[-1] + 1 < n and int(table.submit[batch[-1] + 1]) == now:
            batch.append(batch[-1] + 1)
        while done < n and int(end[order[done]]) < now:
            predictor.observe(order[done])
            done += 1
        began = time.perf_counter()
        law = predictor.predict(batch)
        spent += time.perf_counter() - began
        on_batch(batch, law)
        i = batch[-1] + 1
    return spent


@dataclass
class _Scores:
    abs_error: float = 0.0
    under: int = 0
    covered: dict[float, int] | None = None
    pinball: dict[float, float] | None = None
    log_score: float = 0.0
    jobs: int = 0
    distributional: bool = False


def _pinball(y: np.ndarray, pred: np.ndarray, q: float) -> float:
    diff = y - pred
    return float(np.sum(np.maximum(q * diff, (q - 1) * diff)))


def _log_prob(law: Discrete, y: np.ndarray) -> np.ndarray:
    """log P(X = the smallest atom >= y of the row's own law): the probability of the bin the runtime falls in.

    A batch's rows share one support (every row's atoms, requested times included), so only the row's atoms of
    positive probability count; above its largest atom, that atom."""
    atoms = law.probs > 0
    at_or_above = atoms & (law.support[None, :] >= np.asarray(y, dtype=np.float64)[:, None])
    last = law.support.size - 1 - np.argmax(atoms[:, ::-1], axis=1)
    k = np.where(at_or_above.any(axis=1), np.argmax(at_or_above, axis=1), last)
    p = law.probs[np.arange(len(law)), k]
    return np.asarray(np.log(np.maximum(p, 1e-300)))


def evaluate(table: JobTable, name: str, window: int | None = None) -> dict[str, Any]:
    """The scores of predictor `name` on the table (point = the median of each predicted law)."""
    predictor = make_predictor(name, window)
    s = _Scores(covered=dict.fromkeys(LEVELS, 0), pinball=dict.fromkeys(LEVELS, 0.0))

    def score(batch: list[int], law: Discrete) -> None:
        assert s.covered is not None and s.pinball is not None
        y = table.runtime[np.asarray(batch)].astype(np.float64)
        point = law.quantile(0.5)
        s.abs_error += float(np.abs(point - y).sum())
        s.under += int(np.sum(point < y))
        for q in LEVELS:
            pred = law.quantile(q)
            s.covered[q] += int(np.sum(y <= pred))
            s.pinball[q] += _pinball(y, pred, q)
        s.distributional = s.distributional or bool(np.any(law.probs.max(axis=1) < 1.0))
        s.log_score += float(_log_prob(law, y).sum())
        s.jobs += len(batch)

    began = time.perf_counter()
    spent = replay(table, predictor, score)
    total = time.perf_counter() - began
    assert s.covered is not None and s.pinball is not None
    n = s.jobs
    fit_s = float(getattr(predictor, "stats", {}).get("fit_s", 0.0))
    out: dict[str, Any] = {
        "jobs": n,
        "mae_s": s.abs_error / n,
        "underprediction_rate": s.under / n,
        "coverage": {str(q): s.covered[q] / n for q in LEVELS},
        "pinball_loss": {str(q): s.pinball[q] / n for q in LEVELS},
        "log_score": s.log_score / n if s.distributional else None,
        "fit_s": fit_s,
        "predict_us": 1e6 * spent / n,
        "total_s": total,
    }
    if hasattr(predictor, "stats"):
        out["engine"] = {k: v for k, v in predictor.stats.items() if k != "fit_s"}
    return {k: (round(v, 6) if isinstance(v, float) and math.isfinite(v) else v) for k, v in out.items()}
