"""The prediction engine inside the service: feature submissions become SoWs, completions train it off the writer.

A feature submission is turned into a concrete SoW here, before the writer: the engine's law in seconds, on the
platform's rounds (`round_seconds`), capped at the requested duration and at D_m. The writer logs that SoW with
the law and the model version, so a replay applies the logged SoW and never predicts again. A background thread
follows the engine's `complete` events of feature-submitted jobs, feeds their observed durations (start to
completion, in rounds times `round_seconds`) to the engine in completion order, and refits it every `refit_every`
completions; the new model is swapped in whole. After a restart, `rebuild` reads the logged submissions and the
completions again and fits on as many completions as the last logged quote's model had learned, so the engine
predicts what it did before.

With conformal laws (`EngineConfig.conformal_gamma`), the log keeps each quote's alpha with its law, and a
completion is learned with the 0.9-quantile quoted to its job on the platform's rounds (ceil(q / round_seconds)
rounds, the SoW's own quantile, in seconds), the resolution the server observes durations in: alpha is a function
of the log, and `rebuild` gives the same alpha as before a restart.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
from pydantic import ValidationError

from mechanism.engine import Engine
from mechanism.platform import Platform
from mechanism.sow import SoW
from mechanism.validation import error_rule, field_path
from models.predict.adaptive import AciRule
from models.predict.online import REFIT_EVERY, DurationEngine, EngineConfig, JobFeatures, Prediction, feature_sow
from models.predictive import Discrete
from server import namespace
from server.errors import Refused, Unavailable
from server.store import CommandStore

log = logging.getLogger("sowsched.prediction")
POLL_S = 0.2  # how often the trainer looks for new completions when no logged batch wakes it
EVENT_BATCH = 10_000


def features_body(data: dict[str, Any]) -> tuple[JobFeatures, list[tuple[int, float]], list[list[float]]]:
    """Validated features, arrival law and value steps of a feature submission (refusals name the field)."""
    try:
        features = JobFeatures.model_validate({k: data[k] for k in
                                               ("nodes", "requested_seconds", "executable", "queue", "tags")
                                               if k in data})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = field_path(first["loc"], "features")
        raise Refused(f"{where}: {error_rule(first)} (got {first.get('input')!r})") from None
    arrival = [(int(o), float(p)) for o, p in data.get("arrival") or [(0, 1.0)]]
    steps = [[int(k), float(v)] for k, v in data.get("value_steps") or []]
    return features, arrival, steps


class Predictions:
    """The platform's prediction engine and what it needs from the server: features of jobs and their completions."""

    def __init__(self, config: EngineConfig, round_seconds: float, refit_every: int = REFIT_EVERY) -> None:
        if round_seconds <= 0:
            raise ValueError(f"round_seconds={round_seconds} must be > 0")
        if refit_every < 1:
            raise ValueError(f"refit_every={refit_every} must be >= 1")
        self.engine = DurationEngine(config)
        self.round_seconds = round_seconds
        self.refit_every = refit_every
        # engine job key -> features and the quoted 0.9-quantile (conformal laws; else None), of feature submissions
        self._jobs: dict[str, tuple[JobFeatures, float | None]] = {}
        self._lock = threading.Lock()
        self._seq = 0  # the next engine event to read
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._changed: threading.Condition | None = None  # the writer's, once started with it

    # ---- submissions ----

    def sow(self, tenant: str, data: dict[str, Any], platform: Platform) -> tuple[SoW, dict[str, Any]]:
        """The concrete SoW of a feature submission and what the log keeps of its prediction."""
        features, arrival, steps = features_body(data)
        prediction = self.engine.predict(tenant, features)
        try:
            sow = feature_sow(features, arrival, steps, prediction, self.round_seconds, platform)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise Refused(f"features built an invalid SoW: {'.'.join(str(p) for p in first['loc'])}: "
                          f"{error_rule(first)}") from None
        return sow, {"features": {**features.model_dump(mode="json"), "arrival": [list(a) for a in arrival]},
                     "prediction": prediction_json(prediction)}

    def submitted(self, tenant: str, job_id: str, body: dict[str, Any]) -> None:
        """A feature submission was accepted: learn its duration once it completes."""
        feats = {k: v for k, v in body["features"].items() if k != "arrival"}
        rule = self.engine.config.rule()
        quoted = None if rule is None else quoted_on_rounds(rule, body["prediction"], self.round_seconds)
        with self._lock:
            self._jobs[namespace.key(tenant, job_id)] = (JobFeatures.model_validate(feats), quoted)

    # ---- learning ----

    def catch_up(self, engine: Engine, key: Callable[[str], str] = str) -> int:
        """Observe the completions of feature jobs among the engine's events not read yet (hold the writer's lock,
        or call before serving); the number observed. `key` maps an event's job to its namespaced key (the
        server's engine already uses those; an in-process engine keyed by bare job ids passes the tenant's)."""
        base = engine.forgotten.events
        seen = 0
        start = max(self._seq, base)
        for event in engine.events[start - base:]:
            if event.type == "complete":
                seen += self.completed(key(event.job), int(event.data["duration"]))
        self._seq = base + len(engine.events)
        return seen

    def completed(self, job_key: str, rounds: int) -> bool:
        """The job with engine key `job_key` completed after `rounds` rounds: learn it if it was submitted by
        features (whether it was)."""
        with self._lock:
            job = self._jobs.pop(job_key, None)
        if job is None:
            return False
        features, quoted = job
        self.engine.observe(namespace.tenant_of(job_key), features, round(rounds * self.round_seconds), quoted)
        return True

    def settled(self, engine: Engine) -> bool:
        """Whether every event of `engine` has been read and no fit is due (hold the writer's lock)."""
        return self._seq >= engine.forgotten.events + len(engine.events) and not self.refit_due()

    def refit_due(self) -> bool:
        """Every `refit_every` completions, and as soon as the cold start ends."""
        return self.engine.refit_due(self.refit_every)

    def rebuild(self, store: CommandStore, engine: Engine) -> None:
        """After a restart: the logged feature submissions, the completions since, and the last logged model."""
        trained = 0
        for cmd in store.commands():
            if cmd.kind == "submit" and "features" in cmd.body:
                self.submitted(cmd.body["tenant"], cmd.body["job_id"], cmd.body)
                trained = int(cmd.body["prediction"]["trained"])
        self.catch_up(engine)
        self.engine.refit(trained)
        log.info("prediction engine rebuilt", extra={"fields": {"observed": self.engine.observed,
                                                                "trained": self.engine.model.trained,
                                                                "version": self.engine.model.version[:12]}})

    def start(self, reading: Any, changed: threading.Condition | None = None) -> None:
        """Follow completions and refit on a background thread; `reading()` enters the writer's lock and
        `changed`, a condition on that lock, is notified after every logged batch (without it: poll every
        POLL_S)."""
        self._changed = changed

        def loop() -> None:
            while not self._stop.is_set():
                try:
                    with reading() as engine:
                        if changed is not None and self.settled(engine) and not self._stop.is_set():
                            changed.wait(POLL_S)  # the writer's lock is free while this waits
                        self.catch_up(engine)
                except Unavailable:  # the server is closing (or broken): nothing more to learn here
                    return
                try:
                    if self.refit_due():
                        self.engine.refit()
                        log.info("prediction model swapped", extra={"fields": {
                            "trained": self.engine.model.trained, "version": self.engine.model.version[:12]}})
                except Exception:  # the server goes on with the model in force, and tries again later
                    log.exception("prediction engine update failed")
                    if self._stop.wait(POLL_S):
                        return
                if changed is None and self._stop.wait(POLL_S):
                    return
        self._thread = threading.Thread(target=loop, name="sowsched-predict", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._changed is not None:
            with self._changed:  # wake the trainer now rather than at its next poll
                self._changed.notify_all()
        if self._thread is not None:
            self._thread.join()


def prediction_json(prediction: Prediction) -> dict[str, Any]:
    """What the log (and the quote) keeps of a prediction (the log also its conformal alpha, when there is one)."""
    out = {"seconds": list(prediction.seconds), "probabilities": list(prediction.probs),
           "model_version": prediction.version, "trained": prediction.trained}
    return out if prediction.alpha is None else {**out, "conformal_alpha": prediction.alpha}


def quoted_on_rounds(rule: AciRule, prediction: dict[str, Any], round_seconds: float) -> float:
    """The 0.9-quantile a logged prediction quoted, in seconds on whole rounds of `round_seconds` (as the SoW
    quotes it: ceil(q / round_seconds) rounds, at least 1); inf or -inf where ACI quoted every duration or none.
    A law logged without an alpha (quoted before conformal laws were on) quotes its own quantile."""
    law = Discrete(np.asarray(prediction["seconds"], dtype=np.float64), np.asarray([prediction["probabilities"]]))
    alpha = prediction.get("conformal_alpha")
    q = float(law.quantile(rule.level)[0]) if alpha is None else rule.quoted(law, float(alpha))[0]
    if not math.isfinite(q):
        return q
    whole = max(1, int(round_seconds))
    return float(max(1, math.ceil(q / whole)) * whole)
