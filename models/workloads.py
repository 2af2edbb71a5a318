"""Workloads for simulations: the toy example of seed 002, recurring ML pipelines, overload, and W.json files."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from mechanism.capacity import MAX_CAPACITY
from mechanism.engine import EngineError, check_job_id
from mechanism.platform import Platform
from mechanism.sow import SoW
from mechanism.validation import validation_message
from models.prior import JobPrior, Prior, parse_prior, prior_document
from models.simulation import Workload, WorkloadJob

WORKLOADS = ("toy", "pipelines", "overload", "stochastic")


MAX_LOAD = 100.0  # a load scales a named workload's job rate; beyond this a typo builds millions of jobs


def make_workload(name: str, seed: int = 0, load: float = 1.0, **params: Any) -> Workload:
    """A named synthetic workload; `load` scales how many jobs it brings per round."""
    if not 0 < load <= MAX_LOAD:  # nan too
        raise ValueError(f"load={load} is outside (0, {MAX_LOAD:g}]: it scales the job rate (overload at load "
                         f"{MAX_LOAD:g} already brings about 400 jobs a round)")
    makers: dict[str, Callable[..., Workload]] = {
        "toy": toy_workload, "pipelines": pipelines_workload, "overload": overload_workload,
        "stochastic": stochastic_workload}
    if name not in makers:
        raise ValueError(f"workload={name!r} is not one of {', '.join(WORKLOADS)}")
    return makers[name](seed=seed, load=load, **params)


def _realize(rng: np.random.Generator, sow: SoW) -> tuple[int, int]:
    """Draw the true (arrival_offset, duration) from the SoW itself: the agents report truthfully."""
    p = np.array([o.probability for o in sow.outcomes])
    o = sow.outcomes[int(rng.choice(len(p), p=p / p.sum()))]
    return o.arrival_offset, o.duration


# ---- toy: seed 002, Sec. 1.1 ----

def toy_sow(X: int, platform: Platform) -> SoW:
    """Arrive at k w.p. 2^(k-X) for k < X, else at X; one node for one round; worth 2^(X-k) completed at round k.

    Completing "in round k" is f = k + 1 here (docs/model.md section 3), so V(f) = 2^(X - (f - 1)).
    """
    outcomes = [[k, 1, 2.0 ** (k - X)] for k in range(X)] + [[X, 1, 2.0 ** (-X)]]
    steps = [[k + 1, 2.0 ** (X - k)] for k in range(X + 1)]
    return SoW.parse({"concurrency": 1, "value_steps": steps, "outcomes": outcomes}, platform)


def toy_platform(X: int, seed: int, samples: int = 2000) -> Platform:
    return Platform(C=X + 2, C_m=1, D_m=1, S_m=X + 1, H=2.0 ** X, epsilon=0.1, eps0=0.05, delta0=0.05,
                    seed=seed, samples=samples)


def toy_workload(seed: int = 0, load: float = 1.0, X: int = 6, jobs: int = 40) -> Workload:
    """One toy job born per round (more with load > 1); capacity X + 2 so immediate starts always fit."""
    platform = toy_platform(X, seed)
    rng = np.random.default_rng(seed)
    sow = toy_sow(X, platform)
    out = []
    n = max(1, round(jobs * load))
    for i in range(n):
        a, d = _realize(rng, sow)
        out.append(WorkloadJob(id=f"toy-{i}", birth=int(i / load), sow=sow, arrival_offset=a, duration=d))
    return Workload(name="toy", platform=platform, jobs=tuple(out))


# ---- pipelines: recurring ML training ----

def pipelines_platform(seed: int) -> Platform:
    return Platform(C=32, C_m=8, D_m=24, S_m=48, H=100.0, epsilon=0.1, eps0=0.05, delta0=0.05, seed=seed)


def lognormal_durations(median: float, sigma: float, max_d: int) -> tuple[np.ndarray, np.ndarray]:
    """Log-normal durations discretised to whole rounds in [1, max_d]; bins below 0.5 % are merged away."""
    edges = np.arange(0.5, max_d + 1.0)
    edges[0], edges[-1] = 0.0, np.inf
    z = (np.log(np.maximum(edges, 1e-12)) - math.log(median)) / sigma
    cdf = np.array([0.5 * math.erfc(-x / math.sqrt(2.0)) for x in z])
    cdf[0], cdf[-1] = 0.0, 1.0
    p = np.diff(cdf)
    keep = p >= 0.005
    d = np.arange(1, max_d + 1)[keep]
    return d, p[keep] / p[keep].sum()


def pipeline_sow(platform: Platform, lead: int, jitter: int, median: float, sigma: float, concurrency: int,
                 value: float, signal_mode: str) -> SoW:
    """Nominal arrival `lead` rounds after submission +- jitter; full value until a deadline, half until S_m."""
    offsets = np.arange(lead - jitter, lead + jitter + 1)
    w = np.exp(-0.5 * ((offsets - lead) / max(jitter, 1) * 1.5) ** 2)
    w /= w.sum()
    durations, pd = lognormal_durations(median, sigma, platform.D_m)
    pairs = [(int(a), int(d)) for a in offsets for d in durations]
    prob = np.outer(w, pd).ravel()
    prob = prob / prob.sum()
    prob[-1] = 1.0 - math.fsum(prob[:-1].tolist())
    outcomes = [[a, d, float(x)] for (a, d), x in zip(pairs, prob, strict=True)]
    deadline = min(platform.S_m - 1, lead + jitter + round(2 * median) + 2)
    steps = [[deadline, value], [platform.S_m, max(1.0, value / 2)]]
    return SoW.parse({"concurrency": concurrency, "value_steps": steps, "outcomes": outcomes,
                      "signal_mode": signal_mode}, platform)


def pipelines_workload(seed: int = 0, load: float = 1.0, rounds: int = 96) -> Workload:
    """Recurring pipelines: each submits its next run every `period` rounds, a few rounds ahead."""
    platform = pipelines_platform(seed)
    rng = np.random.default_rng(seed)
    n_pipes = max(1, round(8 * load))
    jobs: list[WorkloadJob] = []
    for p in range(n_pipes):
        period = int(rng.integers(8, 17))
        phase = int(rng.integers(0, period))
        conc = int(rng.choice([1, 2, 4, 8], p=[0.3, 0.3, 0.25, 0.15]))
        median = float(rng.uniform(3.0, 9.0))
        value = float(rng.uniform(20.0, 90.0))
        mode = "duration" if p % 2 == 0 else "none"
        sow = pipeline_sow(platform, lead=3, jitter=2, median=median, sigma=0.4, concurrency=conc,
                           value=value, signal_mode=mode)
        for run, birth in enumerate(range(phase, rounds, period)):
            a, d = _realize(rng, sow)
            jobs.append(WorkloadJob(id=f"pipe{p}-run{run}", birth=birth, sow=sow, arrival_offset=a, duration=d))
    jobs.sort(key=lambda j: (j.birth, j.id))
    return Workload(name="pipelines", platform=platform, jobs=tuple(jobs))


# ---- overload: demand well above capacity ----

def overload_workload(seed: int = 0, load: float = 1.0, rounds: int = 40) -> Workload:
    """Short, valuable jobs of uncertain arrival on 16 nodes, about 2.8 times what fits (44.8 node-rounds a round).

    Value density is high, so prices let expected usage climb towards C'; the realized arrivals bunch up
    where the expectation is spread, the realized load overflows C, and LIFO evicts.
    """
    platform = Platform(C=16, C_m=8, D_m=6, S_m=16, H=100.0, epsilon=0.1, eps0=0.05, delta0=0.05, seed=seed)
    rng = np.random.default_rng(seed)
    jobs: list[WorkloadJob] = []
    i = 0
    for birth in range(rounds):
        for _ in range(int(rng.poisson(4.0 * load))):
            conc = int(rng.choice([2, 4, 8]))
            d_short, d_long = int(rng.integers(1, 3)), int(rng.integers(3, 7))
            p_long = float(rng.uniform(0.1, 0.5))
            value = float(rng.uniform(30.0, 100.0))
            outcomes = [[a, d, p / 4.0] for a in range(4) for d, p in ((d_short, 1 - p_long), (d_long, p_long))]
            sow = SoW.parse({"concurrency": conc, "value_steps": [[8, value], [16, max(1.0, value / 4)]],
                             "outcomes": outcomes}, platform)
            a, d = _realize(rng, sow)
            jobs.append(WorkloadJob(id=f"ov-{i}", birth=birth, sow=sow, arrival_offset=a, duration=d))
            i += 1
    return Workload(name="overload", platform=platform, jobs=tuple(jobs))


# ---- stochastic: SoWs drawn from a known prior (seed 002 Sec. 5, Thm 5.2) ----

PRIOR_SEED = 20_002  # the prior is public and fixed; a run's seed draws the SoWs and outcomes from it


def stochastic_platform(seed: int) -> Platform:
    """Wide enough for Thm 5.2 (C = 24 > C_m ln D_m = 2.8); 1000 oracle samples keep a sweep quick."""
    return Platform(C=24, C_m=2, D_m=4, S_m=10, H=100.0, epsilon=0.1, eps0=0.05, delta0=0.05, seed=seed,
                    samples=1000)


def stochastic_prior(platform: Platform, load: float = 1.0, rounds: int = 20) -> Prior:
    """About 4 * load jobs born per round; each F_j has 2 or 3 SoWs (durations revealed at arrival)."""
    rng = np.random.default_rng(PRIOR_SEED)
    per_round = 4.0 * load
    jobs: list[JobPrior] = []
    for birth in range(rounds):
        for n in range(int(rng.poisson(per_round))):
            n_sows = int(rng.integers(2, 4))
            q = rng.dirichlet(np.full(n_sows, 2.0))
            q[-1] = 1.0 - math.fsum(q[:-1].tolist())
            sows = tuple(_prior_sow(rng, platform) for _ in range(n_sows))
            jobs.append(JobPrior(id=f"st-{birth}-{n}", birth=birth, sows=sows,
                                 probability=tuple(float(x) for x in q)))
    return Prior(jobs=tuple(jobs))


def _prior_sow(rng: np.random.Generator, platform: Platform) -> SoW:
    """Arrive `lead` or `lead + 1` rounds after birth, run one of two durations; full value until a deadline."""
    lead = int(rng.integers(0, 3))
    d_short = int(rng.integers(1, platform.D_m))
    d_long = int(rng.integers(d_short + 1, platform.D_m + 1))
    p_late, p_long = float(rng.uniform(0.2, 0.5)), float(rng.uniform(0.1, 0.5))
    outcomes = [[a, d, pa * pd] for a, pa in ((lead, 1 - p_late), (lead + 1, p_late))
                for d, pd in ((d_short, 1 - p_long), (d_long, p_long))]
    outcomes[-1][2] = 1.0 - math.fsum(o[2] for o in outcomes[:-1])
    value = float(rng.uniform(5.0, 100.0))
    deadline = min(platform.S_m - 1, lead + 1 + d_long + int(rng.integers(0, 3)))
    steps = [[deadline, value], [platform.S_m, max(1.0, value / 4.0)]]
    return SoW.parse({"concurrency": int(rng.choice([1, 2])), "value_steps": steps, "outcomes": outcomes,
                      "signal_mode": "duration"}, platform)


def stochastic_workload(seed: int = 0, load: float = 1.0, rounds: int = 20) -> Workload:
    """Draw every job's SoW from the fixed prior of this load, then its outcome (both from `seed`)."""
    platform = stochastic_platform(seed)
    return draw(stochastic_prior(platform, load, rounds), platform, np.random.default_rng(seed))


