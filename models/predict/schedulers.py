"""Backfilling policies on predictions: EASY, EASY++, risk-aware EASY on learned laws, and their portfolio."""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from models.hpc.jobs import Job, Workload
from models.hpc.metrics import bsld
from models.hpc.point_backfill import PointMode, simulate_point
from models.hpc.prediction_backfill import BackfillResult, simulate_backfill
from models.hpc.runs import Run, score
from models.law import Law
from models.predict.baselines import Exact, PointPredictor, RequestedTime, Tsafrir
from models.predict.jobs import JobTable
from models.predict.learned import LearnedConfig, LearnedPredictor
from models.predict.names import CORRECTORS, PREDICTIVE_SCHEDULERS
from models.predict.risk_backfill import replay_risk, simulate_risk
from models.predictive import Discrete

Corrector = Literal["conditional", "reqtime", "doubling"]
DEFAULT_RISK = 0.9  # one configuration for every trace (docs/backfill.md)
DEFAULT_RESERVATION_Q = 0.4
WIDE_SHARE = 1 / 8  # a head needing more of the machine than this is wide (docs/backfill.md: who loses)
CALIBRATION_MIN = 200  # completions before the risk test is recalibrated
CALIBRATION_EVERY = 50  # completions between recalibrations
# The portfolio rule replays the jobs submitted in the last week (the weekly cycle of submissions: chosen before
# any run, not tuned on a trace; docs/backfill.md), choosing between its policies, a tie to the first.
PORTFOLIO_WINDOW_S = 7 * 86400
PORTFOLIO = ("easy-pp", "easy-learned")
# The point schedulers as the compiled simulator runs them: prediction, shortest-first backfilling, and pyss's
# plain-EASY submission rule (the same choices make_policy's PointPolicy makes for the reference simulator).
POINT_RUNS: dict[str, tuple[PointMode, bool, bool]] = {
    "easy-requested": (PointMode.REQUESTED, False, True),
    "easy-exact": (PointMode.EXACT, False, True),
    "easy-pp": (PointMode.TSAFRIR, True, False),
}


def _correct(corrector: str, law: Law | None, elapsed: int, predicted: int, requested: int, q: float) -> int:
    """The new predicted runtime of a job that has run `elapsed` seconds past its prediction."""
    if corrector == "reqtime" or law is None:
        return requested
    if corrector == "doubling":
        return min(requested, max(2 * predicted, elapsed + 1))
    # conditional: the q-quantile of the law given X > elapsed (requested when no mass is left beyond it)
    tail = law.z_quantile_above(elapsed, q)
    return requested if tail is None else int(min(requested, max(tail, elapsed + 1)))


@dataclass
class PointPolicy:
    """EASY on point predictions: backfill in FCFS (`sjf` False) or shortest-predicted-first order."""

    predictor: PointPredictor
    table: JobTable
    sjf: bool
    corrector: str = "reqtime"
    predicted: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.predictor.fit(self.table)

    def on_submit(self, index: int, now: int) -> int:
        self.predicted[index] = max(1, int(self.predictor.predict([index]).support[0]))
        return self.predicted[index]

    def on_prediction_over(self, index: int, now: int, elapsed: int) -> int:
        new = _correct(self.corrector, None, elapsed, self.predicted[index], int(self.table.requested[index]), 0.5)
        self.predicted[index] = new
        return new

    def on_complete(self, index: int, now: int) -> None:
        self.predictor.observe(index)

    def backfill_key(self, index: int) -> float:
        return float(self.predicted[index]) if self.sjf else 0.0

    def ends_by(self, index: int, now: int, shadow: int) -> bool:
        return now + self.predicted[index] <= shadow

    def on_reservation(self, head: int, share: float) -> None:
        """EASY and EASY++ treat every head alike."""


