"""The mechanism core against an independent re-implementation of docs/model.md sections 3-7.

The reference below recomputes from the SoWs alone (no engine helper): expected usage y (section 4), unit prices
and frozen menus (eq. 7), the conditioned residual outcomes of the earlier active jobs and the failure
probability of every (start, duration) by exact enumeration with the new job inside a literal LIFO play
(section 5), the launch plan by brute force over eq. 1-2 (section 7) and every completed job's charge.
"""

from __future__ import annotations

import contextlib
import itertools
import math
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism.engine import Engine, EngineError
from mechanism.failure import MonteCarloOracle, Residual
from mechanism.failure_exact import ExactOracle
from mechanism.failure_literal import sampled_outcomes
from mechanism.jobs import JobState
from mechanism.lifo import lifo_loads
from mechanism.platform import Platform
from mechanism.sow import Signal, SoW
from tests.conftest import random_sow


def p_unit(y: float, p: Platform) -> float:
    """eq. 7, written out."""
    c_prime = p.C * (1.0 - p.epsilon / 10.0)
    return float((4.0 * p.H * p.D_m) ** (y / c_prime) / (2.0 * p.D_m))


def value(sow: SoW, completion_offset: int) -> float:
    """docs/model.md section 2: v_i for the first i with f - b <= k_i, else 0."""
    for k, v in sow.value_steps:
        if completion_offset <= k:
            return v
    return 0.0


@dataclass
class RefJob:
    id: str
    birth: int
    sow: SoW
    plan: dict[tuple[int, Signal], int | None]  # absolute arrival, signal -> absolute start
    menu: dict[int, float] = field(default_factory=dict)  # absolute round -> unit price frozen at birth


def residual(job: RefJob, state: JobState, arrival: int | None, signal: Signal, start: int | None,
             t: int) -> list[tuple[float, int | None, int]]:
    """(probability, absolute start or None, duration) of the outcomes still possible at t (section 5)."""
    rows = []
    for o, sig in zip(job.sow.outcomes, job.sow.signals, strict=True):
        a = job.birth + o.arrival_offset
        if state is JobState.SUBMITTED:
            if a >= t:
                rows.append((o.probability, job.plan[(a, sig)], o.duration))
        elif (a, sig) == (arrival, signal):
            assert start is not None
            if state is JobState.RUNNING and o.duration < t - start + 1:
                continue
            rows.append((o.probability, start, o.duration))
    total = math.fsum(r[0] for r in rows)
    return [(q / total, s, d) for q, s, d in rows]


def new_job_fails(earlier: list[tuple[int | None, int, int]], t: int, s: int, d: int, c: int, capacity: int,
                  overload: str = "newest") -> bool:
    """Play LIFO literally from round t with the new job (newest) inside; True if it is evicted or cancelled. Each
    overflow removes the newest active job ("newest") or the newest active job running in the round
    ("newest_demanding")."""
    jobs = [*earlier, (s, d, c)]
    active = [True] * len(jobs)
    for tau in range(t, s + d):
        for k, (sk, dk, _) in enumerate(jobs):
            if active[k] and sk is not None and tau >= sk + dk:
                active[k] = False
        load = sum(ck for k, (sk, dk, ck) in enumerate(jobs) if active[k] and sk is not None and sk <= tau < sk + dk)
        k = len(jobs) - 1
        while load > capacity:
            while not active[k] or (overload == "newest_demanding" and not runs(jobs[k], tau)):
                k -= 1
            if k == len(jobs) - 1:
                return True
            active[k] = False
            sk, dk, ck = jobs[k]
            if sk is not None and sk <= tau < sk + dk:
                load -= ck
    return False


def runs(job: tuple[int | None, int, int], tau: int) -> bool:
    start, d, _ = job
    return start is not None and start <= tau < start + d


def ref_failure(residuals: list[tuple[list[tuple[float, int | None, int]], int]], t: int, s: int, d: int, c: int,
                capacity: int, overload: str) -> float:
    total = 0.0
    for combo in itertools.product(*(r for r, _ in residuals)):
        w = math.prod(q for q, _, _ in combo)
        earlier = [(st, dur, ck) for (_, st, dur), (_, ck) in zip(combo, residuals, strict=True)]
        total += w * new_job_fails(earlier, t, s, d, c, capacity, overload)
    return total


