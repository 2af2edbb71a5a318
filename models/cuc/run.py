"""CUC end to end on one capacity series: Alg. 1 (BO of θ on the training samples), Alg. 4 (the test) and the
baselines (no uncertainty; no BO; a forecaster with the exact solver)."""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from models.arrays import FloatArray, IntArray
from models.cuc.exact import lp_bound, solve_exact
from models.cuc.greedy import greedy_schedule
from models.cuc.jobs import JobConfig
from models.cuc.names import ERROR_CHOICES, ERROR_SETS, FORECASTERS, OBJECTIVES, ORDERS, SELECT, SELECTABLE
from models.cuc.problem import utility, utility_ratio, violation_rate
from models.cuc.protocol import (
    ForecastBank,
    MaxLaw,
    Sample,
    Split,
    constraint,
    fit_error_law,
    fit_moments_law,
    inner_origins,
    make_samples,
)
from models.cuc.rounding import solve_rounded
from models.law import Law

FIT_WINDOWS = (72, 96, 120)
ERROR_WINDOWS = (24, 36, 48, 60, 72)
COMPONENTS = (1, 2, 3)
INFLATION = (0.5, 3.0)
PENALTY = 1e4  # weight of the violation error against the (0..1) fill in the BO objective
VALIDATION_HOURS = 48  # the commands' default: BO scores θ on the last two training days, then θ serves the test
UCB_ALPHA = 0.05  # the "ucb" objective: one-sided 95 % Clopper-Pearson upper bound of the training violation rate


def violation_ucb(violated: int, hours: int, alpha: float = UCB_ALPHA) -> float:
    """The exact (Clopper-Pearson) one-sided 1 - alpha upper confidence bound of a rate seen as `violated` of
    `hours` Bernoulli trials: the largest q with P(Bin(hours, q) <= violated) >= alpha."""
    from scipy.stats import beta

    if hours < 1 or not 0 <= violated <= hours:
        raise ValueError(f"violated={violated} must lie in [0, hours={hours}] with hours >= 1")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha={alpha} must lie strictly between 0 and 1")
    if violated == hours:
        return 1.0
    return float(beta.ppf(1.0 - alpha, violated + 1, hours - violated))


@dataclass(frozen=True)
class Theta:
    """θ, the prediction model's parameters that BO tunes: the forecaster's fit window (hours), the number of
    inner windows whose errors fit the law, the GMM's largest number of components, and the spread factor kappa;
    with `--errors select` also the error law, chosen on the validation split (None: the evaluator's law)."""

    forecaster: str = "tsdec"
    fit_window: int = 120
    error_windows: int = 72
    components: int = 2
    inflation: float = 1.0
    errors: str | None = None

    def __post_init__(self) -> None:
        if self.forecaster not in FORECASTERS:
            raise ValueError(f"forecaster={self.forecaster!r} is not one of {', '.join(FORECASTERS)}")
        if self.errors is not None and self.errors not in ERROR_SETS:
            raise ValueError(f"errors={self.errors!r} is not one of {', '.join(ERROR_SETS)} (θ names one law)")
        if self.fit_window < 4 or self.error_windows < 2 or self.components < 1 or not self.inflation > 0:
            raise ValueError(f"invalid θ {self}: fit_window >= 4, error_windows >= 2, components >= 1, "
                             "inflation > 0")


