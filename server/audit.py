"""AuditJob: what a misreport would have gained a job, at the menu and failure estimates it saw at its birth.

The log is replayed read-only up to the job's submission (the writer is never held), so the menu and the oracle's
estimates are exactly those the job was quoted against; `models/audit.py` then tries the stated family of
alternative declarations (`sow_alternatives`: durations shifted and scaled, arrivals shifted, outcomes dropped
and added; the same family for feature submissions, whose concrete SoW is the declaration) under the reference
law: the quoted (declared) law, or one the caller supplies.
"""

from __future__ import annotations

from pathlib import Path

from mechanism.engine import Engine, UnknownJob
from mechanism.launch_plan import FailureEstimates
from mechanism.sow import SoW
from models.audit import Audit, audit, sow_alternatives
from server import namespace
from server.config import ServerConfig
from server.replay import apply_command, upgraded
from server.store import CommandStore


def audit_job(config: ServerConfig, store: Path, tenant: str, job_id: str, reference: SoW | None) -> Audit:
    """Audit `tenant`'s job `job_id` from the log at `store` (refuses a job the log does not hold: UnknownJob)."""
    log = CommandStore(store, config.identity(), read_only=True)
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
                return audit(declared, reference or declared, sow_alternatives(declared, config.platform),
                             engine.now, engine.current_menu(), estimates)
            apply_command(engine, cmd.kind, body)
            if cmd.kind == "submit":
                tenants.setdefault(body["tenant"])
    finally:
        log.close()
    raise UnknownJob(f"job {namespace.key(tenant, job_id)!r} is not in the log")
