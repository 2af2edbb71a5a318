"""SoW validation: every rule of docs/model.md sections 1-2 gives a clear error naming field, value and bound."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from pydantic import ValidationError

from mechanism.platform import MAX_OUTCOMES, Platform
from mechanism.sow import SoW

P = Platform(C=10, C_m=4, D_m=5, S_m=10, H=100.0)


def sow(**kw: object) -> dict[str, object]:
    base: dict[str, object] = {"concurrency": 2, "value_steps": [[4, 50.0], [8, 10.0]],
                               "outcomes": [[0, 2, 0.5], [1, 3, 0.5]]}
    base.update(kw)
    return base


def test_valid_sow_parses_rows_and_dicts() -> None:
    s = SoW.parse(sow(outcomes=[[0, 2, 0.25, "x"], {"arrival_offset": 1, "duration": 3, "probability": 0.75}]), P)
    assert s.signals == ("x", None)
    assert s.table.groups == ((0, "x"), (1, None))


def test_value_is_first_step_at_or_after_completion_offset_else_zero() -> None:
    s = SoW.parse(sow(), P)
    assert s.value(np.array([1, 4, 5, 8, 9])).tolist() == [50.0, 50.0, 10.0, 10.0, 0.0]


def test_duration_signal_mode_labels_each_outcome_with_its_duration() -> None:
    s = SoW.parse(sow(signal_mode="duration"), P)
    assert s.signals == ("2", "3")


def test_integer_signals_are_the_same_label_as_their_text() -> None:
    s = SoW.parse(sow(outcomes=[[0, 2, 0.5, 3], [1, 3, 0.5, "3"]]), P)
    assert s.signals == ("3", "3")


@pytest.mark.parametrize(("data", "match"), [
    (sow(outcomes=[[0, 2, 0.5], [1, 3, 0.4]]), r"sum to 0\.9.*not 1"),
    (sow(outcomes=[[0, 2, 0.0], [1, 3, 1.0]]), r"greater than 0"),
    (sow(outcomes=[[0, 2, -0.5], [1, 3, 1.5]]), r"greater than 0"),
    (sow(outcomes=[]), r"at least 1"),
    (sow(value_steps=[]), r"at least 1"),
    (sow(value_steps=[[4, 10.0], [8, 50.0]]), r"value_steps\[1\] value v=50\.0 must be below the previous v=10\.0"),
    (sow(value_steps=[[4, 50.0], [4, 10.0]]), r"value_steps\[1\] deadline k=4 must exceed the previous k=4"),
    (sow(value_steps=[[0, 50.0]]), r"deadline k=0 is below the bound 1"),
    (sow(value_steps=[[4, float("nan")]]), r"positive and finite"),
    (sow(outcomes=[[0, 6, 1.0]]), r"outcomes\[0\]\.duration=6 exceeds the bound D_m=5"),
    (sow(outcomes=[[0, 0, 1.0]]), r"greater than or equal to 1"),
    (sow(outcomes=[[10, 1, 1.0]]), r"arrival_offset=10 exceeds the bound S_m-1=9"),
    (sow(outcomes=[[-1, 1, 1.0]]), r"greater than or equal to 0"),
    (sow(concurrency=5), r"concurrency=5 exceeds the bound C_m=4"),
    (sow(concurrency=0), r"greater than or equal to 1"),
    (sow(value_steps=[[11, 50.0]]), r"deadline k=11 exceeds the bound S_m=10"),
    (sow(value_steps=[[4, 150.0]]), r"value v=150\.0 exceeds the bound H=100\.0"),
    (sow(value_steps=[[4, 50.0], [8, 0.5]]), r"value v=0\.5 is below the bound 1"),
    (sow(outcomes=[[0, 2, 0.5], [0, 2, 0.5]]), r"outcomes\[1\] repeats \(arrival_offset=0, duration=2\)"),
    (sow(outcomes=[[0, 2, 0.5, "a"], [1, 3, 0.5]], signal_mode="none"), r"signal='a' given but signal_mode is 'none'"),
    (sow(outcomes=[[0, 2, 0.5, "9"], [1, 3, 0.5]], signal_mode="duration"), r"differs from its duration"),
    (sow(outcomes=[[0, 2]]), r"has 2 fields"),
    (sow(outcomes=[[0, 2, 1.0, True]]), r"signal must be text"),
    (sow(extra=1), r"Extra inputs are not permitted"),
])
def test_invalid_sow_is_rejected_with_a_clear_message(data: dict[str, object], match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        SoW.parse(data, P)


def test_support_above_the_outcome_bound_is_rejected() -> None:
    P_big = Platform(C=10, C_m=4, D_m=200, S_m=100, H=100.0)
    n = MAX_OUTCOMES + 1
    rows = [[a, d, 1.0 / n] for a in range(100) for d in range(1, 200)][:n]
    with pytest.raises(ValidationError, match=rf"outcomes has {n} entries, above the bound {MAX_OUTCOMES}"):
        SoW.parse(sow(outcomes=rows), P_big)


def test_support_at_the_outcome_bound_is_accepted() -> None:
    P_big = Platform(C=10, C_m=4, D_m=200, S_m=100, H=100.0)
    n = MAX_OUTCOMES
    rows = [[a, d, 1.0 / n] for a in range(100) for d in range(1, 101)][:n]
    assert len(SoW.parse(sow(outcomes=rows), P_big).outcomes) == n


def test_bounds_are_checked_only_with_a_platform() -> None:
    s = SoW.model_validate(sow(concurrency=9))
    with pytest.raises(ValueError, match="concurrency=9 exceeds the bound C_m=4"):
        s.check_bounds(P)


@pytest.mark.parametrize(("kw", "match"), [
    ({"C_m": 11}, r"C_m=11 exceeds the bound C=10"),
    ({"C": 0}, r"greater than or equal to 1"),
    ({"H": 0.5}, r"greater than or equal to 1"),
    ({"epsilon": 1.0}, r"less than 1"),
    ({"samples": 0}, r"greater than or equal to 1"),
])
def test_invalid_platform_is_rejected(kw: dict[str, object], match: str) -> None:
    params: dict[str, object] = {"C": 10, "C_m": 4, "D_m": 5, "S_m": 10, "H": 100.0}
    params.update(kw)
    with pytest.raises(ValidationError, match=match):
        Platform(**params)


def test_lemma_f1_sample_count_matches_the_formula() -> None:
    p = Platform(C=1000, C_m=16, D_m=48, S_m=96, H=100.0, eps0=0.02, delta0=0.01)
    # T = 2 ln(D_m S_m / delta0) / eps0^2 = 5000 * 2 * ln(460800) = 5000 * 2 * 13.04076 = 65,203.8 -> 65,204
    assert p.sample_count == 65204


def test_any_text_label_sorts_into_its_group_numeric_labels_by_value() -> None:
    # '²' is a digit to str.isdigit but no decimal number: it is a text label like any other, not a crash.
    s = SoW.parse(sow(outcomes=[[0, 1, 0.2, "²"], [0, 2, 0.2, "10"], [0, 3, 0.2, "9"], [0, 4, 0.2, "x"],
                                [1, 2, 0.2]]), P)
    assert s.group_keys() == [(0, "9"), (0, "10"), (0, "x"), (0, "²"), (1, None)]
    assert s.table.groups == tuple(s.group_keys())


def test_a_decimal_label_of_any_length_sorts_by_value() -> None:
    # int() refuses strings above 4,300 digits; the label is still a number, larger than any shorter one.
    huge = "9" * 5000
    s = SoW.parse(sow(outcomes=[[0, 1, 0.25, huge], [0, 2, 0.25, "0010"], [0, 3, 0.25, "9"], [0, 4, 0.25, "١٠"]]), P)
    assert s.group_keys() == [(0, "9"), (0, "0010"), (0, "١٠"), (0, huge)]


@pytest.mark.parametrize(("change", "match"), [
    ({"concurrency": True}, r"True is a boolean, not a number"),
    ({"concurrency": "2"}, r"'2' is text, not a number"),
    ({"value_steps": [[True, 10.0]]}, r"value_steps\[0\] deadline k=True is not a number"),
    ({"value_steps": [[4, "10"]]}, r"value_steps\[0\] value v='10' is not a number"),
    ({"outcomes": [[False, 1, 1.0]]}, r"False is a boolean, not a number"),
    ({"outcomes": [[0, 1, "1"]]}, r"'1' is text, not a number"),
])
def test_booleans_and_text_are_not_read_as_numbers(change: dict[str, object], match: str) -> None:
    """pydantic's lax mode would read true as 1 and "2" as 2: a file saying so is a mistake to name, not a count."""
    data = {"concurrency": 1, "value_steps": [[4, 10.0]], "outcomes": [[0, 1, 1.0]], **change}
    with pytest.raises(ValidationError, match=match):
        SoW.parse(data, P)
    assert SoW.parse({"concurrency": 2, "value_steps": [[4, 10]], "outcomes": [[0, 1, 1]]}, P).concurrency == 2


