"""A rolling horizon for the bundle prices: each window's bundles are re-solved on the last window's submissions, so
a server keeps admitting past its prior's rounds, and a replay reads the logged bundles instead of re-solving."""

from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np
import pytest

from mechanism.engine import Engine, EngineError, Quote
from mechanism.platform import Bundle, Platform
from models.simulation import Workload, drive
from models.stochastic import rolling
from models.stochastic.pricing import stochastic_pricing
from models.stochastic.rolling import RollingEngine, window_prior
from models.workloads import draw, stochastic_platform, stochastic_prior
from server import namespace
from server.config import ServerConfig
from server.errors import PermissionDenied, Refused
from server.scheduler import DurableScheduler
from server.service import encode_reply
from server.store import CommandStore

PRIOR_ROUNDS = 20


def priced(window: int) -> Platform:
    platform = stochastic_platform(0).model_copy(update={"samples": 200})
    return stochastic_pricing(stochastic_prior(platform, 1.0, PRIOR_ROUNDS), platform, window).platform


def three_priors(platform: Platform, seed: int = 3) -> Workload:
    """Jobs of 3 x the prior's rounds, drawn from the same family (the first 20 rounds are the prior's own)."""
    return draw(stochastic_prior(platform, 1.0, 3 * PRIOR_ROUNDS), platform, np.random.default_rng(seed))


def admitted_from(result_quotes: dict[str, Quote], workload: Workload, first: int) -> int:
    """Jobs born at or after round `first` whose plan runs some outcome."""
    return sum(1 for j in workload.jobs if j.birth >= first and result_quotes[j.id].plan.utility > 0)


def test_static_bundles_admit_nothing_past_the_prior_and_a_rolling_horizon_keeps_admitting() -> None:
    static = priced(0)
    workload = three_priors(static)
    late = 2 * PRIOR_ROUNDS
    ran = drive(workload, Engine(static))
    assert admitted_from(ran.quotes, workload, late) == 0  # the defect: every run is priced 2 H c
    rolling_platform = priced(PRIOR_ROUNDS)
    ran = drive(workload, RollingEngine(rolling_platform))
    born_late = sum(1 for j in workload.jobs if j.birth >= late)
    assert born_late > 40 and admitted_from(ran.quotes, workload, late) > born_late // 4
    assert sum(1 for e in ran.events if e.type == "complete") > 0


def test_the_window_prior_repeats_the_last_window_with_submissions() -> None:
    sows = [s for j in stochastic_prior(stochastic_platform(0), 1.0, 2).jobs for s in j.sows[:1]]
    observed = [(3, sows[0]), (7, sows[1]), (12, sows[2])]
    prior = window_prior(observed, 20, 10)  # [10, 20) holds round 12: it recurs at 22
    assert [(j.birth, j.sows[0], j.probability) for j in prior.jobs] == [(22, sows[2], (1.0,))]
    prior = window_prior(observed[:2], 20, 10)  # nothing in [10, 20): [0, 10) recurs 20 rounds later
    assert [j.birth for j in prior.jobs] == [23, 27]
    assert window_prior([], 20, 10).jobs == ()
    with pytest.raises(ValueError, match="bundle_window=0 is below the bound 1"):
        window_prior(observed, 20, 0)


def test_posted_bundles_are_refused_before_the_current_round_or_twice() -> None:
    engine = Engine(priced(PRIOR_ROUNDS))
    engine.advance()
    bundle = Bundle(price=1.0, rounds=((1, 3),))
    with pytest.raises(EngineError, match="round=0 is not the current round 1"):
        engine.post_bundles(0, (bundle,))
    digest = engine.digest()
    with pytest.raises(EngineError, match=r"bundles\[0\] holds round 0, before the current round 1"):
        engine.post_bundles(1, (Bundle(price=1.0, rounds=((0, 3),)),))
    assert engine.digest() == digest
    engine.post_bundles(1, (bundle,))
    assert engine.digest() != digest
    with pytest.raises(EngineError, match="posted at round 1: round 1 comes no later"):
        engine.post_bundles(1, (bundle,))
    with pytest.raises(EngineError, match="pricing is 'exponential'"):
        Engine(stochastic_platform(0)).post_bundles(0, ())
    with pytest.raises(ValueError, match="bundle_window=5 is given but pricing is 'exponential'"):
        stochastic_platform(0).model_copy(update={"bundle_window": 5}).model_validate(
            {**stochastic_platform(0).model_dump(), "bundle_window": 5})


