"""Rolling least squares against numpy's lstsq on every window."""

import numpy as np
import pytest

from models.forecast.rolling import rolling_ols


def test_rolling_ols_equals_lstsq_on_each_window() -> None:
    rng = np.random.default_rng(0)
    design = np.column_stack([np.ones(200), rng.normal(size=200), rng.normal(size=200)])
    target = design @ np.array([1.0, 2.0, -0.5]) + rng.normal(size=200)
    begins = np.array([0, 10, 50, 150])
    ends = np.array([30, 100, 60, 200])
    fit = rolling_ols(design, target, begins, ends)
    for i, (b, e) in enumerate(zip(begins, ends, strict=True)):
        beta, ssr, *_ = np.linalg.lstsq(design[b:e], target[b:e], rcond=None)
        assert fit.beta[i] == pytest.approx(beta, rel=1e-8)
        assert fit.ssr[i] == pytest.approx(ssr[0], rel=1e-6)
        assert fit.n[i] == e - b


def test_rolling_ols_refuses_short_or_outside_windows() -> None:
    design = np.ones((10, 2))
    with pytest.raises(ValueError, match="at least 2 rows"):
        rolling_ols(design, np.zeros(10), np.array([0]), np.array([1]))
    with pytest.raises(ValueError, match="do not match"):
        rolling_ols(design, np.zeros(9), np.array([0]), np.array([5]))
