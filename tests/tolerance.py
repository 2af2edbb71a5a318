"""One tolerance for numbers that come out of BLAS/LAPACK-backed fits (scikit-learn, statsmodels, numpy.linalg,
HiGHS): their last bits depend on the machine's kernels, so tests compare them with this, never with `==`."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

# Two machines' fits of the same rows differ by a few ulps (seen: 9e-16 in an error atom, 4e-18 in a weight, between
# OpenBLAS's SkylakeX and Haswell kernels); a real change to a fit moves it by far more than this.
FIT_RTOL = 1e-9
FIT_ATOL = 1e-12


def assert_fit_close(actual: object, expected: object, rtol: float = FIT_RTOL, atol: float = FIT_ATOL,
                     where: str = "") -> None:
    """`actual` equals `expected` field by field, floats within rtol/atol; strings, bools, ints and keys exactly."""
    here = where or "value"
    if isinstance(expected, Mapping):
        assert isinstance(actual, Mapping), f"{here}: {actual!r} is not a mapping"
        assert set(actual) == set(expected), f"{here}: keys {sorted(actual)} != {sorted(expected)}"
        for key in expected:
            assert_fit_close(actual[key], expected[key], rtol, atol, f"{here}.{key}")
    elif isinstance(expected, Sequence) and not isinstance(expected, str):
        assert isinstance(actual, Sequence) and not isinstance(actual, str), f"{here}: {actual!r} is not a sequence"
        assert len(actual) == len(expected), f"{here}: length {len(actual)} != {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_fit_close(a, e, rtol, atol, f"{here}[{i}]")
    elif isinstance(expected, float) and not isinstance(actual, bool) and isinstance(actual, (int, float)):
        assert math.isclose(actual, expected, rel_tol=rtol, abs_tol=atol), f"{here}: {actual!r} != {expected!r}"
    else:
        assert actual == expected, f"{here}: {actual!r} != {expected!r}"
