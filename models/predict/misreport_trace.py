"""What a tenant could gain by misreporting features on a real trace, against the durations that really happened.

The trace's first N jobs are feature submissions (tenant: the SWF user; `executable`, `queue` and `tags` (the
group) from the record; the request and the concurrency as `predict sows` maps them; the value steps from the
requested time, `job_terms`). The service's engine (`DurationEngine`, one configuration) learns causally from
the durations the trace's own schedule completed before each submission and is refitted as the server refits it
(every `refit_every` completions, and when the cold start ends). Each job's declared SoW is the engine's law
(`feature_sow`, arrival at birth). The jobs then run through the mechanism (in process, realized durations from
the trace), and just before every audited job is submitted the audit evaluates, at the menu and failure
estimates it is quoted against, its feature family (`feature_alternatives`) under the reference law "the
duration that really happened" (a point law at the realized rounds). Besides the family, the declaration of the
realized duration itself (`exact`) is evaluated: what knowing the future would gain.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from dataclasses import dataclass
from typing import Any

from mechanism.engine import Engine, Quote, RoundReport
from mechanism.launch_plan import FailureEstimates
from mechanism.sow import Signal, SoW
from models.audit import Alternative, audit, covers
from models.predict.evaluate import completions
from models.predict.jobs import JobTable
from models.predict.misreport import feature_alternatives
from models.predict.online import REFIT_EVERY, DurationEngine, EngineConfig, JobFeatures, Model, feature_sow
from models.predict.sows import ExportConfig, job_terms, sow_document, trace_bounds, trace_platform
from models.predict.trace_workload import trace_features
from models.simulation import drive
from models.workloads import parse_workload


@dataclass(frozen=True)
class FeatureJob:
    """A trace job as a feature submission, with the model in force at its submission."""

    tenant: str
    features: JobFeatures
    steps: list[list[float]]
    model: Model


def feature_jobs(table: JobTable, machine_nodes: int, config: ExportConfig, engine_config: EngineConfig,
                 refit_every: int = REFIT_EVERY) -> tuple[dict[str, Any], list[FeatureJob]]:
    """The W.json document of the trace's jobs declared by the engine's laws, and each job's feature submission."""
    d_max, s_max = trace_bounds(table, config)
    engine = DurationEngine(engine_config)
    order = completions(table)
    end = table.submit + table.wait + table.runtime
    done = 0
    laws: dict[int, list[tuple[int, float]]] = {}
    feature_jobs: list[FeatureJob] = []
    subs = []
    for i in range(len(table)):
        terms = job_terms(table, i, machine_nodes, config, d_max, s_max)
        subs.append((terms, *trace_features(table, i, terms.concurrency)))
    platform = parse_workload({"platform": trace_platform(config, d_max, s_max, [
        {"value_steps": terms.steps} for terms, _, _ in subs]), "jobs": []}).platform
    for i, (terms, tenant, f) in enumerate(subs):
        while done < len(table) and int(end[order[done]]) < int(table.submit[i]):
            j = order[done]
            engine.observe(subs[j][1], subs[j][2], int(table.runtime[j]))
            done += 1
        if engine.refit_due(refit_every):
            engine.refit()
        model = engine.model
        sow = feature_sow(f, [(0, 1.0)], terms.steps, model.predict(tenant, f), config.round_seconds, platform)
        feature_jobs.append(FeatureJob(tenant, f, terms.steps, model))
        laws[i] = [(o.duration, o.probability) for o in sow.outcomes]  # every arrival offset is 0: ready at birth
    return sow_document(table, machine_nodes, config, laws, lambda i: None), feature_jobs


class _AuditingEngine:
    """The in-process engine as a simulation port; `before_submit` runs at the menu each SoW is quoted against."""

    def __init__(self, engine: Engine, before_submit: Any) -> None:
        self.engine = engine
        self.before_submit = before_submit

    def submit(self, job_id: str, sow: SoW) -> Quote:
        self.before_submit(self.engine, job_id, sow)
        return self.engine.submit(job_id, sow)

    def report_arrival(self, job_id: str, signal: Signal) -> Any:
        return self.engine.report_arrival(job_id, signal)

    def report_completion(self, job_id: str) -> Any:
        return self.engine.report_completion(job_id)

    def advance(self) -> RoundReport:
        return self.engine.advance()