def labelled(rng: np.random.Generator, p: Platform, sow: SoW) -> SoW:
    """Explicit signal mode: random labels (or none) per outcome, so groups split and merge."""
    if sow.signal_mode != "explicit":
        return sow
    data = sow.model_dump()
    for o in data["outcomes"]:
        o["signal"] = str(rng.choice(["x", "y", "7"])) if rng.random() < 0.7 else None
    return SoW.parse(data, p)


def tiny_platform(seed: int, overload: str = "newest") -> Platform:
    return Platform(C=3, C_m=2, D_m=2, S_m=4, H=20.0, epsilon=0.1, eps0=0.05, delta0=0.05, seed=seed, samples=50,
                    overload=overload)


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("overload", ["newest", "newest_demanding"])
def test_quotes_plans_and_charges_equal_an_independent_reimplementation_of_model_md(seed: int, overload: str) -> None:
    p = tiny_platform(seed, overload)
    rng = np.random.default_rng(seed)
    e = Engine(p, oracle="exact")
    y: dict[int, float] = {}
    ref: dict[str, RefJob] = {}
    truth: dict[str, tuple[int, int, Signal]] = {}  # absolute arrival, duration, observed signal
    checked = 0
    for t in range(10):
        for n in range(int(rng.integers(0, 3)) if t < 7 else 0):
            job_id = f"j{t}.{n}"
            sow = labelled(rng, p, random_sow(rng, p, max_outcomes=4,
                                              signal_mode=str(rng.choice(["none", "duration", "explicit"]))))
            menu = {tau: p_unit(y.get(tau, 0.0), p) for tau in range(t, t + p.horizon)}
            earlier = []
            for j in e.jobs.values():
                if j.state.active:
                    earlier.append((residual(ref[j.id], j.state, j.arrival, j.signal, j.start, t), j.concurrency))
            c = sow.concurrency
            fail = {(s, d): ref_failure(earlier, t, s, d, c, p.C, overload) for s in range(t, t + p.S_m)
                    for d in range(1, p.D_m + 1)}
            bar = {k: (f if f > p.failure_threshold else 0.0) for k, f in fail.items()}
            quote = e.submit(job_id, sow).plan
            plan: dict[tuple[int, Signal], int | None] = {}
            for (a_off, sig) in sow.group_keys():
                a = t + a_off
                utils = {}
                for s in range(a, t + p.S_m):
                    utils[s] = math.fsum(
                        o.probability
                        * (1.0 - bar[(s, o.duration)])
                        * (value(sow, s + o.duration - t) - c * sum(menu[tau] for tau in range(s, s + o.duration)))
                        for o, osig in zip(sow.outcomes, sow.signals, strict=True)
                        if (o.arrival_offset, osig) == (a_off, sig)
                    )
                best = max(utils.values())
                got = quote.start_for(a, sig)
                if best <= 1e-9:
                    assert got is None or utils[got] >= -1e-9, (job_id, a, sig, utils)
                    expected = None if best < -1e-9 else got
                else:
                    near = [s for s, u in utils.items() if u >= best - 1e-9]
                    expected = near[0] if len(near) == 1 else got
                    assert got in near, (job_id, a, sig, utils, got)
                assert got == expected, (job_id, a, sig, utils)
                plan[(a, sig)] = got
            for oq in quote.outcomes:
                if oq.start is not None:
                    assert oq.failure_raw == pytest.approx(fail[(oq.start, oq.duration)], abs=1e-12)
                    assert oq.failure == pytest.approx(bar[(oq.start, oq.duration)], abs=1e-12)
                    assert oq.price == pytest.approx(
                        c * sum(menu[tau] for tau in range(oq.start, oq.start + oq.duration)), rel=1e-12
                    )
                    checked += 1
            # section 4: y[tau] += c * sum P * [L <= tau < L + d]
            for o, sig in zip(sow.outcomes, sow.signals, strict=True):
                st = plan[(t + o.arrival_offset, sig)]
                if st is not None:
                    for tau in range(st, st + o.duration):
                        y[tau] = y.get(tau, 0.0) + c * o.probability
            ref[job_id] = RefJob(job_id, t, sow, plan, menu)
            i = int(rng.choice(len(sow.outcomes), p=[o.probability for o in sow.outcomes]))
            truth[job_id] = (t + sow.outcomes[i].arrival_offset, sow.outcomes[i].duration, sow.signals[i])
        for job_id, (a, d, sig) in truth.items():
            j = e.jobs[job_id]
            if a == t and j.state is JobState.SUBMITTED:
                e.report_arrival(job_id, sig)
            st = ref[job_id].plan.get((a, sig))
            if st is not None and st + d - 1 == t and j.state.active:
                e.report_completion(job_id)
        e.advance()
    for job_id, j in e.jobs.items():
        _, d, _ = truth[job_id]
        if j.state is JobState.COMPLETED:
            r = ref[job_id]
            assert j.start is not None and j.finish == j.start + d
            assert j.charge == pytest.approx(j.concurrency * sum(r.menu[tau] for tau in range(j.start, j.start + d)),
                                             rel=1e-12)
            assert j.value == value(r.sow, j.finish - j.birth)
        else:
            assert j.charge == 0.0 and j.value == 0.0
    assert checked > 0


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 7), st.integers(0, 3), st.integers(1, 3))
def test_sampled_and_exact_oracles_agree_exactly_when_every_earlier_job_has_one_outcome(
        seed: int, n_earlier: int, n_appended: int, c: int) -> None:
    """Outcomes with probability 1 leave nothing to sample: the Monte Carlo and exact oracles must agree bit for bit,
    whether the jobs were there at the round's start or appended during it (docs/model.md section 5)."""
    p = Platform(C=4, C_m=3, D_m=3, S_m=6, H=50.0, samples=64, seed=seed % 1000)
    rng = np.random.default_rng(seed)

    def one(k: int) -> Residual:
        start = int(rng.integers(-1, p.S_m))
        return Residual(job=k, concurrency=int(rng.integers(1, p.C_m + 1)), start=np.array([start], dtype=np.int64),
                        length=np.array([int(rng.integers(1, p.D_m + 1))], dtype=np.int64),
                        probability=np.array([1.0]))

    earlier = [one(k) for k in range(n_earlier)]
    appended = [one(n_earlier + k) for k in range(n_appended)]
    sampled, exact = MonteCarloOracle(p), ExactOracle(p)
    for o in (sampled, exact):
        o.reset(5, earlier)
    sampled.estimates(c)  # build the paths before the appends, so they are applied lazily
    for r in appended:
        sampled.append(r)
        exact.append(r)
    assert sampled.estimates(c).tolist() == exact.estimates(c).tolist()


