"""AuditJob: what a misreport would have gained a job, at the menu and failure estimates it saw at its birth.

The log is replayed read-only up to the job's submission (the writer is never held), so the menu and the oracle's
estimates are exactly those the job was quoted against; `models/audit.py` then evaluates the stated family of
alternative declarations under the reference law (the quoted, declared law, or one the caller supplies):
- an explicit SoW: `sow_alternatives` (durations shifted and scaled, arrivals shifted, outcomes dropped and added);
- a feature submission: `feature_alternatives` (the requested duration scaled by 0.25-4, each tag changed to every
  value the model knows), each built from the model the job was quoted on. That model is rebuilt from the log as a
  restart rebuilds the engine (the feature jobs' completions before the submission, fitted on as many as the quote's
  model had learned) and must carry the quote's model version.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mechanism.engine import Engine, UnknownJob
from mechanism.launch_plan import FailureEstimates
from mechanism.platform import Platform
from mechanism.sow import SoW
from models.audit import Alternative, Audit, audit, sow_alternatives
from models.predict.misreport import feature_alternatives
from models.predict.online import JobFeatures
from server import namespace
from server.config import ServerConfig
from server.errors import FailedPrecondition
from server.prediction import Predictions
from server.replay import apply_command, upgraded
from server.store import CommandStore


def audit_job(config: ServerConfig, store: Path, tenant: str, job_id: str, reference: SoW | None,
              predictions: Predictions | None = None) -> Audit:
    """Audit `tenant`'s job `job_id` from the log at `store` (refuses a job the log does not hold: UnknownJob).
    `predictions` is the server's engine (its configuration and rounds), needed to audit a feature submission."""
    log = CommandStore(store, config.identity(), read_only=True)
    learner = None if predictions is None else Predictions(predictions.engine.config, predictions.round_seconds)
    try:
        engine = Engine(config.platform, oracle=config.oracle)
        tenants: dict[str, None] = {}
        for cmd in log.commands():
            body = upgraded(engine, cmd.kind, cmd.body, tenants)
            if cmd.kind == "submit" and body["tenant"] == tenant and body["job_id"] == job_id:
                declared = SoW.parse(body["sow"], config.platform)

                def estimates(concurrency: int) -> FailureEstimates:
                    raw = engine._current_oracle().estimates(concurrency)
                    return FailureEstimates.from_raw(raw, config.platform.failure_threshold)
                family: Any = sow_alternatives(declared, config.platform)
                if "features" in body:
                    family = _feature_family(body, learner, engine, config.platform)
                return audit(declared, reference or declared, family, engine.now, engine.current_menu(), estimates)
            apply_command(engine, cmd.kind, body)
            if cmd.kind == "submit":
                tenants.setdefault(body["tenant"])
                if learner is not None and "features" in body:
                    learner.submitted(body["tenant"], body["job_id"], body)
    finally:
        log.close()
    raise UnknownJob(f"job {namespace.key(tenant, job_id)!r} is not in the log")


def _feature_family(body: dict[str, Any], learner: Predictions | None, engine: Engine,
                    platform: Platform) -> list[Alternative]:
    """The feature family of a logged feature submission, on the model rebuilt as it was at the quote."""
    if learner is None:
        raise FailedPrecondition("this server has no prediction engine: a feature submission cannot be audited")
    learner.catch_up(engine)
    model = learner.engine.refit(int(body["prediction"]["trained"]))
    logged = str(body["prediction"]["model_version"])
    if model.version != logged:
        raise FailedPrecondition(f"the prediction model of job {body['job_id']!r} (version {logged[:12]}) cannot be "
                                 f"rebuilt from the log under this configuration (got {model.version[:12]})")
    fields = {k: v for k, v in body["features"].items() if k != "arrival"}
    arrival = [(int(a), float(p)) for a, p in body["features"]["arrival"]]
    return list(feature_alternatives(body["tenant"], JobFeatures.model_validate(fields), arrival,
                                     body["sow"]["value_steps"], model, learner.round_seconds, platform))
