"""Shared fixtures: small platforms and seeded random SoWs for the mechanism tests; every test starts with the
`sowsched` loggers as the test before found them (a `serve` run in-process installs its JSON handler on stderr)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import settings

from mechanism.platform import Platform
from mechanism.sow import SoW

# Seeded randomness only (the team's standard): hypothesis draws the same examples on every run (derandomize), and
# no example database carries a failure from one run into the next, so a red run can be rerun and a green one means
# the same everywhere.
settings.register_profile("seeded", derandomize=True, database=None)
settings.load_profile("seeded")


# Modules whose tests share one machine-wide resource run in one xdist worker, one after another (`make test` runs
# two workers with --dist loadgroup): the Slurm test bed (one controller, which one test restarts) and the wall-clock
# demos and walkthroughs, whose rounds are timed.
SERIAL_MODULES = {
    "tests/benchmarks/test_agent.py", "tests/cli/commands/test_agent.py", "tests/cli/test_demo_cluster.py",
    "tests/clients/test_agent.py", "tests/clients/test_agent_faults.py", "tests/clients/test_agent_state.py",
    "tests/clients/test_executors.py", "tests/server/test_dependencies.py", "tests/server/test_executor_role.py",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.split("::", 1)[0] in SERIAL_MODULES:
            item.add_marker(pytest.mark.xdist_group("cluster"))


@pytest.fixture(autouse=True)
def _restore_sowsched_logging() -> Iterator[None]:
    root = logging.getLogger("sowsched")
    saved = (root.handlers[:], root.level, root.propagate)
    yield
    root.handlers[:], root.level, root.propagate = saved


def small_platform(C: int = 4, samples: int | None = 4000, seed: int = 7, **kw: object) -> Platform:
    params: dict[str, object] = {"C": C, "C_m": min(3, C), "D_m": 3, "S_m": 6, "H": 50.0, "epsilon": 0.1,
                                 "eps0": 0.05, "delta0": 0.05, "seed": seed, "samples": samples}
    params.update(kw)
    return Platform(**params)


def random_sow(rng: np.random.Generator, p: Platform, max_outcomes: int = 3, signal_mode: str = "none",
               concurrency: int | None = None) -> SoW:
    """A random SoW within the bounds of `p`: distinct (arrival, duration) pairs, decreasing value steps."""
    n = int(rng.integers(1, max_outcomes + 1))
    pairs: set[tuple[int, int]] = set()
    max_a = min(2, p.S_m - 1)
    while len(pairs) < n:
        pairs.add((int(rng.integers(0, max_a + 1)), int(rng.integers(1, p.D_m + 1))))
    w = rng.uniform(0.2, 1.0, size=n)
    w = w / w.sum()
    outcomes = [[a, d, float(x)] for (a, d), x in zip(sorted(pairs), w, strict=True)]
    outcomes[-1][2] = 1.0 - sum(o[2] for o in outcomes[:-1])
    n_steps = int(rng.integers(1, 3))
    ks = sorted(rng.choice(np.arange(2, p.S_m + 1), size=n_steps, replace=False).tolist())
    vs = sorted(rng.uniform(1.0, p.H, size=n_steps).tolist(), reverse=True)
    if n_steps == 2 and vs[0] == vs[1]:
        vs[1] = vs[0] / 2
    c = concurrency if concurrency is not None else int(rng.integers(1, p.C_m + 1))
    return SoW.parse({"concurrency": c, "value_steps": list(zip(ks, vs, strict=True)), "outcomes": outcomes,
                      "signal_mode": signal_mode}, p)


@pytest.fixture
def platform() -> Platform:
    return small_platform()