@dataclass(frozen=True)
class Outcome:
    """Per-sample utility u_s, clairvoyant bound u*_s and violation rate v_s (eq. 4) of one method."""

    utility: FloatArray
    bound: FloatArray
    violation: FloatArray
    hours: int = 24  # T, so that v_s T is the number of violated hours of sample s

    @property
    def util(self) -> float:
        """Eq. (5) averaged over samples (u*_s bounded above by the LP relaxation, so a lower bound)."""
        return float(np.mean([utility_ratio(u, b) for u, b in zip(self.utility, self.bound, strict=True)]))

    @property
    def vio(self) -> float:
        """Vio = sum_s v_s / S."""
        return float(np.mean(self.violation))

    def error(self, p: float, objective: str = "sample") -> float:
        """Alg. 1's violation error: sum_s max(v_s - p, 0) / S as the seed writes it ("sample"),
        max(Vio - p, 0) on the mean violation rate as the seed's published code computes it ("mean"), or
        max(U - p, 0) with U the 95 % upper confidence bound of the rate from its violated hours out of S T
        ("ucb": a θ meets p only if the training windows show it with confidence, not just on average)."""
        if objective == "sample":
            return float(np.mean(np.maximum(self.violation - p, 0.0)))
        if objective == "mean":
            return max(self.vio - p, 0.0)
        if objective == "ucb":
            violated = int(np.rint(self.violation * self.hours).sum())
            return max(violation_ucb(violated, self.violation.size * self.hours) - p, 0.0)
        raise ValueError(f"objective={objective!r} is not one of {', '.join(OBJECTIVES)}")


@dataclass(frozen=True)
class Phase:
    """A phase's summary: mean utility ratio, mean violation rate and its wall time (seconds)."""

    util: float
    violation: float
    time_s: float
    samples: int

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


