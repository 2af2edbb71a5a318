"""FCFS and deterministic reservation on hand-computed cases; feasible schedules that never beat the optimum."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism.platform import Platform
from mechanism.sow import SoW
from models.offline.baselines import fcfs, reservation
from models.offline.brute import combinations, solve_brute
from models.offline.hindsight import HindsightInstance, HindsightJob
from models.offline.instances import random_instance
from models.simulation import Workload, WorkloadJob
from tests.offline_cases import TINY

PLATFORM = Platform(C=2, C_m=2, D_m=3, S_m=10, H=100.0)


def wjob(job_id: str, birth: int, c: int, steps: list[list[float]], outcomes: list[list[float]],
         realized: tuple[int, int]) -> WorkloadJob:
    sow = SoW.parse({"concurrency": c, "value_steps": steps, "outcomes": outcomes}, PLATFORM)
    return WorkloadJob(id=job_id, birth=birth, sow=sow, arrival_offset=realized[0], duration=realized[1])


def test_fcfs_starts_the_head_when_it_fits_and_drops_jobs_that_can_no_longer_earn() -> None:
    # C = 2. A takes both nodes in rounds 0-1; B (same arrival, queued behind A) can only earn from a start
    # at <= 1, so it leaves the queue at round 2; C starts at 2 and earns 4: 10 + 4.
    inst = HindsightInstance(2, (
        HindsightJob("A", 0, 0, 2, 2, ((3, 10.0),)),
        HindsightJob("B", 0, 0, 1, 1, ((2, 5.0),)),
        HindsightJob("C", 1, 1, 1, 1, ((2, 4.0),)),
    ))
    result = fcfs(inst)
    assert result.starts == {"A": 0, "B": None, "C": 2}
    assert result.welfare == 14.0 and result.completed == 2


def test_fcfs_does_not_backfill_past_a_blocked_head() -> None:
    # A holds one node for rounds 0-2. B (2 nodes) heads the queue from round 1 and waits until 3;
    # C (1 node) would fit at 1 but waits behind B and starts at 4.
    inst = HindsightInstance(2, (
        HindsightJob("A", 0, 0, 3, 1, ((9, 1.0),)),
        HindsightJob("B", 0, 1, 1, 2, ((9, 1.0),)),
        HindsightJob("C", 1, 1, 1, 1, ((9, 1.0),)),
    ))
    assert fcfs(inst).starts == {"A": 0, "B": 3, "C": 4}


@pytest.mark.timeout(10)
def test_fcfs_time_does_not_grow_with_the_arrival_of_a_job_that_cannot_earn() -> None:
    # A W.json realized arrival offset has no upper bound; arriving at round 10^9 the job can earn nothing, and
    # FCFS must not walk there round by round (minutes) to withdraw it.
    inst = HindsightInstance(2, (
        HindsightJob("A", 0, 0, 1, 1, ((2, 5.0),)),
        HindsightJob("never", 0, 10**9, 1, 1, ((2, 5.0),)),
    ))
    result = fcfs(inst)
    assert result.starts == {"A": 0, "never": None} and result.welfare == 5.0


def test_reservation_holds_the_worst_case_window_and_runs_inside_it() -> None:
    # X reserves 1 node for (2 - 0) + 3 = 5 rounds from 0, arrives at 2, runs 1 round: completes at 3, worth 10.
    # Y needs both nodes: rounds 0-4 hold X's node, so its window is [5, 6); it starts at 0 + 5, worth 7.
    # Z (born 1) fits next to X at round 1 and completes at 2, worth 3.
    x = wjob("X", 0, 1, [[8, 10.0]], [[0, 1, 0.25], [0, 3, 0.25], [2, 1, 0.25], [2, 3, 0.25]], (2, 1))
    y = wjob("Y", 0, 2, [[6, 7.0]], [[0, 1, 1.0]], (0, 1))
    z = wjob("Z", 1, 1, [[1, 3.0]], [[0, 1, 1.0]], (0, 1))
    result = reservation(Workload("hand", PLATFORM, (x, y, z)))
    assert result.starts == {"X": 2, "Y": 5, "Z": 1}
    assert result.welfare == 20.0 and result.rejected == 0


def test_reservation_evicts_the_newest_where_the_realized_capacity_is_below_c() -> None:
    # The hand case above with the capacity 2, 1, 2, ...: at round 1 X (reserved first, runs 2-2) is not running
    # yet, Z runs alone on 1 node and keeps it; at round 5 Y needs 2 and gets them. With 1 node at round 5 too,
    # Y (the only one running then) goes and earns nothing; X and Z keep theirs.
    x = wjob("X", 0, 1, [[8, 10.0]], [[0, 1, 0.25], [0, 3, 0.25], [2, 1, 0.25], [2, 3, 0.25]], (2, 1))
    y = wjob("Y", 0, 2, [[6, 7.0]], [[0, 1, 1.0]], (0, 1))
    z = wjob("Z", 1, 1, [[1, 3.0]], [[0, 1, 1.0]], (0, 1))
    kept = reservation(Workload("hand", PLATFORM, (x, y, z), capacity=(2, 1, 2)))
    assert kept.starts == {"X": 2, "Y": 5, "Z": 1} and kept.welfare == 20.0
    short = reservation(Workload("hand", PLATFORM, (x, y, z), capacity=(2, 1, 2, 2, 2, 1)))
    assert short.starts == {"X": 2, "Y": None, "Z": 1} and short.welfare == 13.0


def test_reservation_evicts_lifo_among_jobs_running_together() -> None:
    # A (born 0) and B (born 1) both run rounds 1-2 on 1 node each; round 2 has 1 node: B, the newer, goes.
    a = wjob("A", 0, 1, [[4, 5.0]], [[1, 2, 1.0]], (1, 2))
    b = wjob("B", 1, 1, [[4, 4.0]], [[0, 2, 1.0]], (0, 2))
    result = reservation(Workload("lifo", PLATFORM, (a, b), capacity=(2, 2, 1)))
    assert result.starts == {"A": 1, "B": None} and result.welfare == 5.0


def test_reservation_rejects_a_job_whose_worst_case_window_misses_its_last_deadline() -> None:
    # Window length (3 - 0) + 2 = 5 rounds, but the value is 0 after offset 4.
    w = wjob("W", 0, 1, [[4, 5.0]], [[0, 1, 0.5], [3, 2, 0.5]], (0, 1))
    result = reservation(Workload("hand", PLATFORM, (w,)))
    assert result.starts == {"W": None} and result.rejected == 1 and result.welfare == 0.0


def test_reservation_does_not_run_a_realized_outcome_outside_the_sow() -> None:
    w = wjob("W", 0, 1, [[9, 5.0]], [[0, 1, 1.0]], (1, 1))
    result = reservation(Workload("hand", PLATFORM, (w,)))
    assert result.starts == {"W": None} and result.welfare == 0.0 and result.rejected == 0



def test_fcfs_queues_jobs_arriving_together_by_birth_not_instance_order() -> None:
    # C = 1. Y (born 1) and X (born 0) both arrive at 2; X, born first, heads the queue and starts at 2. Y can
    # earn only by starting at 2 (completion by 1 + 2), so it leaves the queue unstarted.
    inst = HindsightInstance(1, (
        HindsightJob("Y", 1, 2, 1, 1, ((2, 6.0),)),
        HindsightJob("X", 0, 2, 1, 1, ((9, 5.0),)),
    ))
    result = fcfs(inst)
    assert result.starts == {"Y": None, "X": 2} and result.welfare == 5.0


def test_reservations_are_made_in_birth_order_not_workload_order() -> None:
    # C = 2, both jobs take both nodes. X (born 0) reserves [0, 2) first; Z (born 1, listed first) then finds
    # round 1 taken and reserves [2, 3), starting at its arrival 1 + (2 - 1 - 0) = 2.
    x = wjob("X", 0, 2, [[9, 5.0]], [[0, 2, 1.0]], (0, 2))
    z = wjob("Z", 1, 2, [[9, 4.0]], [[0, 1, 1.0]], (0, 1))
    result = reservation(Workload("hand", PLATFORM, (z, x)))
    assert result.starts == {"Z": 2, "X": 0} and result.welfare == 9.0


def test_reservation_window_opens_at_the_earliest_declared_arrival() -> None:
    # Every outcome of Q arrives 2 rounds after birth: its window is [2, 3), not [0, 1), and it starts at 2.
    q = wjob("Q", 0, 1, [[9, 5.0]], [[2, 1, 1.0]], (2, 1))
    result = reservation(Workload("hand", PLATFORM, (q,)))
    assert result.starts == {"Q": 2} and result.welfare == 5.0 and result.completed == 1


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(1, 6))
def test_fcfs_schedule_is_feasible_and_never_beats_the_optimum(seed: int, n: int) -> None:
    inst = random_instance(n, seed, TINY)
    result = fcfs(inst)
    inst.check_schedule(result.starts)
    if combinations(inst) <= 200_000:
        assert result.welfare <= solve_brute(inst).value + 1e-9
    assert result.welfare == pytest.approx(inst.schedule_value(result.starts))
