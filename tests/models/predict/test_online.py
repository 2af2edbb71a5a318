"""The platform's prediction engine: cold start, learning per program, content-hashed versions, fits swapped whole."""

from __future__ import annotations

import math

import numpy as np
import pytest

from models.predict.online import DurationEngine, EngineConfig, JobFeatures, Prediction, model_version, rounds_of


def _engine(completions: int, cold_start: int = 20) -> DurationEngine:
    """Two programs with the same request: 'short' runs about 100 s, 'long' about 3,000 s."""
    rng = np.random.default_rng(0)
    engine = DurationEngine(EngineConfig(cold_start=cold_start))
    for i in range(completions):
        program = "short" if i % 2 else "long"
        seconds = int(rng.integers(80, 121)) if program == "short" else int(rng.integers(2500, 3501))
        engine.observe("alice", JobFeatures(nodes=2, requested_seconds=4000, executable=program), seconds)
    return engine


def _mass_below(p: Prediction, bound: float) -> float:
    return math.fsum(q for x, q in zip(p.seconds, p.probs, strict=True) if x <= bound)


def test_before_the_cold_start_ends_the_law_is_the_requested_duration_as_a_point() -> None:
    engine = _engine(19)
    engine.refit()
    p = engine.predict("alice", JobFeatures(nodes=2, requested_seconds=4000, executable="short"))
    assert (p.seconds, p.probs, p.trained) == ((4000.0,), (1.0,), 19)


def test_learned_laws_follow_each_programs_observed_durations_and_are_capped_at_the_request() -> None:
    engine = _engine(300)
    engine.refit()
    short = engine.predict("alice", JobFeatures(nodes=2, requested_seconds=4000, executable="short"))
    long = engine.predict("alice", JobFeatures(nodes=2, requested_seconds=4000, executable="long"))
    assert short.trained == long.trained == 300
    assert _mass_below(short, 120) > 0.8 and _mass_below(long, 120) < 0.2
    capped = engine.predict("alice", JobFeatures(nodes=2, requested_seconds=1000, executable="long"))
    assert max(capped.seconds) == 1000.0 and math.isclose(math.fsum(capped.probs), 1.0)


def test_the_model_version_is_the_hash_of_the_training_set_and_configuration() -> None:
    a, b = _engine(50), _engine(50)
    assert a.refit().version == b.refit().version == model_version(a.config, a._rows)
    assert _engine(51).refit().version != a.model.version
    assert _engine(50, cold_start=21).refit().version != a.model.version


def test_a_refit_swaps_a_new_model_in_whole_and_leaves_the_old_one_answering_as_before() -> None:
    engine = _engine(30)
    old = engine.refit()
    query = JobFeatures(nodes=2, requested_seconds=4000, executable="short")
    before = old.predict("alice", query)
    engine.observe("alice", query, 100)
    new = engine.refit()
    assert new is engine.model and new is not old and new.trained == 31
    assert old.predict("alice", query) == before
    assert engine.refit(upto=30).version == old.version  # a rebuild on the same prefix: the same model


def test_durations_map_to_rounds_by_ceiling_capped_at_d_max() -> None:
    law = Prediction((30.0, 60.0, 61.0, 600.0), (0.25, 0.25, 0.25, 0.25), "v", 4)
    assert rounds_of(law, 60, 5) == [(1, 0.5), (2, 0.25), (5, 0.25)]


def test_invalid_configuration_and_features_are_refused() -> None:
    with pytest.raises(ValueError, match="cold_start=0 must be >= 1"):
        EngineConfig(cold_start=0)
    with pytest.raises(ValueError, match="requested_seconds"):
        JobFeatures(nodes=1, requested_seconds=0)


def test_the_default_configuration_hashes_without_the_refit_growth_field() -> None:
    # a field added with its default None leaves every model version of the default configuration as it was
    assert "refit_growth" not in EngineConfig().to_dict()["learned"]  # type: ignore[operator]


