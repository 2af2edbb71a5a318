"""The audit of a job: no alternative in the stated family gains under the declared law (Thm 3.2, checked through
the audit), and a gain is found when the reference law differs from the declaration."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism.engine import Engine
from mechanism.launch_plan import FailureEstimates
from mechanism.sow import SoW
from models.audit import Estimates, audit, covers, sow_alternatives
from tests.conftest import random_sow, small_platform
from tests.mechanism.test_truthfulness import engine_with_history


def _engine(seed: int) -> Engine:
    return engine_with_history(seed)[0]


def _estimates(e: Engine) -> Estimates:
    def est(concurrency: int) -> FailureEstimates:
        return FailureEstimates.from_raw(e._current_oracle().estimates(concurrency), e.platform.failure_threshold)
    return est


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["none", "duration", "explicit"]))
def test_with_the_declared_law_as_reference_no_alternative_gains(seed: int, mode: str) -> None:
    e = _engine(seed)
    truth = random_sow(np.random.default_rng(seed + 1), e.platform, max_outcomes=4, signal_mode=mode)
    family = [alt for alt in sow_alternatives(truth, e.platform) if covers(alt, truth)]
    result = audit(truth, truth, family, e.now, e.prices.menu(e.now), _estimates(e))
    assert result.tried == len(family) > 0
    assert result.best_gain <= 1e-9 * max(1.0, abs(result.declared_utility))
    assert result.best_misreport is None


def test_truncating_durations_below_the_declared_law_gains_a_known_exception_the_audit_finds() -> None:
    """An outcome that finishes past its deadline at a positive price is a loss; declaring shorter durations makes it
    an overrun eviction, which pays nothing. The audit reports it (hypothesis found this SoW)."""
    seed = 304092351
    e = _engine(seed)
    truth = random_sow(np.random.default_rng(seed + 1), e.platform, max_outcomes=4, signal_mode="none")
    result = audit(truth, truth, sow_alternatives(truth, e.platform), e.now, e.prices.menu(e.now),
                   _estimates(e))
    assert result.best_misreport is not None
    lie = SoW.parse(result.best_misreport, e.platform)
    assert not covers(lie, truth)
    assert [(o.arrival_offset, o.duration) for o in truth.outcomes] == [(0, 3), (1, 1), (1, 3), (2, 2)]
    assert [(o.arrival_offset, o.duration) for o in lie.outcomes] == [(0, 2), (1, 1), (1, 2), (2, 1)]
    assert result.best_gain == pytest.approx(0.27316, abs=1e-4)


def test_a_declaration_shorter_than_the_reference_law_loses_what_declaring_the_long_outcome_recovers() -> None:
    p = small_platform(C=4, samples=400, seed=1)
    e = Engine(p)
    declared = SoW.parse({"concurrency": 1, "value_steps": [[5, 40.0]], "outcomes": [[0, 1, 1.0]],
                          "signal_mode": "none"}, p)
    reference = SoW.parse({"concurrency": 1, "value_steps": [[5, 40.0]], "outcomes": [[0, 2, 1.0]],
                           "signal_mode": "none"}, p)
    result = audit(declared, reference, sow_alternatives(declared, p), e.now, e.prices.menu(e.now),
                   _estimates(e))
    # declared one round, really two: evicted at the cap, utility 0; declaring two rounds earns V - price > 0
    assert result.declared_utility == 0.0 and result.best_gain > 30.0
    assert result.best_misreport is not None and max(o["duration"] for o in result.best_misreport["outcomes"]) >= 2
