"""A known prior over statements of work: job j's SoW is drawn from a finite distribution F_j (Sec. 5)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from mechanism.bundle_pricing import check_duration_revealed
from mechanism.platform import Platform
from mechanism.sow import SoW
from mechanism.validation import validation_message

PROBABILITY_TOLERANCE = 1e-9


@dataclass(frozen=True)
class JobPrior:
    """F_j: job `id`, born at `birth`, has SoW `sows[k]` with probability `probability[k]` (q_SoW)."""

    id: str
    birth: int
    sows: tuple[SoW, ...]
    probability: tuple[float, ...]


@dataclass(frozen=True)
class Prior:
    """The independent F_j of every job (births fixed: the adversary's choice of submission times)."""

    jobs: tuple[JobPrior, ...]

    @property
    def support_size(self) -> int:
        """Total number of (job, SoW) pairs."""
        return sum(len(j.sows) for j in self.jobs)


def check_prior(prior: Prior, platform: Platform) -> None:
    """Raise ValueError naming the job, the field and the rule of the first thing wrong with `prior`."""
    seen: set[str] = set()
    for n, job in enumerate(prior.jobs):
        where = f"prior.jobs[{n}] (id {job.id!r})"
        if job.id in seen:
            raise ValueError(f"{where}: id is used twice")
        seen.add(job.id)
        if job.birth < 0:
            raise ValueError(f"{where}: birth={job.birth} is below the bound 0")
        if not job.sows or len(job.sows) != len(job.probability):
            raise ValueError(f"{where}: needs as many probabilities ({len(job.probability)}) as SoWs "
                             f"({len(job.sows)}), at least one")
        for k, q in enumerate(job.probability):
            if not (math.isfinite(q) and 0.0 < q <= 1.0):
                raise ValueError(f"{where}: probability[{k}]={q} is outside (0, 1]")
        total = math.fsum(job.probability)
        if abs(total - 1.0) > PROBABILITY_TOLERANCE:
            raise ValueError(f"{where}: probabilities sum to {total!r}, not 1 (tolerance {PROBABILITY_TOLERANCE})")
        for k, sow in enumerate(job.sows):
            try:
                sow.check_bounds(platform)
                check_duration_revealed(sow)
            except ValueError as exc:
                raise ValueError(f"{where}.sows[{k}]: {exc}") from None


def prior_document(prior: Prior) -> dict[str, Any]:
    """The W.json "prior" section: per job its birth and its SoWs with their probabilities."""
    return {"jobs": [{"id": j.id, "birth": j.birth,
                      "sows": [{"probability": q, "sow": sow.model_dump(mode="json")}
                               for sow, q in zip(j.sows, j.probability, strict=True)]}
                     for j in prior.jobs]}


def parse_prior(data: Any, platform: Platform) -> Prior:
    """Validate a W.json "prior" section against `platform`."""
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), list) or set(data) != {"jobs"}:
        raise ValueError("prior must be an object with one key, \"jobs\": a list")
    jobs = []
    for n, row in enumerate(data["jobs"]):
        if not isinstance(row, dict) or set(row) != {"id", "birth", "sows"} or not isinstance(row["sows"], list):
            raise ValueError(f"prior.jobs[{n}] must be an object with the keys id, birth and sows (a list)")
        if not isinstance(row["id"], str) or isinstance(row["birth"], bool) or not isinstance(row["birth"], int):
            raise ValueError(f"prior.jobs[{n}]: id must be text and birth an integer")
        sows, probs = [], []
        for k, entry in enumerate(row["sows"]):
            if not isinstance(entry, dict) or set(entry) != {"probability", "sow"} \
                    or isinstance(entry["probability"], bool) or not isinstance(entry["probability"], (int, float)):
                raise ValueError(f"prior.jobs[{n}].sows[{k}] must be an object with a number probability and a sow")
            try:
                sows.append(SoW.parse(entry["sow"], platform))
            except ValidationError as exc:
                raise ValueError(f"prior.jobs[{n}].sows[{k}].sow: {validation_message(exc)}") from None
            probs.append(float(entry["probability"]))
        jobs.append(JobPrior(id=row["id"], birth=row["birth"], sows=tuple(sows), probability=tuple(probs)))
    prior = Prior(jobs=tuple(jobs))
    check_prior(prior, platform)
    return prior