def empty_platform() -> Platform:
    """No earlier jobs and y = 0: every unit price is p(0) = 1/(2 D_m) = 1/4 exactly, every estimate 0."""
    return Platform(C=10, C_m=4, D_m=2, S_m=4, H=20.0, samples=16)


def test_a_value_step_at_s_m_pays_off_for_an_arrival_at_the_last_offset() -> None:
    # docs/model.md section 2 allows k = S_m: arrival at offset S_m - 1, d = 1 completes at f = b + S_m with value 7.
    p = empty_platform()
    e = Engine(p)
    for _ in range(2):
        e.advance()
    e.submit("late", SoW.parse({"concurrency": 2, "value_steps": [[4, 7.0]], "outcomes": [[3, 1, 1.0]]}, p))
    for _ in range(3):
        e.advance()
    e.report_arrival("late", None)
    e.report_completion("late")
    e.advance()
    j = e.jobs["late"]
    assert (j.state, j.start, j.finish, j.value, j.charge) == (JobState.COMPLETED, 5, 6, 7.0, 0.5)


def test_a_price_of_exactly_the_value_is_never_scheduled() -> None:
    # pi(s, 4, 1) = 4 * 1/4 = 1 = V: U = 0, and ties at U <= 0 go to never (docs/model.md section 7).
    p = empty_platform()
    e = Engine(p)
    plan = e.submit("even", SoW.parse({"concurrency": 4, "value_steps": [[4, 1.0]], "outcomes": [[0, 1, 1.0]]},
                                      p)).plan
    assert plan.start_for(0, None) is None and plan.utility == 0.0
    e.report_arrival("even", None)
    e.advance()
    assert e.jobs["even"].state is JobState.NOT_SCHEDULED and e.prices.usage(0, 4).tolist() == [0.0] * 4