@pytest.mark.parametrize("field", ["C", "H", "seed", "samples"])
def test_platform_numbers_refuse_booleans_and_text(field: str) -> None:
    params: dict[str, object] = {"C": 10, "C_m": 4, "D_m": 5, "S_m": 10, "H": 100.0}
    for bad, what in ((True, "a boolean"), ("7", "text")):
        with pytest.raises(ValidationError, match=f"{field}\n.*{bad!r} is {what}, not a number"):
            Platform(**{**params, field: bad})


@pytest.mark.parametrize("signal_mode", ["explicit", "none", "duration"])
def test_a_pickled_sow_unpickles_equal_with_its_fields_set_and_derived_views(signal_mode: str) -> None:
    from tests.conftest import random_sow
    rng = np.random.default_rng(11)
    for _ in range(40):
        sow = random_sow(rng, P, max_outcomes=8, signal_mode=signal_mode)
        sow.table  # noqa: B018  the cached views are not pickled: they are rebuilt on use
        back = pickle.loads(pickle.dumps(sow, protocol=pickle.HIGHEST_PROTOCOL))
        assert back == sow and back.model_dump_json() == sow.model_dump_json()
        assert back.model_fields_set == sow.model_fields_set
        assert [o.model_fields_set for o in back.outcomes] == [o.model_fields_set for o in sow.outcomes]
        assert back.signals == sow.signals and back.group_keys() == sow.group_keys()
        for name in ("arrival", "duration", "probability", "group"):
            np.testing.assert_array_equal(getattr(back.table, name), getattr(sow.table, name))