def draw(prior: Prior, platform: Platform, rng: np.random.Generator, name: str = "stochastic") -> Workload:
    """Draw each job's SoW from F_j, then its (arrival, duration) from that SoW: a workload of the prior."""
    jobs = []
    for job in prior.jobs:
        q = np.asarray(job.probability, dtype=np.float64)
        sow = job.sows[int(rng.choice(q.size, p=q / q.sum()))]
        p = np.array([o.probability for o in sow.outcomes])
        o = sow.outcomes[int(rng.choice(p.size, p=p / p.sum()))]
        jobs.append(WorkloadJob(id=job.id, birth=job.birth, sow=sow, arrival_offset=o.arrival_offset,
                                duration=o.duration))
    jobs.sort(key=lambda j: (j.birth, j.id))
    return Workload(name=name, platform=platform, jobs=tuple(jobs), prior=prior)



# ---- W.json ----

MAX_ROUND = 1_000_000  # births and realized arrival offsets: a simulation plays every round up to the last one


class _FileJob(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=128)
    birth: int = Field(ge=0, le=MAX_ROUND)
    concurrency: int
    value_steps: list[tuple[int, float]]
    outcomes: list[list[Any]]
    signal_mode: str = "explicit"
    realized: tuple[int, int]

    @field_validator("realized")
    @classmethod
    def _realized_ok(cls, v: tuple[int, int], info: ValidationInfo) -> tuple[int, int]:
        if v[0] < 0 or v[1] < 1:
            raise ValueError(f"realized={list(v)} needs arrival_offset >= 0 and duration >= 1")
        if max(v) > MAX_ROUND:
            raise ValueError(f"realized={list(v)} exceeds the bound {MAX_ROUND} (rounds) for the arrival_offset and "
                             "the duration")
        return v


