"""The platform's prediction engine: duration laws for jobs described by features, learned from observed durations.

The server feeds it each completed job's features and observed duration (seconds), in completion order; `refit`
trains the learned predictor (seed 004: clusters of a regression tree, smoothed bin vectors, the refit and
drift-update policy of `LearnedPredictor`) on that training set, replayed causally, and swaps the fitted model in
as one reference, so predictions never see a half-built model. Until `cold_start` completions the law is the
requested duration as a point. A model's version is the SHA-256 of its training set and configuration.

With `conformal_gamma` set, every law is mapped by adaptive conformal inference (`models/predict/adaptive.py`'s
`AciRule`, at its level 0.9): each completion carries the 0.9-quantile its job was quoted (`Observation.quoted`),
and a model's alpha is ACI's update run over its training set in order, so alpha, like the learned laws, is a
function of the training set the version hashes.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from mechanism.platform import Platform
from mechanism.sow import SoW
from models.predict.adaptive import AciRule
from models.predict.jobs import JobTable
from models.predict.learned import LearnedConfig, LearnedPredictor, Submission
from models.predict.recalibrate import cdf_probs
from models.predict.sows import rounds_law
from models.predictive import Discrete

MAX_TAGS = 32
MAX_TAG = 128  # characters of a tag, an executable or a queue name
REFIT_EVERY = 25  # completions between refits of the service's engine


class JobFeatures(BaseModel):
    """What a feature submission tells about a job's duration (the tenant is the submitter)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    nodes: int = Field(ge=1)
    requested_seconds: int = Field(ge=1)
    executable: str = Field(default="", max_length=MAX_TAG)
    queue: str = Field(default="", max_length=MAX_TAG)
    tags: tuple[str, ...] = Field(default=(), max_length=MAX_TAGS)


@dataclass(frozen=True)
class EngineConfig:
    """The engine's configuration: one for every platform."""

    cold_start: int = 20  # completions before learned laws replace the requested duration as a point
    learned: LearnedConfig = field(default_factory=LearnedConfig)
    conformal_gamma: float | None = None  # ACI's step on the laws' 0.9-quantile; None: the laws as learned

    def __post_init__(self) -> None:
        if self.cold_start < 1:
            raise ValueError(f"cold_start={self.cold_start} must be >= 1")
        self.rule()  # refuses a bad conformal_gamma

    def rule(self) -> AciRule | None:
        """ACI's rule with step `conformal_gamma` (None when it is off)."""
        if self.conformal_gamma is None:
            return None
        try:
            return AciRule(gamma=self.conformal_gamma)
        except ValueError as exc:
            raise ValueError(f"conformal_{exc}") from None

    def to_dict(self) -> dict[str, object]:
        learned = asdict(self.learned)
        if learned["refit_growth"] is None:  # the default: versions hash as before the option existed
            del learned["refit_growth"]
        out: dict[str, object] = {"cold_start": self.cold_start, "learned": learned}
        if self.conformal_gamma is not None:  # likewise: off, it is not hashed
            out["conformal_gamma"] = self.conformal_gamma
        return out


@dataclass(frozen=True)
class Observation:
    """One completed job of the training set: its tenant, features and observed duration (seconds), and with
    conformal laws the 0.9-quantile it was quoted (seconds, on the rounds the duration is observed in; inf or -inf
    when ACI quoted every duration or none)."""

    tenant: str
    features: JobFeatures
    seconds: int
    quoted: float | None = None

    def to_json(self) -> list[object]:
        row: list[object] = [self.tenant, self.features.model_dump(mode="json"), self.seconds]
        return row if self.quoted is None else [*row, self.quoted]


@dataclass(frozen=True)
class KnownValues:
    """The categorical values of a model's training set (what a misreport of a tag can choose from)."""

    executable: tuple[str, ...]
    queue: tuple[str, ...]
    tags: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Prediction:
    """A law of durations in seconds (increasing support, probabilities summing to 1) and the model's version."""

    seconds: tuple[float, ...]
    probs: tuple[float, ...]
    version: str
    trained: int  # completions the model learned from
    alpha: float | None = None  # ACI's alpha the law was mapped with (None: conformal laws are off)