def test_equal_utilities_go_to_the_earliest_start_and_no_start_before_arrival() -> None:
    # Constant value up to k = 4 and flat prices: starts 1, 2, 3 (arrival 1, d = 1) tie at U = 9 - 1/4.
    p = empty_platform()
    plan = Engine(p).submit("tie", SoW.parse({"concurrency": 1, "value_steps": [[4, 9.0]],
                                              "outcomes": [[1, 1, 1.0]]}, p)).plan
    assert plan.start_for(1, None) == 1 and plan.utility == 9.0 - 0.25


def test_signals_split_groups_and_each_group_gets_its_own_start() -> None:
    # Value only if done by b + 1: the d = 1 group starts at its arrival, the d = 2 group can never earn.
    p = empty_platform()
    split = {"concurrency": 1, "value_steps": [[1, 5.0]], "outcomes": [[0, 1, 0.5, "short"], [0, 2, 0.5, "long"]]}
    plan = Engine(p).submit("s", SoW.parse(split, p)).plan
    assert (plan.start_for(0, "short"), plan.start_for(0, "long")) == (0, None)
    assert plan.utility == 0.5 * (5.0 - 0.25)
    # Without signals one start serves both: U(0) = 0.5 (5 - 1/4) + 0.5 (0 - 1/2) > 0, so it starts at 0.
    merged = {**split, "outcomes": [[0, 1, 0.5], [0, 2, 0.5]]}
    plan = Engine(p).submit("m", SoW.parse(merged, p)).plan
    assert plan.start_for(0, None) == 0 and plan.utility == pytest.approx(0.5 * 4.75 - 0.25)


def test_a_job_reported_in_its_start_round_completes_there_and_pays_its_frozen_price() -> None:
    p = empty_platform()
    e = Engine(p)
    e.submit("first", SoW.parse({"concurrency": 3, "value_steps": [[2, 6.0]], "outcomes": [[0, 1, 1.0]]}, p))
    # Its only valuable start is its arrival round (value 6 if done by b + 1).
    e.submit("later", SoW.parse({"concurrency": 3, "value_steps": [[1, 6.0]], "outcomes": [[0, 1, 1.0]]}, p))
    e.report_arrival("later", None)
    e.report_completion("later")  # accepted: it is scheduled to start in this round
    e.advance()
    j = e.jobs["later"]
    # Its menu was frozen after "first" committed y[0] = 3: p(3) = (4 * 20 * 2)^(3 / 9.9) / 4.
    assert (j.state, j.start, j.finish, j.value) == (JobState.COMPLETED, 0, 1, 6.0)
    assert j.charge == pytest.approx(3 * 160.0 ** (3 / 9.9) / 4, rel=1e-12)


def definition_estimates(p: Platform, round_: int, rs: list[Residual], c: int, samples: int) -> np.ndarray:
    """docs/model.md section 5 on the oracle's own draws: per sample, LIFO loads (mechanism.lifo), then E[s, d] =
    [some L(tau) > C for tau < s] or [some L(tau) + c > C for tau in [s, s + d)], read off prefix counts."""
    idx = sampled_outcomes(p, round_, rs, samples)
    fails = np.zeros((p.S_m, p.D_m), dtype=np.int64)
    s = np.arange(p.S_m)[:, None]
    d = np.arange(1, p.D_m + 1)[None, :]
    for n in range(samples):
        jobs = [(int(r.start[i]), int(r.length[i]), r.concurrency) for r, i in zip(rs, idx[n], strict=True)]
        loads = np.array(lifo_loads(jobs, p.horizon, p.C)[0])
        over = np.concatenate([[0], np.cumsum(loads > p.C)])
        full = np.concatenate([[0], np.cumsum(loads + c > p.C)])
        fails += (over[s] > 0) | (full[s + d] - full[s] > 0)
    return fails / samples


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([(8, 70, 60), (150, 40, 30), (6, 130, 5)]),
       st.sampled_from([3, 80]), st.integers(0, 2))
