"""The adaptive level's fit: the level recursion against statsmodels' simple exponential smoothing, the k-step
forecast error by hand, the grid choice on the fit rows only, and its options."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from models.capacity_fit import (
    LEVEL_WEIGHTS,
    fit_capacity_model,
    fit_level_weight,
    level_forecast_error,
    level_path,
    with_capacity,
)
from models.workloads import make_workload


def test_the_level_is_simple_exponential_smoothing_from_the_mean() -> None:
    from statsmodels.tsa.holtwinters import SimpleExpSmoothing

    y = np.random.default_rng(0).normal(10.0, 2.0, size=40)
    for lam in (0.1, 0.5):
        ses = SimpleExpSmoothing(y, initialization_method="known", initial_level=9.0).fit(
            smoothing_level=lam, optimized=False)
        assert np.allclose(level_path(y, 9.0, lam)[:-1], ses.fittedvalues, rtol=1e-12)  # mu_t predicts y_t


def test_the_level_forecast_error_is_the_mean_squared_k_step_error() -> None:
    y = np.array([4.0, 2.0, 3.0])
    # lam = 0.5, mean 4: mu = 4, 4, 3, 3. Origins t = 1, 2 (k = 1): forecasts mu_t + phi (y_{t-1} - mu_t).
    phi = 0.5
    f1 = [4.0 + phi * (4.0 - 4.0), 3.0 + phi * (2.0 - 3.0)]  # of y_1 = 2 and y_2 = 3
    f2 = [4.0 + phi**2 * (4.0 - 4.0)]  # k = 2 from t = 1: of y_2 = 3
    want = ((2.0 - f1[0]) ** 2 + (3.0 - f1[1]) ** 2 + (3.0 - f2[0]) ** 2) / 3
    assert level_forecast_error(y, 4.0, phi, 0.5, horizon=2) == pytest.approx(want, rel=1e-12)
    assert level_forecast_error(y, 4.0, phi, 0.5, horizon=5) == pytest.approx(want, rel=1e-12)  # no longer k


def test_the_grid_picks_a_fast_level_after_a_shift_and_none_without_one() -> None:
    rng = np.random.default_rng(1)
    shifted = np.concatenate([np.full(40, 18.0), np.full(40, 14.0)]) + rng.normal(0.0, 0.3, 80)
    assert fit_level_weight(shifted[:60], phi=0.9) == max(LEVEL_WEIGHTS)  # scored on rows 30-59 from 18's level
    flat = 16.0 + rng.normal(0.0, 1.0, 200)  # iid about a constant: the first half's mean is the best level
    assert fit_level_weight(flat, phi=0.0) <= 0.02
    assert fit_level_weight(np.full(10, 3.0), phi=0.5) == 0.0  # every lam ties: the smallest
    assert fit_level_weight(np.array([3.0, 4.0]), phi=0.5) == 0.0  # too short to score


def test_with_capacity_fits_the_level_on_the_fit_rows_only(tmp_path: Path) -> None:
    fit = [18, 19, 18, 17, 18, 14, 15, 14, 14, 13]  # the level falls inside the fit rows
    rows = [fit + [14] * 6, fit + [25] * 6]  # the played rows differ; the fitted lam must not
    w = make_workload("overload", seed=0, rounds=2)
    models = []
    for i, r in enumerate(rows):
        path = tmp_path / f"s{i}.csv"
        path.write_text("t,v\n" + "".join(f"{t},{v}\n" for t, v in enumerate(r)), encoding="utf-8")
        models.append(with_capacity(w, str(path), "forecast", fit_rows=10, level_weight="fit").platform.capacity)
        default = with_capacity(w, str(path), "forecast", fit_rows=10).platform.capacity
        assert default == models[-1]  # the default fits the level
        mean = with_capacity(w, str(path), "forecast", fit_rows=10, level_weight=0.0).platform.capacity
        assert mean is not None and mean.level_weight == 0.0
        fixed = with_capacity(w, str(path), "forecast", fit_rows=10, level_weight=0.2).platform.capacity
        assert fixed is not None and fixed.level_weight == 0.2
    assert models[0] == models[1] and models[0] is not None and models[0].level_weight > 0.0
    scaled = np.floor(np.array(fit) * 16 / np.mean(fit) + 0.5)
    base = fit_capacity_model(scaled.astype(np.int64))
    assert models[0].model_copy(update={"level_weight": 0.0}) == base
    assert models[0].level_weight == fit_level_weight(scaled, base.phi)


@pytest.mark.parametrize(("lam", "match"), [
    ("best", r"capacity_level_weight best: neither a number in \[0, 1\) nor 'fit'"),
    (1.0, r"capacity_level_weight 1.0: outside \[0, 1\)"), (-0.5, "outside")])
def test_bad_level_weights_are_refused(tmp_path: Path, lam: float | str, match: str) -> None:
    path = tmp_path / "s.csv"
    path.write_text("t,v\n0,1\n1,2\n2,3\n3,2\n", encoding="utf-8")
    with pytest.raises(ValueError, match=match):
        with_capacity(make_workload("overload", seed=0, rounds=1), str(path), "forecast", level_weight=lam)