def serve(sched: DurableScheduler, workload: Workload) -> int:
    """Drive the server through the workload as `drive` does (submit, arrivals, completions, advance); the
    number of jobs born in the last prior-length whose quote runs some outcome."""
    jobs = sorted(workload.jobs, key=lambda j: j.birth)
    starts: dict[str, int | None] = {}
    admitted = 0
    for t in range(max(j.birth for j in jobs) + 12):
        for job in (j for j in jobs if j.birth == t):
            sched.execute("operator", f"s-{job.id}", "submit",
                          {"tenant": "acme", "job_id": job.id, "sow": job.sow.model_dump(mode="json")})
            plan = sched.engine.jobs[namespace.key("acme", job.id)].plan
            admitted += t >= 2 * PRIOR_ROUNDS and plan.utility > 0
        for job in jobs:
            if job.birth + job.arrival_offset == t:
                try:
                    sched.execute("operator", f"a-{job.id}", "arrive",
                                  {"tenant": "acme", "job_id": job.id, "signal": job.signal})
                    starts[job.id] = sched.engine.jobs[namespace.key("acme", job.id)].plan.start_for(t, job.signal)
                except (EngineError, Refused, KeyError):
                    starts[job.id] = None
            start = starts.get(job.id)
            if start is not None and start + job.duration - 1 == t:
                with contextlib.suppress(EngineError, Refused):
                    sched.execute("operator", f"c-{job.id}", "complete", {"tenant": "acme", "job_id": job.id})
        sched.execute("operator", f"t{t}", "advance", {})
    return admitted


def test_a_server_keeps_admitting_for_three_priors_and_replays_the_logged_bundles(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    platform = priced(PRIOR_ROUNDS)
    config = ServerConfig(platform=platform, oracle="mc", tokens={"operator-token": "operator"}, tenants=("acme",))
    sched = DurableScheduler(config, CommandStore(tmp_path / "s.db", config.identity()), encode_reply)
    workload = three_priors(platform)
    assert serve(sched, workload) > 10
    posted = [c for c in sched.store.commands(after=0) if c.kind == "bundles"]
    assert [c.body["round"] for c in posted][:2] == [20, 40] and all(c.body["bundles"] for c in posted[:2])
    digest, logged = sched.engine.digest(), sched.log_seq
    with pytest.raises(PermissionDenied, match="posted by the server itself"):
        sched.execute("acme", None, "bundles", posted[0].body)
    sched.close()

    def no_solve(*args: object) -> None:
        raise AssertionError("a replay re-solved a window's LP")

    monkeypatch.setattr(rolling, "window_bundles", no_solve)  # replay must read the log, never the solver
    again = DurableScheduler(config, CommandStore(tmp_path / "s.db", config.identity()), encode_reply)
    assert (again.replayed, again.engine.digest()) == (logged, digest)
    again.close()


def test_a_window_whose_solve_fails_posts_no_bundles_and_the_server_keeps_serving(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    platform = priced(5)
    config = ServerConfig(platform=platform, oracle="mc", tokens={"operator-token": "operator"}, tenants=("acme",))
    sched = DurableScheduler(config, CommandStore(tmp_path / "s.db", config.identity()), encode_reply)

    def failing(*args: object) -> None:
        raise RuntimeError("HiGHS did not solve the stochastic LP: Infeasible")

    monkeypatch.setattr(rolling, "window_bundles", failing)
    for t in range(6):
        sched.execute("operator", f"t{t}", "advance", {})
    assert sched.broken is None and sched.engine.now == 6
    assert [c.body for c in sched.store.commands(after=0) if c.kind == "bundles"] == [{"round": 5, "bundles": []}]
    sched.close()