class _WorkloadFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    platform: Platform
    jobs: list[_FileJob]
    prior: dict[str, Any] | None = None  # the known F_j the jobs' SoWs were drawn from (models/prior.py)
    capacity: list[int] | None = Field(default=None, max_length=MAX_ROUND,
                                       description="realized capacity of rounds 0, 1, ... (the feed)")

    @field_validator("capacity")
    @classmethod
    def _capacity_ok(cls, v: list[int] | None) -> list[int] | None:
        if v is not None:
            bad = next((i for i, c in enumerate(v) if not 0 <= c <= MAX_CAPACITY), None)
            if bad is not None:
                raise ValueError(f"capacity[{bad}]={v[bad]} is outside [0, {MAX_CAPACITY}]")
        return v


def parse_workload(data: Any, name: str = "file", seed: int | None = None) -> Workload:
    """Validate a W.json document (docs/workloads-and-sows.md); `seed` overrides the platform's seed."""
    try:
        doc = _WorkloadFile.model_validate(data)
    except ValidationError as exc:
        raise ValueError(validation_message(exc)) from None
    platform = doc.platform if seed is None else doc.platform.model_copy(update={"seed": seed})
    ids: set[str] = set()
    jobs = []
    for i, j in enumerate(doc.jobs):
        if j.id in ids:
            raise ValueError(f"jobs[{i}].id={j.id!r} is used twice")
        try:
            check_job_id(j.id)  # the engine's rule (printable characters), checked before any job runs
        except EngineError as exc:
            raise ValueError(f"jobs[{i}].id: {exc}") from None
        ids.add(j.id)
        try:
            sow = SoW.parse({"concurrency": j.concurrency, "value_steps": j.value_steps, "outcomes": j.outcomes,
                             "signal_mode": j.signal_mode}, platform)
        except ValidationError as exc:
            raise ValueError(f"jobs[{i}] (id {j.id!r}): {validation_message(exc)}") from None
        jobs.append(WorkloadJob(id=j.id, birth=j.birth, sow=sow, arrival_offset=j.realized[0],
                                duration=j.realized[1]))
    prior = None if doc.prior is None else parse_prior(doc.prior, platform)
    if prior is not None:
        _check_drawn_from(prior, jobs)
    capacity = None if doc.capacity is None else tuple(doc.capacity)
    return Workload(name=name, platform=platform, jobs=tuple(jobs), prior=prior, capacity=capacity)