def test_sampled_estimates_equal_the_definition_on_long_windows_wide_loads_and_large_supports(
        seed: int, shape: tuple[int, int, int], outcomes: int, appended: int) -> None:
    """Windows of 129, 69 and 134 rounds (several 64-bit words of the full-round masks), loads beyond int8
    (C = 150), supports above the 64 outcomes drawn by counting, jobs appended after the paths exist."""
    capacity, s_m, d_m = shape
    p = Platform(C=capacity, C_m=capacity // 2, D_m=d_m, S_m=s_m, H=50.0, samples=120, seed=seed % 1000)
    rng = np.random.default_rng(seed)
    rs = []
    for k in range(5 + appended):
        w = rng.uniform(0.1, 1.0, outcomes)
        rs.append(Residual(job=k, concurrency=int(rng.integers(1, p.C_m + 1)),
                           start=rng.integers(-1, p.S_m, outcomes).astype(np.int64),
                           length=rng.integers(1, p.D_m + 1, outcomes).astype(np.int64), probability=w / w.sum()))
    oracle = MonteCarloOracle(p)
    oracle.reset(4, rs[:5])
    oracle.paths()
    for r in rs[5:]:
        oracle.append(r)
    c = int(rng.integers(1, p.C_m + 1))
    assert np.array_equal(oracle.estimates(c), definition_estimates(p, 4, rs, c, p.sample_count))


@pytest.mark.parametrize("seed", range(4))
def test_the_order_of_reports_and_submissions_within_a_round_changes_no_quote_and_no_state(seed: int) -> None:
    """docs/model.md section 6: submissions (step 1) see only what was observed before the round; reports made during
    the round apply in steps 2 and 5. So moving every report of a round before or after its submissions must
    give bit-identical quotes and the same state digest."""
    p = Platform(C=4, C_m=3, D_m=3, S_m=6, H=50.0, samples=200, seed=seed)
    rng = np.random.default_rng(seed)
    script: list[tuple[list[tuple[str, SoW]], list[tuple[str, str, Signal]]]] = []
    truth: dict[str, tuple[int, int, Signal]] = {}
    for t in range(12):
        subs = [(f"j{t}.{n}", random_sow(rng, p, signal_mode="duration")) for n in range(int(rng.integers(0, 3)))]
        for job_id, sow in subs:
            o = sow.outcomes[int(rng.choice(len(sow.outcomes), p=[o.probability for o in sow.outcomes]))]
            truth[job_id] = (t + o.arrival_offset, o.duration, str(o.duration))
        reports: list[tuple[str, str, Signal]] = []
        for job_id, (a, _, sig) in truth.items():
            if a == t:
                reports.append(("arrival", job_id, sig))
            reports.append(("completion", job_id, None))  # refused unless the job runs now: harmless either way
        script.append((subs, reports))

    def report(e: Engine, reports: list[tuple[str, str, Signal]], done: set[int]) -> None:
        for i, (kind, job_id, sig) in enumerate(reports):
            if i in done or job_id not in e.jobs:  # a job born this round reports after its submission
                continue
            done.add(i)
            with contextlib.suppress(EngineError):
                e.report_arrival(job_id, sig) if kind == "arrival" else e.report_completion(job_id)

    def run(reports_first: bool) -> tuple[list[dict[str, object]], str]:
        e = Engine(p)
        quotes = []
        for subs, reports in script:
            done: set[int] = set()
            if reports_first:
                report(e, reports, done)
            quotes += [e.submit(job_id, sow).to_dict() for job_id, sow in subs]
            report(e, reports, done)
            e.advance()
        return quotes, e.digest()

    assert run(True) == run(False)