def test_a_sow_pickles_as_plain_fields_keeping_which_were_given() -> None:
    # Given as dicts without a signal or a signal mode: those fields stay unset through a pickle.
    sow = SoW.parse({"concurrency": 2, "value_steps": [[6, 20.0]],
                     "outcomes": [{"arrival_offset": 0, "duration": 2, "probability": 0.25},
                                  {"arrival_offset": 1, "duration": 3, "probability": 0.75, "signal": 7}]}, P)
    blob = pickle.dumps(sow, protocol=pickle.HIGHEST_PROTOCOL)
    assert b"__pydantic_fields_set__" not in blob and b"table" not in blob  # no per-model state, no cached views
    back = pickle.loads(blob)
    assert back.model_fields_set == {"concurrency", "value_steps", "outcomes"}
    assert back.outcomes[0].model_fields_set == {"arrival_offset", "duration", "probability"}
    assert (back.outcomes[1].signal, back.signals) == ("7", (None, "7"))


def test_a_sow_pickles_every_field_of_itself_and_of_its_outcomes() -> None:
    # SoW.__reduce__ names the fields one by one: a field added later must be added there too, or a snapshot would
    # bring it back as its default. A distinct value in every field (model_construct does not validate them).
    from typing import Any

    from mechanism.sow import Outcome
    outcome_fields: dict[str, Any] = {name: ("outcome", name) for name in Outcome.model_fields}
    sow_fields: dict[str, Any] = {name: ("sow", name) for name in SoW.model_fields if name != "outcomes"}
    outcome = Outcome.model_construct(**outcome_fields)
    sow = SoW.model_construct(**sow_fields, outcomes=(outcome,))
    back = pickle.loads(pickle.dumps(sow, protocol=pickle.HIGHEST_PROTOCOL))
    assert {name: getattr(back, name) for name in sow_fields} == sow_fields
    assert {name: getattr(back.outcomes[0], name) for name in outcome_fields} == outcome_fields