def _check_drawn_from(prior: Prior, jobs: list[WorkloadJob]) -> None:
    """Every job of a file with a prior is one of the prior's jobs, born then, with a SoW of its support."""
    by_id = {j.id: j for j in prior.jobs}
    for i, job in enumerate(jobs):
        f = by_id.get(job.id)
        if f is None:
            raise ValueError(f"jobs[{i}] (id {job.id!r}) has no entry in prior.jobs")
        if f.birth != job.birth or job.sow not in f.sows:
            raise ValueError(f"jobs[{i}] (id {job.id!r}): birth {job.birth} and SoW must be those of one of its "
                             f"prior's SoWs (birth {f.birth})")


def workload_document(workload: Workload) -> dict[str, Any]:
    """The W.json document of a workload, realized outcomes included: `parse_workload` of it gives it back."""
    return {
        "platform": workload.platform.model_dump(mode="json", exclude_none=True),
        "jobs": [{"id": j.id, "birth": j.birth, "concurrency": j.sow.concurrency,
                  "value_steps": [[k, v] for k, v in j.sow.value_steps],
                  "outcomes": [[o.arrival_offset, o.duration, o.probability, o.signal] for o in j.sow.outcomes],
                  "signal_mode": j.sow.signal_mode, "realized": [j.arrival_offset, j.duration]}
                 for j in workload.jobs],
        **({} if workload.prior is None else {"prior": prior_document(workload.prior)}),
        **({} if workload.capacity is None else {"capacity": list(workload.capacity)}),
    }


