"""The fit tolerance accepts a few ulps of machine noise and nothing a real change to a fit would make."""

from __future__ import annotations

import pytest

from tests.tolerance import assert_fit_close


def test_fits_that_differ_by_machine_noise_compare_equal() -> None:
    want = {"mean": 15.97, "errors": [-4.604689202722941, 0.003425820851323369], "weights": [0.5, 0.5], "low": 0}
    got = {"mean": 15.97, "errors": [-4.604689202722941 + 9e-16, 0.003425820851323369], "weights": [0.5 + 4e-18, 0.5],
           "low": 0}
    assert_fit_close(got, want)


@pytest.mark.parametrize(("got", "match"), [
    ({"mean": 15.98, "low": 0}, r"value\.mean: 15\.98 != 15\.97"),
    ({"mean": 15.97, "low": 1}, r"value\.low: 1 != 0"),
    ({"mean": 15.97}, r"keys"),
])
def test_a_changed_fit_is_refused_naming_the_field(got: dict[str, object], match: str) -> None:
    with pytest.raises(AssertionError, match=match):
        assert_fit_close(got, {"mean": 15.97, "low": 0})


def test_sequences_must_have_the_same_length() -> None:
    with pytest.raises(AssertionError, match=r"value\.errors: length 1 != 2"):
        assert_fit_close({"errors": [1.0]}, {"errors": [1.0, 2.0]})
