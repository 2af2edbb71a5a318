"""Warm-up: load (or compile) the mechanism's numba kernels on a throwaway engine before the first real quote."""

from __future__ import annotations

from mechanism.engine import Engine, OracleKind
from mechanism.platform import Platform
from mechanism.sow import SoW

WARM_JOBS = 2  # throwaway submissions, each followed by a round: every module-level kernel is loaded after them
WARM_SAMPLES = 64  # sampled paths of the throwaway engine: the kernels' types do not depend on how many


def warm(platform: Platform, oracle: OracleKind = "mc") -> None:
    """Run a few quotes and rounds of one-node jobs on a throwaway, smaller-sampled engine of `platform`.

    The kernels are pure functions of their inputs (the random streams are counter-based, mechanism/rng.py), so this
    leaves nothing behind but numba's loaded code: the platform's own engine, its quotes and digests are unchanged.
    """
    engine = Engine(platform.model_copy(update={"samples": WARM_SAMPLES}), oracle=oracle)
    pairs = sorted({(0, 1), (min(2, platform.S_m - 1), min(2, platform.D_m))})  # two outcomes where the bounds allow
    outcomes = [[a, d, 1.0 / len(pairs)] for a, d in pairs]
    sow = SoW.parse({"concurrency": 1, "value_steps": [[platform.S_m, 1.0]], "outcomes": outcomes}, platform)
    for i in range(WARM_JOBS):
        engine.submit(f"warm-{i}", sow)
        engine.advance()