def read_workload_document(path: str | Path) -> Any:
    """The JSON document of a W.json file, not yet validated (`parse_workload` does that); bad JSON names the
    line and column."""
    p = Path(path)
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{p}: not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from exc
    except RecursionError:  # json.loads recurses once per nesting level
        raise ValueError(f"{p}: not valid JSON: nested too deeply for the parser") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{p}: not UTF-8 text at byte {exc.start}: {exc.reason}") from None


def parse_workload_file(path: str | Path, document: Any, name: str, seed: int | None = None) -> Workload:
    """`parse_workload` of a file's document; an error names the file and the line of the first job it is about."""
    try:
        return parse_workload(document, name=name, seed=seed)
    except ValueError as exc:
        message = str(exc)
        ref = _JOB_REF.search(message)
        if ref is not None:
            lines = job_lines(Path(path).read_text(encoding="utf-8"))
            if int(ref.group(1)) < len(lines):
                message = f"line {lines[int(ref.group(1))]}: {message}"
        raise ValueError(f"{path}: {message}") from None


def load_workload_file(path: str | Path, seed: int | None = None) -> Workload:
    p = Path(path)
    return parse_workload_file(p, read_workload_document(p), name=p.stem, seed=seed)


_JOB_REF = re.compile(r"jobs\[(\d+)\]")
_SPACE = re.compile(r"\s*")


def job_lines(text: str) -> list[int]:
    """The line (1-based) on which each element of the top-level "jobs" array starts, in a valid JSON document;
    empty if it has none (the last "jobs" key counts, as in json.loads)."""
    decoder = json.JSONDecoder()
    lines: list[int] = []

    def skip(i: int) -> int:
        return _SPACE.match(text, i).end()  # type: ignore[union-attr]  # \s* always matches

    i = skip(0)
    if text[i:i + 1] != "{":
        return lines
    i = skip(i + 1)
    while text[i:i + 1] == '"':
        key, i = decoder.raw_decode(text, i)
        i = skip(skip(i) + 1)  # past the colon
        if key == "jobs" and text[i:i + 1] == "[":
            lines, line, counted = [], 1, 0
            i = skip(i + 1)
            while text[i:i + 1] not in ("]", ""):
                line, counted = line + text.count("\n", counted, i), i
                lines.append(line)
                i = skip(decoder.raw_decode(text, i)[1])
                i = skip(i + 1) if text[i:i + 1] == "," else i
            i += 1
        else:
            i = decoder.raw_decode(text, i)[1]
        i = skip(i)
        i = skip(i + 1) if text[i:i + 1] == "," else i
    return lines
