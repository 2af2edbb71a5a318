"""Edge-case hindsight instances: every solver proves the brute-force optimum, the LP bounds it, baselines obey C.

The shapes the random benchmark instances rarely draw: deadlines a job cannot meet at all, a first deadline met
only by starting at the arrival (one valuable start), a value that drops to 0 at the very next round, jobs as
wide as the platform, equal values (ties), and values that no power of ten up to 1e6 makes whole.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.offline.baselines import fcfs
from models.offline.brute import combinations, solve_brute
from models.offline.cpsat import CpSatParams, solve_cpsat, solve_model
from models.offline.greedy import density_greedy
from models.offline.hindsight import HindsightInstance, HindsightJob
from models.offline.milp import MilpParams, lp_bound, solve_milp

ONE = CpSatParams(time_limit=5.0, workers=1)


@st.composite
def edge_job(draw: st.DrawFn, job_id: str, capacity: int) -> HindsightJob:
    birth = draw(st.integers(0, 3))
    arrival = birth + draw(st.integers(0, 2))
    duration = draw(st.integers(1, 3))
    # Deadlines anywhere in 1..8 after birth: some before the earliest completion, some exactly at it.
    deadlines = sorted(draw(st.sets(st.integers(1, 8), min_size=1, max_size=3)))
    pool = st.sampled_from([1.0, 2.0, 5.0, 10.0]) | st.floats(1.0, 20.0, allow_nan=False)
    values = sorted(set(draw(st.lists(pool, min_size=len(deadlines), max_size=len(deadlines)))), reverse=True)
    steps = tuple(zip(deadlines, values, strict=False))
    concurrency = draw(st.integers(1, capacity))
    return HindsightJob(job_id, birth, arrival, duration, concurrency, steps)


@st.composite
def edge_instance(draw: st.DrawFn) -> HindsightInstance:
    capacity = draw(st.integers(1, 3))
    n = draw(st.integers(0, 5))
    return HindsightInstance(capacity, tuple(draw(edge_job(f"j{i}", capacity)) for i in range(n)))


def _same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)


@settings(max_examples=40, deadline=None)
@given(inst=edge_instance())
def test_every_solver_proves_the_brute_force_optimum_and_the_lp_bounds_it(inst: HindsightInstance) -> None:
    assert combinations(inst) <= 100_000
    opt = solve_brute(inst).value
    results = [solve_model(inst, ONE, m) for m in ("plain", "channel", "indexed")]
    results.append(solve_cpsat(inst, CpSatParams(time_limit=5.0, workers=1, deterministic=True,
                                                 bound_model="indexed")))
    results.append(solve_milp(inst, MilpParams(time_limit=5.0)))
    for result in results:
        inst.check_schedule(result.starts)
        assert result.optimal and _same(result.value, opt) and result.bound >= opt - 1e-9
    assert lp_bound(inst).bound >= opt - 1e-7


@settings(max_examples=60, deadline=None)
@given(inst=edge_instance())
def test_fcfs_starts_no_job_before_arrival_and_never_leaves_a_fitting_head_waiting(inst: HindsightInstance) -> None:
    starts = fcfs(inst).starts
    inst.check_schedule(starts)
    load: dict[int, int] = {}
    for job in inst.jobs:
        s = starts[job.id]
        if s is not None:
            assert job.arrival <= s <= job.last_start
            for t in range(s, s + job.duration):
                load[t] = load.get(t, 0) + job.concurrency
    order = sorted(range(len(inst.jobs)), key=lambda i: (inst.jobs[i].arrival, inst.jobs[i].birth, i))

    def waiting(job: HindsightJob, t: int) -> bool:
        s = starts[job.id]
        return job.arrival <= t <= job.last_start and (s is None or s > t)

    for pos, i in enumerate(order):
        job = inst.jobs[i]
        for t in job.starts():
            head = waiting(job, t) and not any(waiting(inst.jobs[k], t) for k in order[:pos])
            # The head waits only when it does not fit next to the jobs already running at t.
            assert not head or load.get(t, 0) + job.concurrency > inst.capacity


@settings(max_examples=60, deadline=None)
@given(inst=edge_instance())
def test_greedy_and_fcfs_never_beat_the_brute_force_optimum(inst: HindsightInstance) -> None:
    opt = solve_brute(inst).value
    greedy = density_greedy(inst)
    inst.check_schedule(greedy)
    assert inst.schedule_value(greedy) <= opt + 1e-9
    assert fcfs(inst).welfare <= opt + 1e-9


@pytest.mark.parametrize(("deadline", "expected"), [(3, 7.0), (2, 0.0)])
def test_a_value_that_drops_to_0_at_the_completion_round_is_earned_only_by_meeting_it(deadline: int,
                                                                                     expected: float) -> None:
    # Born 0, arrives 1, runs 2 rounds: the earliest completion is round 3 (occupies 1 and 2).
    inst = HindsightInstance(2, (HindsightJob("x", 0, 1, 2, 2, ((deadline, 7.0),)),))
    for result in (solve_brute(inst), solve_cpsat(inst, ONE), solve_milp(inst)):
        assert result.optimal and result.value == expected
    assert fcfs(inst).welfare == expected
    assert list(inst.jobs[0].starts()) == ([1] if expected else [])