@dataclass
class Evaluator:
    """The samples of one series with their generated jobs, the forecast bank and the error laws (cached)."""

    y: FloatArray
    split: Split
    jobs: JobConfig
    seed: int = 0
    refit_every: int = 1  # hours between error-law refits: 1 is Alg. 2 as written (a law per sample)
    order: str = "ratio"  # Alg. 3 line 1: "ratio" (c_i / d_i, the seed's text) or "value" (c_i d_i)
    errors: str = "newest"  # the error law: whole inner windows ("full"), per step the newest ("newest"), the
    # training windows' per-step mean and sd, frozen ("moments", the published law), per step the larger cut-down of
    # those two ("max": θ's kappa on newest, 1 on moments), or "select": θ names the law, which train() chooses among
    # SELECTABLE on the validation samples
    validation_hours: int = 0  # BO scores θ on the last this many training origins (0: on every training origin)
    train: list[Sample] = field(init=False)
    validate: list[Sample] = field(init=False)
    test: list[Sample] = field(init=False)
    bank: ForecastBank = field(init=False)
    laws: dict[tuple[str, str, int, int, int, int], Law] = field(default_factory=dict)  # each keeps its quantiles
    bounds: dict[int, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.refit_every < 1:
            raise ValueError(f"refit_every={self.refit_every} must be >= 1 hour")
        if self.order not in ORDERS:
            raise ValueError(f"order={self.order!r} is not one of {', '.join(ORDERS)}")
        if self.errors not in ERROR_CHOICES:
            raise ValueError(f"errors={self.errors!r} is not one of {', '.join(ERROR_CHOICES)}")
        validation = self.split.validation_origins(self.validation_hours)
        reads_moments = self.errors in ("moments", "max", SELECT)
        if reads_moments and self.validation_hours and len(self.moments_origins(validation.start)) < 2:
            raise ValueError(f"validation_hours={self.validation_hours} leaves fewer than 2 training windows whose "
                             "targets precede the validation origins (the moments law needs 2)")
        self.train = make_samples(self.y, self.split.train_origins, self.split.T, self.jobs, self.seed)
        self.validate = [s for s in self.train if s.origin in validation]
        self.test = make_samples(self.y, self.split.test_origins, self.split.T, self.jobs, self.seed)
        self.bank = ForecastBank(self.y, self.split.T)

    def anchor(self, origin: int) -> int:
        """The origin at which the error law used at `origin` was fitted (every refit_every hours of a phase)."""
        first = self.split.train_origins.start if origin < self.split.test_origins.start \
            else self.split.test_origins.start
        return origin - (origin - first) % self.refit_every

    def moments_origins(self, origin: int) -> range:
        """The training origins whose errors fit the moments law used at `origin`: for a validation sample those
        whose targets all precede the first validation origin; otherwise (the test, and the training samples when
        BO scores all of them) every training origin. The test days are never among them in the clean split."""
        train, T = self.split.train_origins, self.split.T
        if self.validation_hours and origin < self.split.test_origins.start:
            first = self.split.validation_origins(self.validation_hours).start
            if origin >= first:
                return range(train.start, max(train.start, first - T + 1))
        return train

    def law_of(self, theta: Theta) -> str:
        """The error law θ is scored under: θ's own (chosen by `select`) or else the evaluator's."""
        errors = theta.errors or self.errors
        if errors == SELECT:
            raise ValueError("errors='select': θ must name its law (train() chooses it on the validation samples)")
        return errors

    def _key(self, theta: Theta, origin: int) -> tuple[str, str, int, int, int, int]:
        errors = self.law_of(theta)
        if errors == "moments":  # one frozen law per phase: keyed by the last origin of its windows
            return (errors, theta.forecaster, theta.fit_window, 0, 0, self.moments_origins(origin)[-1])
        return (errors, theta.forecaster, theta.fit_window, theta.error_windows, theta.components,
                self.anchor(origin))

    def law(self, theta: Theta, origin: int) -> Law | MaxLaw:
        """The error law used at `origin` (cached): under `max` the newest and the moments laws of that origin."""
        if self.law_of(theta) == "max":
            return MaxLaw(self._fitted(replace(theta, errors="newest"), origin),
                          self._fitted(replace(theta, errors="moments"), origin))
        return self._fitted(theta, origin)

    def _fitted(self, theta: Theta, origin: int) -> Law:
        key = self._key(theta, origin)
        if key not in self.laws:
            if key[0] == "moments":
                deltas = self.bank.errors(theta.forecaster, theta.fit_window, self.moments_origins(origin))
                self.laws[key] = fit_moments_law(deltas)
                return self.laws[key]
            if key[0] == "newest":
                deltas = self.bank.newest_errors(theta.forecaster, theta.fit_window, key[-1], theta.error_windows)
            else:
                inner = inner_origins(key[-1], theta.error_windows, self.split.T)
                deltas = self.bank.errors(theta.forecaster, theta.fit_window, inner)
            self.laws[key] = fit_error_law(deltas, theta.components, self.seed)
        return self.laws[key]

    def constraint(self, theta: Theta, sample: Sample, p: float, uncertain: bool) -> FloatArray:
        """Alg. 1 lines 3-4 / Alg. 4 lines 1-2: Ã for the sample's scope."""
        forecast = self.bank.get(theta.forecaster, theta.fit_window, sample.origin)
        if not uncertain:
            return constraint(forecast, None, p, theta.inflation)
        return constraint(forecast, self.law(theta, sample.origin), p, theta.inflation)

    def bound(self, sample: Sample) -> float:
        """u*_s bounded by the LP relaxation of problem (1) under the true capacity (HiGHS)."""
        if sample.origin not in self.bounds:
            self.bounds[sample.origin] = lp_bound(sample.jobs, sample.truth)
        return self.bounds[sample.origin]

    def prepare_bounds(self, samples: list[Sample]) -> None:
        """Compute u*_s of `samples` now, so that no timed method pays for the denominator of its Util."""
        for s in samples:
            self.bound(s)

    def greedy(self, theta: Theta, samples: list[Sample], p: float, uncertain: bool = True) -> Outcome:
        """Alg. 3 under Ã on every sample, scored against the true capacity."""
        u, b, v = [], [], []
        for s in samples:
            start = greedy_schedule(s.jobs, self.constraint(theta, s, p, uncertain), self.order)
            u.append(utility(s.jobs, start))
            b.append(self.bound(s))
            v.append(violation_rate(s.jobs, start, s.truth))
        return Outcome(np.array(u), np.array(b), np.array(v), self.split.T)

    def two_stage(self, theta: Theta, samples: list[Sample], time_limit: float = 0.0) -> Outcome:
        """The two-stage baseline: the point forecast as the capacity and problem (1) solved under it, by the LP on
        job classes rounded (models/cuc/rounding.py) and, with time_limit > 0, HiGHS's MILP from that start."""
        u, b, v = [], [], []
        for s in samples:
            cap = self.constraint(theta, s, 0.5, uncertain=False)
            result = solve_rounded(s.jobs, cap)
            if time_limit > 0:
                milp = solve_exact(s.jobs, cap, time_limit=time_limit, hint=result.start)
                result = milp if milp.utility > result.utility else result
            u.append(result.utility)
            b.append(self.bound(s))
            v.append(violation_rate(s.jobs, result.start, s.truth))
        return Outcome(np.array(u), np.array(b), np.array(v), self.split.T)


def exceedance(ev: Evaluator, theta: Theta, samples: list[Sample], q: float) -> FloatArray:
    """(T,) the calibration of the capacity law per step ahead h: the share of samples whose true a_{o+h} falls
    below the law's q-quantile Ã_h (a calibrated law gives q at every h; no schedule is involved)."""
    if not 0 < q < 1:
        raise ValueError(f"q={q} must lie strictly between 0 and 1")
    if not samples:
        raise ValueError("no samples to check the calibration on")
    below = np.array([s.truth < ev.constraint(theta, s, q, True) for s in samples], dtype=np.float64)
    return np.asarray(below.mean(axis=0), dtype=np.float64)


HINDSIGHT_GRID = tuple(round(0.05 * k, 2) for k in range(1, 81))  # kappa in 0.05, 0.10, ..., 4.00


@dataclass(frozen=True)
class Hindsight:
    """The law family's best case on some samples, kappa chosen on their true capacity: an oracle, not a method."""

    inflation: float | None  # the kappa of the largest Util with Vio <= p; None if no kappa of the grid meets p
    util: float | None
    violation: float | None

    def as_dict(self) -> dict[str, float | None]:
        return asdict(self)


def hindsight(ev: Evaluator, theta: Theta, samples: list[Sample], p: float,
              grid: tuple[float, ...] = HINDSIGHT_GRID) -> Hindsight:
    """Over kappa in `grid` (θ's other parameters fixed), the largest Util whose Vio <= p on `samples`, both read
    from their true capacity: what the tightest law of the family that meets p reaches (a bound for BO's choice)."""
    if not samples:
        raise ValueError("no samples to choose kappa on")
    if not grid or min(grid) <= 0:
        raise ValueError(f"grid={grid!r} must be non-empty and positive")
    best = Hindsight(None, None, None)
    for kappa in grid:
        outcome = ev.greedy(replace(theta, inflation=kappa), samples, p)
        if outcome.vio <= p and (best.util is None or outcome.util > best.util):
            best = Hindsight(kappa, outcome.util, outcome.vio)
    return best


def violated_hours(ev: Evaluator, theta: Theta, samples: list[Sample], p: float) -> dict[int, int]:
    """{hour of the series: number of samples whose Alg. 3 schedule under Ã overloads the true capacity then}."""
    from models.cuc.problem import load

    counts: dict[int, int] = {}
    for s, start in zip(samples, decide(ev, theta, p, samples), strict=True):
        for h in np.nonzero(load(s.jobs, start) > s.truth)[0]:
            counts[s.origin + int(h)] = counts.get(s.origin + int(h), 0) + 1
    return dict(sorted(counts.items()))


def fill(outcome: Outcome, samples: list[Sample]) -> float:
    """Mean share of the true capacity-hours that the schedule uses (BO's tie-break: more is better)."""
    return float(np.mean([u / max(float(s.truth.sum()), 1e-9) for u, s in zip(outcome.utility, samples,
                                                                                 strict=True)]))


@dataclass(frozen=True)
class Trained:
    """Alg. 1's output: the chosen θ, its training outcome, the BO wall time and every trial's (θ, error, fill)."""

    theta: Theta
    outcome: Outcome
    time_s: float
    trials: list[dict[str, float | int | str]]
    candidates: dict[str, Phase] = field(default_factory=dict)  # `select`: each law's validation phase


def choose_law(validation: dict[str, Phase], p: float) -> str:
    """`select`'s rule on the validation samples alone: among the laws whose validation Vio <= p, the one of the
    highest Util; if none meets p, the one of the lowest Vio (ties: the higher Util, then the first named)."""
    if not validation:
        raise ValueError("no law to choose among")
    meet = {law: r for law, r in validation.items() if r.violation <= p}
    if meet:
        return max(meet, key=lambda law: meet[law].util)
    return min(validation, key=lambda law: (validation[law].violation, -validation[law].util))


def train(ev: Evaluator, p: float, steps: int, theta0: Theta, seed: int, objective: str = "sample",
          forecasters: tuple[str, ...] = ()) -> Trained:
    """Alg. 1: BO (optuna TPE, seeded) of θ on BO's samples (`ev.validate`: the last training days, or every
    training sample), minimising sum_s max(v_s - p, 0) / S and, among θ with the same error, maximising the capacity
    used; the first trial is θ0. Under the moments law θ is the forecaster and its fit window (kappa stays θ0's,
    the published 1); under `max` θ is the newest law's whole θ, its kappa scaling the newest half only. Nothing
    after the training targets is read. With two or more `forecasters` the point forecaster is one more categorical
    parameter of θ (θ0's must be among them); with none or one, θ0's forecaster is kept and the search is the same
    as without the argument."""
    import optuna

    if steps < 1:
        raise ValueError(f"bo-steps={steps} must be >= 1")
    if theta0.errors is None and ev.errors == SELECT:
        return _train_select(ev, p, steps, theta0, seed, objective, forecasters)
    choose_forecaster = check_forecasters(forecasters, theta0) > 1
    Outcome(np.zeros(1), np.ones(1), np.zeros(1)).error(p, objective)  # validates the name
    optuna.logging.set_verbosity(logging.WARNING)
    optuna.logging.disable_default_handler()
    samples = ev.validate
    ev.prepare_bounds(samples)  # Util's denominator, not part of BO (which scores the fill)
    tick = time.perf_counter()
    moments = ev.law_of(theta0) == "moments"

    def score(trial: optuna.Trial) -> float:
        theta = replace(
            theta0,
            forecaster=(trial.suggest_categorical("forecaster", forecasters) if choose_forecaster
                        else theta0.forecaster),
            fit_window=trial.suggest_categorical("fit_window", FIT_WINDOWS),
        )
        if not moments:
            theta = replace(theta, error_windows=trial.suggest_categorical("error_windows", ERROR_WINDOWS),
                            components=trial.suggest_categorical("components", COMPONENTS),
                            inflation=trial.suggest_float("inflation", *INFLATION))
        outcome = ev.greedy(theta, samples, p)
        err, used = outcome.error(p, objective), fill(outcome, samples)
        trial.set_user_attr("error", err)
        trial.set_user_attr("fill", used)
        return PENALTY * err + (1.0 - used)

    sampler = optuna.samplers.TPESampler(seed=seed)
    study = optuna.create_study(direction="minimize", sampler=sampler)
    first: dict[str, Any] = {"fit_window": theta0.fit_window} if moments else {
        "fit_window": theta0.fit_window, "error_windows": theta0.error_windows, "components": theta0.components,
        "inflation": theta0.inflation}
    study.enqueue_trial({"forecaster": theta0.forecaster, **first} if choose_forecaster else first)
    study.optimize(score, n_trials=steps)
    best = study.best_trial
    theta = replace(theta0, **best.params)
    outcome = ev.greedy(theta, samples, p)
    trials = [{**t.params, "error": t.user_attrs["error"], "fill": t.user_attrs["fill"]} for t in study.trials]
    return Trained(theta, outcome, time.perf_counter() - tick, trials)


def _train_select(ev: Evaluator, p: float, steps: int, theta0: Theta, seed: int, objective: str,
                  forecasters: tuple[str, ...]) -> Trained:
    """`--errors select`: Alg. 1 under each law of SELECTABLE on the same validation samples, then the law by
    choose_law on their validation Util and Vio; θ names it. Like train(), nothing after the training targets is
    read."""
    runs = {law: train(ev, p, steps, replace(theta0, errors=law), seed, objective, forecasters)
            for law in SELECTABLE}
    candidates = {law: phase(r.outcome, r.time_s) for law, r in runs.items()}
    chosen = runs[choose_law(candidates, p)]
    trials = [{**trial, "errors": law} for law, r in runs.items() for trial in r.trials]
    return Trained(chosen.theta, chosen.outcome, sum(r.time_s for r in runs.values()), trials, candidates)


def check_forecasters(forecasters: tuple[str, ...], theta0: Theta) -> int:
    """How many point forecasters BO chooses among (1 when `forecasters` is empty: θ0's); refuses unknown or
    repeated names and a θ0 whose forecaster is not among them."""
    if not forecasters:
        return 1
    unknown = [f for f in forecasters if f not in FORECASTERS]
    if unknown:
        raise ValueError(f"forecasters={forecasters!r}: {unknown[0]!r} is not one of {', '.join(FORECASTERS)}")
    if len(set(forecasters)) != len(forecasters):
        raise ValueError(f"forecasters={forecasters!r} names a forecaster twice")
    if theta0.forecaster not in forecasters:
        raise ValueError(f"forecasters={forecasters!r} must include θ0's forecaster {theta0.forecaster!r} "
                         "(BO's first trial)")
    return len(forecasters)


def decide(ev: Evaluator, theta: Theta, p: float, samples: list[Sample], uncertain: bool = True) -> list[IntArray]:
    """Alg. 4's hourly decisions: predict the capacity law, take Ã = Φ^{-1}(p), schedule with Alg. 3."""
    return [greedy_schedule(s.jobs, ev.constraint(theta, s, p, uncertain), ev.order) for s in samples]


def on_test_samples(ev: Evaluator, theta: Theta, p: float, uncertain: bool = True) -> tuple[Outcome, float]:
    """Alg. 4 on the test samples with θ; the wall time covers forecasts, error laws and Alg. 3, not u*_s."""
    ev.prepare_bounds(ev.test)
    tick = time.perf_counter()
    decide(ev, theta, p, ev.test, uncertain)
    elapsed = time.perf_counter() - tick
    return ev.greedy(theta, ev.test, p, uncertain), elapsed


def phase(outcome: Outcome, time_s: float) -> Phase:
    return Phase(util=outcome.util, violation=outcome.vio, time_s=time_s, samples=int(outcome.utility.size))


def run_cuc(y: FloatArray, p: float, bo_steps: int, seed: int = 0, jobs: JobConfig | None = None,
            theta0: Theta | None = None, refit_every: int = 1, ev: Evaluator | None = None,
            objective: str = "sample", with_hindsight: bool = False,
            forecasters: tuple[str, ...] = ()) -> dict[str, Any]:
    """CUC on one series: train (Alg. 1, BO among `forecasters` if more than one) then test (Alg. 4); the
    `train`/`test` phases, the chosen θ and the share of hours whose true capacity fell below Ã (the law's
    p-quantile, before any scheduling) per phase."""
    if not 0 < p < 1:
        raise ValueError(f"p={p} must lie strictly between 0 and 1")
    ev = ev if ev is not None else Evaluator(y, Split(len(y)), jobs or JobConfig(), seed, refit_every)
    trained = train(ev, p, bo_steps, theta0 or Theta(), seed, objective, forecasters)
    tested, elapsed = on_test_samples(ev, trained.theta, p)
    calibration = {name: float(exceedance(ev, trained.theta, samples, p).mean())
                   for name, samples in (("train", ev.train), ("test", ev.test))}
    out = {"train": phase(trained.outcome, trained.time_s).as_dict(),  # on BO's samples (ev.validate)
           "validation_hours": ev.validation_hours,
           "test": phase(tested, elapsed).as_dict(),
           "theta": asdict(trained.theta),
           "exceedance": calibration,
           "violated_hours": {str(h): n for h, n in violated_hours(ev, trained.theta, ev.test, p).items()}}
    if trained.candidates:
        out["selection"] = {law: r.as_dict() for law, r in trained.candidates.items()}
    if with_hindsight:
        out["hindsight"] = hindsight(ev, trained.theta, ev.test, p).as_dict()
    return out
