"""Platform bounds and the mechanism's derived parameters (docs/model.md sections 1, 4, 5) at hand-computed points."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from mechanism.platform import Platform, hoeffding_radius, lemma_f1_samples

BASE: dict[str, object] = {"C": 100, "C_m": 10, "D_m": 3, "S_m": 6, "H": 50.0}


def platform(**kw: object) -> Platform:
    return Platform(**{**BASE, **kw})


def test_simulator_capacity_is_c_times_one_minus_epsilon_over_ten() -> None:
    assert platform(epsilon=0.1).sim_capacity == pytest.approx(99.0, rel=1e-15)  # 100 (1 - 0.01)
    assert platform(C=40, epsilon=0.5).sim_capacity == pytest.approx(38.0, rel=1e-15)  # 40 (1 - 0.05)


def test_failure_threshold_is_epsilon_over_ten_plus_eps0() -> None:
    assert platform(epsilon=0.1, eps0=0.02).failure_threshold == pytest.approx(0.03, rel=1e-15)
    assert platform(epsilon=0.5, eps0=0.2).failure_threshold == pytest.approx(0.25, rel=1e-15)


def test_horizon_is_the_last_start_s_m_minus_one_plus_the_longest_duration() -> None:
    assert platform().horizon == 8  # starts 0..5, then up to 3 rounds: rounds 0..7
    assert platform(S_m=1, D_m=1).horizon == 1


def test_lemma_f1_samples_rounds_up_the_formula() -> None:
    # 2 ln(3 * 6 / 0.05) / 0.05^2 = 800 ln 360 = 4708.88... -> 4709
    assert lemma_f1_samples(3, 6, 0.05, 0.05) == 4709
    # 2 ln(18 / 0.01) / 0.02^2 = 5000 ln 1800 = 37477.7... -> 37478
    assert lemma_f1_samples(3, 6, 0.02, 0.01) == 37478


def test_sample_count_is_the_explicit_samples_else_lemma_f1() -> None:
    assert platform(samples=123).sample_count == 123
    assert platform(eps0=0.05, delta0=0.05).sample_count == 4709


def test_hoeffding_radius_inverts_lemma_f1() -> None:
    # sqrt(2 ln 360 / 4709) = 0.04999938...: the sample count of Lemma F.1 reaches its eps0
    assert hoeffding_radius(4709, 3, 6, 0.05) == pytest.approx(0.04999938004, rel=1e-9)
    assert hoeffding_radius(800, 3, 6, 0.05) == pytest.approx(math.sqrt(math.log(360) / 400), rel=1e-12)


def test_concurrency_bound_above_the_node_count_is_refused() -> None:
    with pytest.raises(ValidationError, match="C_m=101 exceeds the bound C=100"):
        platform(C_m=101)
    assert platform(C_m=100).C_m == 100  # equal is allowed


def test_the_mechanism_parameters_default_to_the_documented_values() -> None:
    p = Platform(C=4, C_m=2, D_m=3, S_m=6, H=10.0)
    assert (p.epsilon, p.eps0, p.delta0, p.seed, p.samples) == (0.1, 0.02, 0.01, 0, None)


@pytest.mark.parametrize(("field", "top", "match"), [
    ("C", 1_000_000, "less than or equal to 1000000"),
    ("D_m", 10_000, "less than or equal to 10000"),
    ("S_m", 10_000, "less than or equal to 10000"),
    ("H", 1e12, "less than or equal to 1000000000000"),
])
def test_a_bound_is_accepted_at_its_limit_and_refused_above(field: str, top: float, match: str) -> None:
    assert getattr(platform(**{field: top}), field) == top
    above = top + 1 if isinstance(top, int) else top * 2
    with pytest.raises(ValidationError, match=rf"{field}\n.*{match}"):
        platform(**{field: above})


@pytest.mark.parametrize("field", ["eps0", "delta0", "epsilon"])
def test_an_accuracy_or_confidence_of_1_is_refused(field: str) -> None:
    with pytest.raises(ValidationError, match=rf"{field}\n.*less than 1"):
        platform(**{field: 1.0})


def test_seed_and_samples_are_bounded() -> None:
    assert platform(seed=2**63 - 1).seed == 2**63 - 1  # the largest seed the random streams take
    with pytest.raises(ValidationError, match=r"seed\n.*less than 9223372036854775808"):
        platform(seed=2**63)
    assert platform(samples=10_000_000).samples == 10_000_000
    with pytest.raises(ValidationError, match=r"samples\n.*less than or equal to 10000000"):
        platform(samples=10_000_001)


def test_a_platform_is_frozen_and_refuses_unknown_fields() -> None:
    p = platform()
    with pytest.raises(ValidationError, match="frozen"):
        p.C = 5  # type: ignore[misc]
    with pytest.raises(ValidationError, match=r"typo\n.*Extra inputs are not permitted"):
        platform(typo=1)


def test_the_overload_rule_defaults_to_remark_2_and_is_written_out_only_when_it_differs() -> None:
    p = Platform(C=4, C_m=2, D_m=2, S_m=3, H=5.0)
    assert p.overload == "newest" and p.cancels_waiting and "overload" not in p.model_dump()
    q = Platform(C=4, C_m=2, D_m=2, S_m=3, H=5.0, overload="newest_demanding")
    assert not q.cancels_waiting and q.model_dump()["overload"] == "newest_demanding"
    assert Platform.model_validate(q.model_dump()) == q


def test_an_unknown_overload_rule_is_refused_naming_the_field() -> None:
    with pytest.raises(ValidationError, match=r"overload\n  Input should be 'newest' or 'newest_demanding'"):
        Platform(C=4, C_m=2, D_m=2, S_m=3, H=5.0, overload="oldest")
