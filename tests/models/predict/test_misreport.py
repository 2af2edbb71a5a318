"""The audit's feature family: with the declared law as reference no covering misreport of features gains (Thm 3.2
through the audit), and a shorter requested duration gains exactly the overrun evictions' unpaid prices, by hand."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism.engine import Engine
from models.audit import audit, covers
from models.predict.misreport import SCALES, feature_alternatives, feature_family
from models.predict.online import DurationEngine, EngineConfig, JobFeatures, Model, feature_sow
from tests.conftest import small_platform
from tests.mechanism.test_truthfulness import engine_with_history
from tests.models.test_audit import _estimates

ROUND = 60  # seconds


def _model(rng: np.random.Generator, completions: int) -> Model:
    """Random completions of two tenants over three programs, two queues and three tag sets."""
    engine = DurationEngine(EngineConfig(cold_start=5))
    for _ in range(completions):
        f = JobFeatures(nodes=int(rng.integers(1, 4)), requested_seconds=int(rng.integers(30, 181)),
                        executable=str(rng.choice(["a", "b", "c"])), queue=str(rng.choice(["", "q"])),
                        tags=(("gpu",), (), ("big", "gpu"))[int(rng.integers(0, 3))])
        engine.observe(str(rng.choice(["acme", "globex"])), f, int(rng.integers(1, f.requested_seconds + 1)))
    return engine.refit()


def test_the_family_scales_the_request_and_changes_each_tag_to_every_known_value() -> None:
    model = _model(np.random.default_rng(0), 60)
    assert (model.known.executable, model.known.queue) == (("a", "b", "c"), ("", "q"))
    assert model.known.tags == ((), ("big", "gpu"), ("gpu",))
    f = JobFeatures(nodes=1, requested_seconds=100, executable="a", queue="q", tags=("gpu",))
    family = list(feature_family(f, model))
    assert [g.requested_seconds for g in family[:len(SCALES)]] == [25, 50, 75, 125, 150, 200, 300, 400]
    assert [g.executable for g in family if g.executable != "a"] == ["b", "c"]
    assert [g.queue for g in family if g.queue != "q"] == [""]
    assert [g.tags for g in family if g.tags != ("gpu",)] == [(), ("big", "gpu")]
    assert len(family) == len(SCALES) + 2 + 1 + 2 and f not in family


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_with_the_declared_law_as_reference_no_covering_feature_misreport_gains(seed: int) -> None:
    e = engine_with_history(seed)[0]
    rng = np.random.default_rng(seed + 1)
    model = _model(rng, int(rng.integers(5, 80)))
    tenant = str(rng.choice(["acme", "globex"]))
    f = JobFeatures(nodes=int(rng.integers(1, 4)), requested_seconds=int(rng.integers(30, 181)),
                    executable=str(rng.choice(["a", "b", "new"])), tags=("gpu",))
    arrival = [(0, 0.7), (1, 0.3)] if rng.random() < 0.5 else [(0, 1.0)]
    steps = [[int(rng.integers(1, 5)), float(rng.uniform(1, 40))]]
    truth = feature_sow(f, arrival, steps, model.predict(tenant, f), ROUND, e.platform)
    family = [a for a in feature_alternatives(tenant, f, arrival, steps, model, ROUND, e.platform)
              if covers(a.sow, truth)]
    result = audit(truth, truth, family, e.now, e.prices.menu(e.now), _estimates(e))
    assert result.tried == len(family) > 0  # scaling the request up always covers
    assert result.best_gain <= 1e-9 * max(1.0, abs(result.declared_utility))
    assert result.best_misreport is None


def test_declaring_a_quarter_of_the_request_gains_the_price_of_the_outcome_that_finishes_late() -> None:
    # one program that runs 60 s or 240 s (1 or 4 rounds); the value, 40, ends 3 rounds after birth
    p = small_platform(C=4, samples=400, seed=1, D_m=4, S_m=8)
    e = Engine(p)
    engine = DurationEngine(EngineConfig(cold_start=5))
    for i in range(200):
        engine.observe("acme", JobFeatures(nodes=1, requested_seconds=240, executable="x"), 60 if i % 2 else 240)
    model = engine.refit()
    f = JobFeatures(nodes=1, requested_seconds=240, executable="x")
    truth = feature_sow(f, [(0, 1.0)], [[3, 40.0]], model.predict("acme", f), ROUND, p)
    assert [o.duration for o in truth.outcomes] == [1, 4]
    p_late = truth.outcomes[1].probability
    menu = e.prices.menu(e.now)
    assert _estimates(e)(1).announced[0, :4].tolist() == [0.0, 0.0, 0.0, 0.0]  # no history: no failures
    price_1, price_4 = menu.price(e.now, 1, 1), menu.price(e.now, 1, 4)
    # honest: start at birth; 1 round earns 40 - price_1, 4 rounds finish past the deadline and pay price_4
    honest = (1 - p_late) * (40.0 - price_1) - p_late * price_4
    assert honest > 0
    # declared 60 s (scale 0.25): the law is 1 round; the 4-round outcome is evicted at the cap and pays nothing
    result = audit(truth, truth, feature_alternatives("acme", f, [(0, 1.0)], [[3, 40.0]], model, ROUND, p),
                   e.now, menu, _estimates(e))
    assert result.declared_utility == pytest.approx(honest, rel=1e-12)
    assert result.best_gain == pytest.approx(p_late * price_4, rel=1e-12)
    assert result.best_misreport is not None and result.best_misreport["features"]["requested_seconds"] == 60
    assert [(o["arrival_offset"], o["duration"]) for o in result.best_misreport["sow"]["outcomes"]] == [(0, 1)]
    assert result.tried == len(SCALES)  # one program, one queue, no tags: only the scales