def test_a_sow_with_signals_that_look_like_numbers_and_a_full_support_unpickles_equal() -> None:
    # every (arrival, duration) the platform allows, signals 3 (an integer), "3", "03", "3.0", "1e3" and none: each
    # stays the text it was validated to, in its outcome
    pairs = [(a, d) for a in range(P.S_m) for d in range(1, P.D_m + 1)]
    labels: list[object] = [3, "3", "03", "3.0", "1e3", None]
    rows = [{"arrival_offset": a, "duration": d, "probability": 1 / len(pairs), "signal": labels[i % len(labels)]}
            for i, (a, d) in enumerate(pairs)]
    sow = SoW.parse({"concurrency": 1, "value_steps": [[P.S_m, 20]], "outcomes": rows}, P)
    sow.table  # noqa: B018
    back = pickle.loads(pickle.dumps(sow, protocol=pickle.HIGHEST_PROTOCOL))
    assert back == sow and back.model_dump_json() == sow.model_dump_json() and back.group_keys() == sow.group_keys()
    assert [o.signal for o in back.outcomes[:6]] == ["3", "3", "03", "3.0", "1e3", None]
    np.testing.assert_array_equal(back.table.group, sow.table.group)


def test_equal_sows_compare_equal_once_their_cached_tables_are_built() -> None:
    import copy
    a = SoW.parse({"concurrency": 1, "value_steps": [[6, 5.0]], "outcomes": [[0, 2, 0.5], [1, 3, 0.5]]}, P)
    b = SoW.parse({"concurrency": 1, "value_steps": [[6, 5.0]], "outcomes": [[0, 2, 0.5], [1, 3, 0.5]]}, P)
    a.table, b.table  # noqa: B018  both cached
    assert a == b and copy.deepcopy(a) == a
    c = SoW.parse({"concurrency": 2, "value_steps": [[6, 5.0]], "outcomes": [[0, 2, 0.5], [1, 3, 0.5]]}, P)
    c.table  # noqa: B018
    assert a != c


def test_a_sow_at_every_bound_is_accepted() -> None:
    # concurrency = C_m, first k = 1, last k = S_m, first v = H, last v = 1, duration = D_m, arrival = S_m - 1
    s = SoW.parse(sow(concurrency=4, value_steps=[[1, 100.0], [10, 1.0]], outcomes=[[9, 5, 0.5], [0, 1, 0.5]]), P)
    assert (s.concurrency, s.value_steps, s.table.groups) == (4, ((1, 100.0), (10, 1.0)), ((0, None), (9, None)))


def test_probabilities_may_miss_1_by_the_tolerance_and_no_more() -> None:
    assert len(SoW.parse(sow(outcomes=[[0, 2, 0.5], [1, 3, 0.5 + 0.5e-9]]), P).outcomes) == 2
    with pytest.raises(ValidationError, match=r"sum to 1\.0000000015\d*, not 1 \(tolerance 1e-09\)"):
        SoW.parse(sow(outcomes=[[0, 2, 0.5], [1, 3, 0.5 + 1.5e-9]]), P)


def test_more_than_10000_value_steps_are_refused_even_without_a_platform() -> None:
    steps = [[k, 20_000.0 - k] for k in range(1, 10_002)]
    with pytest.raises(ValidationError, match="at most 10000 items"):
        SoW.model_validate(sow(value_steps=steps))
    assert len(SoW.model_validate(sow(value_steps=steps[:10_000])).value_steps) == 10_000


@pytest.mark.parametrize(("steps", "match"), [
    ([[4, 0.0]], r"value_steps\[0\] value v=0\.0 must be positive and finite"),  # not merely below the bound 1
    ([[4, 50.0], [8, 50.0]], r"value_steps\[1\] value v=50\.0 must be below the previous v=50\.0"),  # strictly
])
def test_a_zero_value_or_a_repeated_value_step_is_refused(steps: list[list[float]], match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        SoW.parse(sow(value_steps=steps), P)


def test_at_one_arrival_the_unlabelled_group_comes_first_then_numbers_by_value_then_text() -> None:
    s = SoW.parse(sow(outcomes=[[0, 1, 0.25, "x"], [0, 2, 0.25, "10"], [0, 3, 0.25], [0, 4, 0.25, "9"]]), P)
    assert s.table.groups == ((0, None), (0, "9"), (0, "10"), (0, "x"))