def _conformal(completions: int, gamma: float, quoted: float) -> DurationEngine:
    """`_engine`'s completions learned by an engine with conformal laws, each quoted `quoted` seconds."""
    plain = _engine(completions)
    engine = DurationEngine(EngineConfig(conformal_gamma=gamma))
    for r in plain._rows:
        engine.observe(r.tenant, r.features, r.seconds, quoted)
    return engine


def test_conformal_laws_are_off_by_default_and_leave_every_version_as_it_was() -> None:
    plain = _engine(50)
    assert "conformal_gamma" not in EngineConfig().to_dict() and EngineConfig().rule() is None
    plain.observe("alice", JobFeatures(nodes=2, requested_seconds=4000), 100, quoted=5.0)  # ignored when off
    assert plain._rows[-1].quoted is None and len(plain._rows[-1].to_json()) == 3
    on = _conformal(50, 0.02, 3600.0)
    assert on.config.to_dict()["conformal_gamma"] == 0.02
    assert on.refit().version != _engine(50).refit().version


def test_a_conformal_models_alpha_is_acis_update_over_its_training_set_in_order() -> None:
    # quoted 3,600 s: the 'long' jobs (2,500-3,500 s) are covered, and so are the 'short' ones; quoted 1,000 s:
    # every 'long' job is a miss
    from models.predict.adaptive import AciRule

    for quoted, misses in ((3600.0, 0), (1000.0, 25)):
        model = _conformal(50, 0.02, quoted).refit()
        assert model.alpha == pytest.approx(0.1 + 0.02 * (50 * 0.1 - misses))
        alpha = AciRule(gamma=0.02).alpha_1
        for r in _conformal(50, 0.02, quoted)._rows:
            alpha, _ = AciRule(gamma=0.02).step(alpha, r.seconds, quoted)
        assert model.alpha == alpha


@pytest.mark.parametrize(("quoted", "gamma"), [(3600.0, 0.02), (1000.0, 0.02), (-math.inf, 0.01), (math.inf, 0.04)])
def test_a_conformal_law_keeps_the_learned_support_and_cap_and_quotes_the_learned_one_minus_alpha_quantile(
        quoted: float, gamma: float) -> None:
    # every completion a miss (quoted -inf) drives alpha below 0, none (inf) above 1 at gamma = 0.04
    from models.predictive import Discrete

    query = JobFeatures(nodes=2, requested_seconds=4000, executable="long")
    plain = _engine(300).refit().predict("alice", query)
    engine = _conformal(300, gamma, quoted)
    model = engine.refit()
    p = model.predict("alice", query)
    assert p.alpha == model.alpha and set(p.seconds) <= set(plain.seconds)
    assert math.isclose(math.fsum(p.probs), 1.0) and max(p.seconds) <= 4000.0
    law, inner = Discrete(np.asarray(p.seconds), np.asarray([p.probs])), \
        Discrete(np.asarray(plain.seconds), np.asarray([plain.probs]))
    alpha = model.alpha
    assert alpha is not None and (math.isfinite(quoted) or (alpha <= 0 if quoted < 0 else alpha >= 1))
    if alpha <= 0:  # every duration: the request
        assert float(law.quantile(0.9)[0]) == max(plain.seconds)
    elif alpha >= 1:
        assert float(law.quantile(0.9)[0]) == min(plain.seconds)
    else:
        assert float(law.quantile(0.9)[0]) == float(inner.quantile(1 - alpha)[0])


def test_conformal_laws_refuse_a_bad_step_and_a_completion_without_its_quoted_quantile() -> None:
    with pytest.raises(ValueError, match=r"conformal_gamma=0.0 must lie in \(0, 1\]"):
        EngineConfig(conformal_gamma=0.0)
    with pytest.raises(ValueError, match=r"conformal_gamma=1.5 must lie in \(0, 1\]"):
        EngineConfig(conformal_gamma=1.5)
    with pytest.raises(ValueError, match="quoted is missing"):
        DurationEngine(EngineConfig(conformal_gamma=0.02)).observe("alice", JobFeatures(nodes=1,
                                                                                       requested_seconds=60), 60)
