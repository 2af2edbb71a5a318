"""Warm-up: it runs on any platform the bounds allow and leaves every later quote and digest as they were."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mechanism.engine import Engine, OracleKind
from mechanism.platform import Platform
from mechanism.warmup import warm
from server.config import load_config
from tests.conftest import random_sow, small_platform

ROOT = Path(__file__).resolve().parents[2]


def _digest_of_a_random_run(p: Platform, oracle: OracleKind) -> tuple[str, list[dict[str, Any]]]:
    rng = np.random.default_rng(3)
    engine = Engine(p, oracle=oracle)
    quotes = []
    for i in range(8):
        quotes.append(engine.submit(f"j{i}", random_sow(rng, p)).to_dict())
        engine.advance()
    return engine.digest(), quotes


@pytest.mark.parametrize("oracle", ["mc", "exact"])
def test_warming_up_leaves_a_later_engines_quotes_and_digest_unchanged(oracle: OracleKind) -> None:
    p = small_platform(C=4, samples=300)
    before = _digest_of_a_random_run(p, oracle)
    warm(p, oracle)
    assert _digest_of_a_random_run(p, oracle) == before


def test_warming_up_runs_at_the_tightest_bounds() -> None:
    warm(Platform(C=1, C_m=1, D_m=1, S_m=1, H=1.0, samples=10))  # one outcome: (0, 1) twice is one pair


@pytest.mark.parametrize("name", ["platform.toml", "capacity.toml"])
def test_warming_up_runs_on_the_example_platforms(name: str) -> None:
    config = load_config(ROOT / "examples" / name)
    warm(config.platform, config.oracle)