def model_version(config: EngineConfig, rows: Sequence[Observation]) -> str:
    """SHA-256 of the configuration and the training set (in order)."""
    text = json.dumps({"config": config.to_dict(), "rows": [r.to_json() for r in rows]}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


class _Codes:
    """Categorical values as integer codes, in order of first appearance (0: empty)."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {"": 0}

    def __call__(self, value: str) -> int:
        return self.codes.setdefault(value, len(self.codes))


class Model:
    """A fitted engine: the learned predictor after replaying the training set, or the cold-start point law."""

    def __init__(self, config: EngineConfig, rows: Sequence[Observation]) -> None:
        self.config = config
        self.version = model_version(config, rows)
        self.trained = len(rows)
        self._lock = threading.Lock()  # new categorical values get codes on first sight
        self._users, self._execs, self._queues, self._tags = _Codes(), _Codes(), _Codes(), _Codes()
        self.known = KnownValues(executable=tuple(sorted({r.features.executable for r in rows})),
                                 queue=tuple(sorted({r.features.queue for r in rows})),
                                 tags=tuple(sorted({tuple(sorted(r.features.tags)) for r in rows})))
        self.rule = config.rule()
        self.alpha = None if self.rule is None else conformal_alpha(self.rule, rows)
        self._predictor: LearnedPredictor | None = None
        if len(rows) >= config.cold_start:
            self._predictor = LearnedPredictor(config.learned).fit(self._table(rows))
            for i in range(len(rows)):
                self._predictor.observe(i)
            if not self._predictor.fitted:  # fewer completions than its first scheduled fit: fit now
                self._predictor.refit()

    def _row(self, tenant: str, f: JobFeatures) -> tuple[int, int, int, int, int]:
        return (self._users(tenant), self._tags(",".join(sorted(f.tags))), self._execs(f.executable),
                self._queues(f.queue), f.nodes)

    def _table(self, rows: Sequence[Observation]) -> JobTable:
        cols = [self._row(r.tenant, r.features) for r in rows]
        runtime = np.array([max(1, r.seconds) for r in rows], dtype=np.int64)
        requested = np.maximum(runtime, [r.features.requested_seconds for r in rows]).astype(np.int64)
        zeros = np.zeros(len(rows), dtype=np.int64)

        def col(k: int) -> np.ndarray:
            return np.array([c[k] for c in cols], dtype=np.int64)
        return JobTable(submit=np.arange(len(rows), dtype=np.int64), runtime=runtime, requested=requested,
                        size=col(4), user=col(0), group=col(1), executable=col(2), queue=col(3), partition=zeros,
                        wait=zeros)

    def predict(self, tenant: str, f: JobFeatures) -> Prediction:
        """The law of a new job's duration, capped at its requested duration."""
        p = self._predictor
        if p is None:  # a point law: ACI's map leaves it as it is
            return Prediction((float(f.requested_seconds),), (1.0,), self.version, self.trained, self.alpha)
        with self._lock:
            user, group, exe, queue, size = self._row(tenant, f)
        law = p.predict_submission(Submission(submit=self.trained, requested=f.requested_seconds, size=size,
                                              user=user, group=group, executable=exe, queue=queue))
        probs = law.probs
        if self.rule is not None and self.alpha is not None:
            probs = cdf_probs(self.rule.map(np.cumsum(probs)[None, :], self.alpha), probs[None, :])[0]
        keep = probs > 0
        return Prediction(tuple(law.support[keep].tolist()), tuple(probs[keep].tolist()), self.version,
                          self.trained, self.alpha)


class DurationEngine:
    """The training set (completions in order) and the model in force; `refit` may run on any thread."""

    def __init__(self, config: EngineConfig | None = None) -> None:
        self.config = config or EngineConfig()
        self._rows: list[Observation] = []
        self._rows_lock = threading.Lock()
        self._fit_lock = threading.Lock()
        self.model = Model(self.config, [])  # replaced as a whole by `refit`

    def observe(self, tenant: str, f: JobFeatures, seconds: int, quoted: float | None = None) -> None:
        """A job submitted with features `f` completed after `seconds`; `quoted`: the 0.9-quantile it was quoted
        (needed with conformal laws, and ignored without them)."""
        if self.config.conformal_gamma is None:
            quoted = None
        elif quoted is None:
            raise ValueError("conformal laws learn each completion's quoted 0.9-quantile: quoted is missing")
        with self._rows_lock:
            self._rows.append(Observation(tenant, f, max(1, int(seconds)), quoted))

    @property
    def observed(self) -> int:
        return len(self._rows)

    def refit_due(self, refit_every: int = REFIT_EVERY) -> bool:
        """Whether to refit: every `refit_every` completions, and as soon as the cold start ends."""
        observed, trained, cold = self.observed, self.model.trained, self.config.cold_start
        return observed - trained >= refit_every or (trained < cold <= observed)

    def refit(self, upto: int | None = None) -> Model:
        """Fit on the first `upto` completions observed (all when None) and swap the new model in (one reference
        assignment: a prediction uses the old model or the new one, never a mix)."""
        with self._fit_lock:
            with self._rows_lock:
                rows = list(self._rows[:upto])
            if len(rows) != self.model.trained:
                self.model = Model(self.config, rows)
            return self.model

    def predict(self, tenant: str, f: JobFeatures) -> Prediction:
        return self.model.predict(tenant, f)


def conformal_alpha(rule: AciRule, rows: Sequence[Observation]) -> float:
    """ACI's alpha after learning `rows` in order: each a miss when its duration exceeded its quoted quantile."""
    alpha = rule.alpha_1
    for r in rows:
        if r.quoted is None:
            raise ValueError(f"a completion of {r.tenant!r} has no quoted quantile: conformal laws cannot learn it")
        alpha, _ = rule.step(alpha, r.seconds, r.quoted)
    return alpha


def feature_sow(features: JobFeatures, arrival: Sequence[tuple[int, float]], steps: Sequence[Sequence[float]],
                prediction: Prediction, round_seconds: float, platform: Platform) -> SoW:
    """The concrete SoW of a feature submission: the predicted law on rounds of `round_seconds` (capped at the
    requested duration and at D_m), crossed with the arrival law (raises pydantic's ValidationError when invalid)."""
    whole = max(1, int(round_seconds))
    d_max = min(platform.D_m, max(1, -(-features.requested_seconds // whole)))
    durations = rounds_of(prediction, whole, d_max)
    outcomes = [[a, d, pa * pd] for a, pa in arrival for d, pd in durations]
    return SoW.parse({"concurrency": features.nodes, "value_steps": [list(s) for s in steps], "outcomes": outcomes,
                      "signal_mode": "none"}, platform)


def rounds_of(prediction: Prediction, round_seconds: int, d_max: int) -> list[tuple[int, float]]:
    """(duration in rounds, probability): ceil(seconds / round_seconds), at least 1, capped at d_max, merged."""
    law = Discrete(np.asarray(prediction.seconds, dtype=np.float64), np.asarray([prediction.probs], dtype=np.float64))
    return rounds_law(law, 0, round_seconds, d_max)