@dataclass
class RiskPolicy:
    """Risk-aware EASY: the head's reservation from predicted quantiles; a candidate that would outlast it
    is backfilled only if P(its runtime > shadow - now) <= risk; an overrun is re-predicted by `corrector`."""

    predictor: LearnedPredictor
    table: JobTable
    risk: float = DEFAULT_RISK
    reservation_q: float = DEFAULT_RESERVATION_Q
    corrector: str = "conditional"
    order_q: float = 0.5  # backfill candidates in ascending order of this predicted quantile
    guard: float | None = None  # a candidate's expected overrun past the shadow at most guard * (shadow - now)
    calibrate: int = 0  # recalibrate the risk test on the PIT of this many recent completions (0: off)
    wide_risk: float | None = None  # the risk while the head needs more than WIDE_SHARE of the machine
    laws: dict[int, Law] = field(default_factory=dict)
    predicted: dict[int, int] = field(default_factory=dict)
    key: dict[int, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 0.0 <= self.risk <= 1.0:
            raise ValueError(f"risk={self.risk} must lie in [0, 1]")
        if not 0.0 < self.reservation_q < 1.0:
            raise ValueError(f"reservation_q={self.reservation_q} must lie strictly between 0 and 1")
        if self.guard is not None and not self.guard >= 0.0:
            raise ValueError(f"guard={self.guard} must be >= 0")
        if self.corrector not in CORRECTORS:
            raise ValueError(f"corrector={self.corrector!r} must be one of {CORRECTORS}")
        if self.wide_risk is not None and not 0.0 <= self.wide_risk <= 1.0:
            raise ValueError(f"wide_risk={self.wide_risk} must lie in [0, 1]")
        if self.calibrate < 0:
            raise ValueError(f"calibrate={self.calibrate} must be >= 0")
        self.predictor.fit(self.table)
        self._requested: list[int] = self.table.requested.tolist()
        self._runtime: list[int] = self.table.runtime.tolist()
        self._threshold = 1.0 - self.risk - 1e-12  # ends_by: P(runtime <= shadow - now) at least this
        self._pit: deque[float] = deque(maxlen=max(self.calibrate, 1))  # F_j(runtime_j) of recent completions
        self.thresholds: list[float] = []  # each recalibrated threshold, in order (details: which way it moved)
        self._scored = 0
        self._wide_head = False

    @property
    def compiles(self) -> bool:
        """Whether models/predict/risk_backfill.simulate_risk runs this policy (equal starts, compiled): the
        conditional corrector on a tree, without the guard, the recalibration or the wide-head risk."""
        return (self.corrector == "conditional" and self.guard is None and not self.calibrate
                and self.wide_risk is None and self.predictor.config.clustering == "tree")

    def on_submit(self, index: int, now: int) -> int:
        law = self.laws[index] = self.predictor.predict_one(index)
        self.key[index] = law.z_quantile(self.order_q)
        self.predicted[index] = max(1, int(law.z_quantile(self.reservation_q)))
        return self.predicted[index]

    def on_prediction_over(self, index: int, now: int, elapsed: int) -> int:
        new = _correct(self.corrector, self.laws[index], elapsed, self.predicted[index],
                       self._requested[index], self.reservation_q)
        self.predicted[index] = new
        return new

    def on_complete(self, index: int, now: int) -> None:
        self.predictor.observe(index)
        law = self.laws.pop(index, None)
        if self.calibrate and law is not None:
            self._pit.append(law.z_cdf(self._runtime[index]))
            self._scored += 1
            if self._scored >= CALIBRATION_MIN and self._scored % CALIBRATION_EVERY == 0:
                self._threshold = recalibrated_threshold(self._pit, 1.0 - self.risk)
                self.thresholds.append(self._threshold)

    def backfill_key(self, index: int) -> float:
        return self.key[index]

    def on_reservation(self, head: int, share: float) -> None:
        self._wide_head = self.wide_risk is not None and share > WIDE_SHARE

    def ends_by(self, index: int, now: int, shadow: int) -> bool:
        law, window = self.laws[index], shadow - now
        threshold = 1.0 - self.wide_risk - 1e-12 if self._wide_head and self.wide_risk is not None \
            else self._threshold
        if law.z_cdf(window) < threshold:
            return False
        return self.guard is None or law.z_excess(window) <= self.guard * window


def recalibrated_threshold(pit: Sequence[float], level: float) -> float:
    """The cdf level the risk test asks for so that, on the recent completions, the test is right as often as
    `level` says: the empirical `level`-quantile of their PIT values F_j(runtime_j) (the level itself when the
    laws are calibrated). A candidate passes when F(shadow - now) reaches it."""
    return float(np.quantile(np.asarray(pit, dtype=np.float64), level, method="inverted_cdf")) - 1e-12


def threshold_summary(thresholds: Sequence[float], nominal: float) -> dict[str, float | int]:
    """How the recalibrated cdf level moved against the nominal 1 - risk: its count, quartiles and the share of
    recalibrations below the nominal level (a looser test: more candidates backfilled)."""
    if not thresholds:
        return {"nominal": round(nominal, 6), "recalibrations": 0}
    t = np.asarray(thresholds, dtype=np.float64)
    p25, p50, p75 = (round(float(x), 4) for x in np.quantile(t, [0.25, 0.5, 0.75]))
    return {"nominal": round(nominal, 6), "recalibrations": int(t.size), "p25": p25, "p50": p50, "p75": p75,
            "share_below_nominal": round(float(np.mean(t < nominal - 1e-9)), 4)}


@dataclass
class _Replay:
    """A replay's policy: every job keeps the prediction it got at its live submission (indices: the replay's).
    `laws` None is EASY++ (point predictions, shortest first, the requested time on an overrun), else the risk
    test on the laws with `corrector`."""

    predicted: list[int]
    key: list[float]
    requested: list[int]
    laws: list[Law] | None
    threshold: float
    corrector: str
    reservation_q: float

    def on_submit(self, index: int, now: int) -> int:
        return self.predicted[index]

    def on_prediction_over(self, index: int, now: int, elapsed: int) -> int:
        law = None if self.laws is None else self.laws[index]
        new = _correct("reqtime" if law is None else self.corrector, law, elapsed, self.predicted[index],
                       self.requested[index], self.reservation_q)
        self.predicted[index] = new
        return new

    def on_complete(self, index: int, now: int) -> None:
        """A replay learns nothing: its predictions are the live ones."""

    def backfill_key(self, index: int) -> float:
        return self.key[index]

    def ends_by(self, index: int, now: int, shadow: int) -> bool:
        if self.laws is None:
            return now + self.predicted[index] <= shadow
        return self.laws[index].z_cdf(shadow - now) >= self.threshold

    def on_reservation(self, head: int, share: float) -> None:
        """Both replayed policies treat every head alike."""


def portfolio_replays(jobs: Sequence[Job], nodes: int, point: Sequence[int], laws: Sequence[Law],
                      key: Sequence[float], predicted: Sequence[int], risks: Sequence[float],
                      reservation_q: float = DEFAULT_RESERVATION_Q, corrector: str = "conditional",
                      compiled: bool = True) -> list[float]:
    """The BSLD of completed `jobs` (sorted by submission, at least one) replayed on an empty machine of `nodes`:
    under EASY++ with each job's Tsafrir prediction `point`, then under the risk test at each of `risks` with its
    law, backfill key and predicted runtime, all as the job got them at its submission.

    The replays run on the compiled loops (simulate_point with the given predictions, replay_risk) when the laws
    are atoms and the corrector conditional, else (or `compiled` False) on simulate_backfill with `_Replay`,
    which tests hold equal start for start."""
    workload = Workload(tuple(jobs), nodes)
    requested = [j.requested for j in jobs]
    thresholds = [1.0 - risk - 1e-12 for risk in risks]  # RiskPolicy's test
    if compiled and corrector == "conditional" and all(isinstance(law.z, Discrete) for law in laws):
        pp = simulate_point(workload, np.array(requested, dtype=np.int64), np.zeros(len(jobs), dtype=np.int64),
                            PointMode.GIVEN, True, False, np.array(point, dtype=np.int64))
        learned = [replay_risk(workload, predicted, key, laws, threshold, reservation_q) for threshold in thresholds]
    else:
        pp = simulate_backfill(workload, _Replay(list(point), [float(p) for p in point], requested, None,
                                                 thresholds[0], corrector, reservation_q))
        learned = [simulate_backfill(workload, _Replay(list(predicted), list(key), requested, list(laws), threshold,
                                                       corrector, reservation_q)) for threshold in thresholds]
    return [bsld(jobs, pp.starts)] + [bsld(jobs, run.starts) for run in learned]


def portfolio_choice(jobs: Sequence[Job], nodes: int, point: Sequence[int], laws: Sequence[Law],
                     key: Sequence[float], predicted: Sequence[int], risk: float = DEFAULT_RISK,
                     reservation_q: float = DEFAULT_RESERVATION_Q, corrector: str = "conditional",
                     compiled: bool = True) -> tuple[str, float, float]:
    """The portfolio's choice between EASY++ and the risk test at `risk` on `portfolio_replays`: the policy whose
    replay has the lower BSLD ("easy-learned" only if strictly lower; no job: "easy-pp") and the two BSLDs (NaN
    with no job)."""
    if not jobs:
        return PORTFOLIO[0], float("nan"), float("nan")
    b_pp, b_learned = portfolio_replays(jobs, nodes, point, laws, key, predicted, (risk,), reservation_q,
                                        corrector, compiled)
    return (PORTFOLIO[1] if b_learned < b_pp else PORTFOLIO[0]), b_pp, b_learned


def risk_name(risk: float) -> str:
    """A candidate of the several-risk portfolio by its risk: 0.9 -> "risk=0.9"."""
    return f"risk={risk:g}"


def multi_choice(names: Sequence[str], bslds: Sequence[float], current: str) -> str:
    """The several-risk portfolio's choice among `names` (EASY++ first, then the risk tests from the most
    cautious) by their replays' `bslds`: the lowest; on a tie for it, `current` (the policy in force) when it is
    among the best, else the first of them in `names`; no job replayed (NaN): `current`. A tie or an empty week
    says nothing about which policy is better, so it changes nothing (set before any run, not tuned)."""
    if not bslds or bslds[0] != bslds[0]:
        return current
    low = min(bslds)
    best = [name for name, b in zip(names, bslds, strict=True) if b == low]
    return current if current in best else best[0]


@dataclass
class PortfolioPolicy(RiskPolicy):
    """easy-learned's portfolio rule (Deng, Verboon and Iosup 2013): every `portfolio` hours from the first
    submission, at instant t, the jobs submitted in [t - PORTFOLIO_WINDOW_S, t) and completed before t are
    replayed by `portfolio_choice` on the machine's `nodes`; the passes until the next choice use the policy it
    returns (EASY++ before the first). A job keeps the prediction and the corrector of the policy in force at
    its submission; a pass orders and tests candidates by the policy in force at the pass.

    With `portfolio_risks` the candidates are EASY++ and the risk test at each of those risks (named by
    `risk_name`; `risk` is not one of them unless listed), chosen by `multi_choice`: a tie or an empty week keeps
    the policy in force."""

    portfolio: int = 24  # hours between two choices
    nodes: int = 0
    portfolio_risks: tuple[float, ...] | None = None  # several risk tests among the candidates (None: `risk` only)
    mode: str = PORTFOLIO[0]
    choices: list[tuple[Any, ...]] = field(default_factory=list)  # (t, policy, BSLD of each candidate's replay)

    def __post_init__(self) -> None:
        if self.portfolio < 1:
            raise ValueError(f"portfolio={self.portfolio} must be >= 1 (hours between two choices)")
        if self.nodes < 1:
            raise ValueError(f"nodes={self.nodes} must be >= 1 (the machine the portfolio replays on)")
        if self.guard is not None or self.calibrate or self.wide_risk is not None:
            raise ValueError(f"portfolio={self.portfolio} replays the plain risk test: guard={self.guard}, "
                             f"calibrate={self.calibrate} and wide_risk={self.wide_risk} must be off")
        risks = self.portfolio_risks
        if risks is not None:
            risks = self.portfolio_risks = tuple(float(r) for r in risks)
            if not risks:
                raise ValueError("portfolio_risks=() must name at least one risk")
            if not all(0.0 <= r <= 1.0 for r in risks):
                raise ValueError(f"portfolio_risks={risks} must each lie in [0, 1]")
            if any(b <= a for a, b in itertools.pairwise(risks)):
                raise ValueError(f"portfolio_risks={risks} must be strictly increasing (the order ties follow)")
        super().__post_init__()
        self._risks: tuple[float, ...] = (self.risk,) if risks is None else risks
        self.names: tuple[str, ...] = PORTFOLIO if risks is None else (PORTFOLIO[0], *map(risk_name, risks))
        self._thresholds = {name: 1.0 - r - 1e-12 for name, r in zip(self.names[1:], self._risks, strict=True)}
        self._tsafrir = Tsafrir().fit(self.table)
        self._submit: list[int] = self.table.submit.tolist()
        self._size: list[int] = self.table.size.tolist()
        self._point: dict[int, int] = {}  # Tsafrir's prediction of each job in the system
        self._pp_owned: set[int] = set()  # jobs in the system submitted under EASY++
        self._recent: deque[int] = deque()  # the jobs submitted in the window, in order
        self._seen: dict[int, tuple[int, int, float, Law]] = {}  # their Tsafrir prediction, predicted runtime,
        self._ended: set[int] = set()  # backfill key and law at submission; those of them that completed
        self._next = int(self.table.submit.min()) + 3600 * self.portfolio if len(self.table) else 0
        self.submitted = dict.fromkeys(self.names, 0)
        self.replayed = 0
        self.replay_s = 0.0

    @property
    def compiles(self) -> bool:
        """The portfolio runs on the policy-driven simulator only."""
        return False

    def _advance(self, now: int) -> None:
        """Make every choice due by `now`, before the instant's events: all it replays ended before."""
        while now >= self._next:
            t = self._next
            while self._recent and self._submit[self._recent[0]] < t - PORTFOLIO_WINDOW_S:
                old = self._recent.popleft()
                del self._seen[old]
                self._ended.discard(old)
            done = [j for j in self._recent if j in self._ended]
            rows = [self._seen[j] for j in done]
            jobs = [Job(id=j, submit=self._submit[j], runtime=self._runtime[j], size=self._size[j],
                        requested=self._requested[j]) for j in done]
            began = time.perf_counter()
            bslds: tuple[float, ...]
            if self.portfolio_risks is None:
                self.mode, b_pp, b_learned = portfolio_choice(
                    jobs, self.nodes, [r[0] for r in rows], [r[3] for r in rows], [r[2] for r in rows],
                    [r[1] for r in rows], self.risk, self.reservation_q, self.corrector)
                bslds = (b_pp, b_learned)
            else:
                bslds = tuple(portfolio_replays(
                    jobs, self.nodes, [r[0] for r in rows], [r[3] for r in rows], [r[2] for r in rows],
                    [r[1] for r in rows], self._risks, self.reservation_q, self.corrector)) if jobs \
                    else (float("nan"),) * len(self.names)
                self.mode = multi_choice(self.names, bslds, self.mode)
            self.replay_s += time.perf_counter() - began
            self.replayed += len(jobs)
            self.choices.append((t, self.mode, *bslds))
            self._next += 3600 * self.portfolio

    def on_submit(self, index: int, now: int) -> int:
        self._advance(now)
        learned = super().on_submit(index, now)
        point = self._point[index] = max(1, self._tsafrir.point(index))
        self._seen[index] = (point, learned, self.key[index], self.laws[index])
        self._recent.append(index)
        self.submitted[self.mode] += 1
        if self.mode != PORTFOLIO[0]:
            return learned
        self._pp_owned.add(index)
        self.predicted[index] = point
        return point

    def on_prediction_over(self, index: int, now: int, elapsed: int) -> int:
        self._advance(now)
        if index not in self._pp_owned:
            return super().on_prediction_over(index, now, elapsed)
        self.predicted[index] = self._requested[index]  # EASY++'s correction
        return self.predicted[index]

    def on_complete(self, index: int, now: int) -> None:
        self._advance(now)
        super().on_complete(index, now)
        self._tsafrir.observe(index)
        del self._point[index]
        self._pp_owned.discard(index)
        if index in self._seen:
            self._ended.add(index)

    def backfill_key(self, index: int) -> float:
        return float(self._point[index]) if self.mode == PORTFOLIO[0] else self.key[index]

    def ends_by(self, index: int, now: int, shadow: int) -> bool:
        if self.mode == PORTFOLIO[0]:
            return now + self._point[index] <= shadow
        return not self.laws[index].z_cdf(shadow - now) < self._thresholds[self.mode]  # the plain risk test

    def summary(self) -> dict[str, Any]:
        """How often each policy was chosen, the choices made on a tie for the lowest BSLD (EASY++'s with one risk;
        the policy in force's, or the first tied, with several) or an empty window, the jobs submitted under each,
        and the replays' cost."""
        return {"period_h": self.portfolio, "window_h": PORTFOLIO_WINDOW_S // 3600, "choices": len(self.choices),
                "chosen": {name: sum(c[1] == name for c in self.choices) for name in self.names},
                "ties": sum(c[2] == c[2] and c[2:].count(min(c[2:])) > 1 for c in self.choices),
                "empty": sum(c[2] != c[2] for c in self.choices),  # NaN: no completed job in the window
                "submitted": dict(self.submitted), "replayed_jobs": self.replayed,
                "replay_s": round(self.replay_s, 3)}


def make_policy(name: str, table: JobTable, risk: float = DEFAULT_RISK,
                reservation_q: float = DEFAULT_RESERVATION_Q, corrector: str = "conditional",
                config: LearnedConfig | None = None, order_q: float = 0.5,
                guard: float | None = None, calibrate: int = 0,
                wide_risk: float | None = None, portfolio: int = 0, nodes: int = 0,
                portfolio_risks: Sequence[float] | None = None) -> tuple[Any, bool]:
    """The policy of a PREDICTIVE_SCHEDULERS name, and whether it runs pyss's plain-EASY submission rule."""
    if name == "easy-requested":
        return PointPolicy(RequestedTime(), table, sjf=False), True
    if name == "easy-exact":
        return PointPolicy(Exact(), table, sjf=False), True
    if name == "easy-pp":
        return PointPolicy(Tsafrir(), table, sjf=True), False
    if name == "easy-learned":
        predictor = LearnedPredictor(config or LearnedConfig())
        if portfolio:
            return PortfolioPolicy(predictor, table, risk, reservation_q, corrector, order_q, guard, calibrate,
                                   wide_risk, portfolio=portfolio, nodes=nodes,
                                   portfolio_risks=None if portfolio_risks is None else tuple(portfolio_risks)), False
        if portfolio_risks is not None:
            raise ValueError(f"portfolio_risks={tuple(portfolio_risks)} needs portfolio >= 1 (got {portfolio})")
        return RiskPolicy(predictor, table, risk, reservation_q, corrector, order_q, guard, calibrate,
                          wide_risk), False
    raise ValueError(f"scheduler={name!r} must be one of {PREDICTIVE_SCHEDULERS}")


def run_predictive(workload: Workload, table: JobTable, name: str, **options: Any) -> Run:
    """Simulate one prediction-driven scheduler and score it with the seed-001 metrics.

    The point schedulers (POINT_RUNS) and easy-learned's default policy (`RiskPolicy.compiles`) run on compiled
    simulators, which tests hold equal to the policy one.
    """
    if name in POINT_RUNS and not options:
        mode, sjf, plain = POINT_RUNS[name]
        began = time.perf_counter()
        point = simulate_point(workload, table.requested, table.user, mode, sjf, plain)
        seconds = time.perf_counter() - began
        return score(name, workload, point, {"passes": point.passes, "backfilled": point.backfilled,
                                             "corrections": point.corrections, "seconds": round(seconds, 3)})
    extra: dict[str, Any] = {"nodes": workload.nodes} if options.get("portfolio") else {}
    policy, plain = make_policy(name, table, **options, **extra)
    began = time.perf_counter()
    result: BackfillResult
    if isinstance(policy, RiskPolicy) and policy.compiles:
        result = simulate_risk(workload, policy.predictor, policy.risk, policy.reservation_q, policy.order_q)
    else:
        result = simulate_backfill(workload, policy, pass_if_new_fits=plain)
    seconds = time.perf_counter() - began
    details: dict[str, Any] = {"passes": result.passes, "backfilled": result.backfilled,
                               "corrections": result.corrections, "seconds": round(seconds, 3),
                               **{k: v for k, v in options.items() if k != "config"}}
    if isinstance(policy, RiskPolicy):
        details["engine"] = {**policy.predictor.stats, "window": policy.predictor.config.window}
        if policy.calibrate:
            details["threshold"] = threshold_summary(policy.thresholds, 1.0 - policy.risk)
    if isinstance(policy, PortfolioPolicy):
        details["portfolio"] = policy.summary()
    return score(name, workload, result, details)
