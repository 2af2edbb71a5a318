"""What replaying the command log does: each command's logged form (codec) and its application to the engine.

Together with the engine and what it imports, this module decides the state a replay rebuilds; the replay
identity (server/snapshot.py `code_identity`) hashes exactly that code.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from mechanism.engine import BundlesView, CapacityView, Engine, JobView, Quote, RoundReport
from mechanism.executor import ExecutorInfo
from mechanism.platform import Bundle
from mechanism.sow import SoW
from server import namespace
from server.store import StoreError

Result = Quote | JobView | RoundReport | CapacityView | BundlesView
REPORTS = ("arrive", "complete")  # reports on a job: before per-tenant ids they named no tenant
JOB_COMMANDS = ("submit", *REPORTS, "launch", "release")  # commands on one job, named by (tenant, job_id)
EXECUTOR_REPORTS = ("launch", "complete")  # repeated with the same executor info: answered, no second effect


def body_json(body: dict[str, Any]) -> str:
    """The body as logged: JSON with sorted keys."""
    return json.dumps(body, sort_keys=True)


def body_hash(kind: str, body: dict[str, Any], logged: str | None = None) -> str:
    """SHA-256 of json.dumps([kind, body], sort_keys=True), reusing the body's logged JSON when given."""
    text = f"[{json.dumps(kind)}, {logged if logged is not None else body_json(body)}]"
    return hashlib.sha256(text.encode()).hexdigest()


def apply_command(engine: Engine, kind: str, body: dict[str, Any], sow: SoW | None = None) -> Result:
    """Apply one logged command; raises EngineError (or pydantic ValidationError) and then changes nothing.

    `sow`, when given, is body["sow"] already validated (the service parsed it to answer bad input early).
    """
    if kind == "submit":
        job = namespace.key(body["tenant"], body["job_id"])
        sow = sow if sow is not None else SoW.parse(body["sow"], engine.platform)
        if not sow.after:
            return engine.submit(job, sow)
        return engine.submit(job, sow, tuple(namespace.key(body["tenant"], parent) for parent in sow.after))
    if kind == "arrive":
        return engine.report_arrival(namespace.key(body["tenant"], body["job_id"]), body["signal"])
    if kind == "complete":
        return engine.report_completion(namespace.key(body["tenant"], body["job_id"]), executor_of(body))
    if kind == "release":  # a job's parents completed: the server reports its arrival (Writer._release_ready)
        return engine.release(namespace.key(body["tenant"], body["job_id"]))
    if kind == "launch":
        return engine.report_launch(namespace.key(body["tenant"], body["job_id"]),
                                    ExecutorInfo.from_dict(body["executor"]))
    if kind == "advance":
        return engine.advance()
    if kind == "capacity":  # the capacity feed (ReportCapacity)
        return engine.report_capacity(body["round"], body["capacity"])
    if kind == "bundles":  # a rolling horizon's window (the writer logs what it solved; replay never re-solves)
        return engine.post_bundles(body["round"], tuple(Bundle.model_validate(b) for b in body["bundles"]))
    raise StoreError(f"command kind={kind!r} is unknown")


def executor_of(body: dict[str, Any]) -> ExecutorInfo | None:
    """The executor info a report's body carries, if any."""
    return ExecutorInfo.from_dict(body["executor"]) if "executor" in body else None


def repeated_report(engine: Engine, kind: str, body: dict[str, Any]) -> JobView | None:
    """The job's view if this is an executor's launch or completion report that was accepted before with the same
    executor info, or an arrival accepted before with the same signal (a retry after a lost reply or a restart,
    under any request id): answered, not applied again."""
    if kind == "arrive":
        key = namespace.key(body["tenant"], body["job_id"])
        return engine.view(key) if engine.repeats_arrival(key, body["signal"]) else None
    executor = executor_of(body) if kind in EXECUTOR_REPORTS else None
    if executor is None:
        return None
    key = namespace.key(body["tenant"], body["job_id"])
    return engine.view(key) if engine.repeats_report(key, "launch" if kind == "launch" else "complete",
                                                     executor) else None


def upgraded(engine: Engine, kind: str, body: dict[str, Any], tenants: Iterable[str]) -> dict[str, Any]:
    """A logged report from before per-tenant job ids names no tenant; its job id was unique on the platform
    then, so the one tenant holding a job of that id is the one it meant (its logged reply does not change).

    A report was accepted only on an active job, which the engine holds: the tenant is among `tenants`, those of
    the jobs held and submitted so far, whether or not the configuration still names it.
    """
    if kind not in REPORTS or "tenant" in body or not isinstance(body.get("job_id"), str):
        return body
    for tenant in tenants:
        if namespace.key(tenant, body["job_id"]) in engine.jobs:
            return {**body, "tenant": tenant}
    return body