def _kind(misreport: dict[str, Any], f: JobFeatures) -> str:
    g = misreport["features"]
    if g["requested_seconds"] != f.requested_seconds:
        return "shorter request" if g["requested_seconds"] < f.requested_seconds else "longer request"
    return next(k for k in ("executable", "queue", "tags") if g[k] != f.model_dump(mode="json")[k])


def measure(table: JobTable, machine_nodes: int, config: ExportConfig, engine_config: EngineConfig,
            every: int = 1) -> dict[str, Any]:
    """Audit every `every`-th job of the trace (module docstring); the summary as one JSON-ready document."""
    if every < 1:
        raise ValueError(f"every={every} must be >= 1")
    document, jobs = feature_jobs(table, machine_nodes, config, engine_config)
    workload = parse_workload(document, name="trace")
    platform = workload.platform
    realized = {j.id: j.duration for j in workload.jobs}
    rows: list[dict[str, Any]] = []

    def before_submit(engine: Engine, job_id: str, sow: SoW) -> None:
        i = int(job_id.split("-")[1])
        if i % every:
            return
        job = jobs[i]
        reference = SoW.parse({**sow.model_dump(mode="json"), "outcomes": [[0, realized[job_id], 1.0]]}, platform)

        def estimates(concurrency: int) -> FailureEstimates:
            return FailureEstimates.from_raw(engine._current_oracle().estimates(concurrency),
                                             platform.failure_threshold)
        family = list(feature_alternatives(job.tenant, job.features, [(0, 1.0)], job.steps, job.model,
                                           config.round_seconds, platform))
        menu = engine.current_menu()
        result = audit(sow, reference, family, engine.now, menu, estimates)
        exact = audit(sow, reference, [Alternative({"exact": True}, reference)], engine.now, menu, estimates)
        best = result.best_misreport
        rows.append({"gain": result.best_gain, "honest": result.declared_utility, "tried": result.tried,
                     "exact_gain": exact.best_gain,
                     "kind": None if best is None else _kind(best, job.features),
                     "truncates": None if best is None else not covers(SoW.parse(best["sow"], platform), reference),
                     "trained": job.model.trained})

    sim = drive(workload, _AuditingEngine(Engine(platform), before_submit))
    gaining = [r for r in rows if r["gain"] > 1e-9]
    honest = math.fsum(r["honest"] for r in rows)
    total = math.fsum(r["gain"] for r in rows)
    kinds = Counter(r["kind"] for r in gaining)
    by_kind = {k: {"jobs": n, "gain": math.fsum(r["gain"] for r in gaining if r["kind"] == k)}
               for k, n in sorted(kinds.items())}
    truncating = [r for r in gaining if r["truncates"]]
    learned = [r for r in rows if r["trained"] >= engine_config.cold_start]
    return {
        "jobs": len(table), "audited": len(rows), "round_seconds": config.round_seconds,
        "tried_mean": statistics.fmean(r["tried"] for r in rows) if rows else 0.0,
        "honest_utility": honest, "gain_total": total,
        "gain_share_of_honest": total / honest if honest > 0 else None,
        "jobs_gaining": len(gaining), "share_gaining": len(gaining) / len(rows) if rows else 0.0,
        "gain_max": max((r["gain"] for r in rows), default=0.0),
        "truncating": {"jobs": len(truncating), "gain": math.fsum(r["gain"] for r in truncating)},
        "covering": {"jobs": len(gaining) - len(truncating),
                     "gain": total - math.fsum(r["gain"] for r in truncating)},
        "by_kind": by_kind,
        "after_cold_start": {"audited": len(learned), "jobs_gaining": sum(r["gain"] > 1e-9 for r in learned),
                             "gain_total": math.fsum(r["gain"] for r in learned)},
        "exact_gain_total": math.fsum(r["exact_gain"] for r in rows),
        "welfare": sim.summary().get("welfare"),
    }
