"""Shared hindsight instances for the offline solver tests: a hand-computed case and tiny random shapes."""

from __future__ import annotations

from hypothesis import assume

from models.offline.brute import combinations
from models.offline.hindsight import HindsightInstance, HindsightJob
from models.offline.instances import InstanceShape, random_instance

TINY = InstanceShape(capacity=4, horizon=8, max_arrival_delay=2, max_duration=3, max_concurrency=3,
                     max_steps=2, max_slack=3, max_value=20.0)
ENUMERABLE = 200_000  # start combinations brute force enumerates quickly


def enumerable(seed: int, n: int, limit: int = ENUMERABLE) -> HindsightInstance:
    """A random TINY instance of n jobs that brute force can enumerate (hypothesis discards the others)."""
    inst = random_instance(n, seed, TINY)
    assume(combinations(inst) <= limit)
    return inst

# C = 2. A (2 nodes, 2 rounds) earns 10 if it starts at 0, else 5 up to start 2. B (1 node, 2 rounds) earns 8
# only from start 0; C (1 node, 1 round, arrives at 1) earns 3 only from start 1.
# A at 0 blocks both others: 10. B at 0, C at 1 (round 1 load 2), A at 2: 8 + 3 + 5 = 16, the optimum.
HAND = HindsightInstance(2, (
    HindsightJob("A", 0, 0, 2, 2, ((2, 10.0), (4, 5.0))),
    HindsightJob("B", 0, 0, 2, 1, ((2, 8.0),)),
    HindsightJob("C", 0, 1, 1, 1, ((2, 3.0),)),
))
HAND_OPTIMUM = 16.0
HAND_SCHEDULE: dict[str, int | None] = {"A": 2, "B": 0, "C": 1}
