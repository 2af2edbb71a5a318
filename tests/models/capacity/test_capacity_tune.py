"""Choosing q on the fit rows: the replays play exactly the fit rows, never the held-out ones; the choice is the grid's
largest mean welfare (the default on a tie), each q's welfare is what its replays give run by run, and bad grids are
refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mechanism.capacity import DEFAULT_QUANTILE
from models.capacity_fit import scaled_rows, with_capacity
from models.capacity_tune import QUANTILE_GRID, tune_quantile
from models.simulation import Workload, run_simulation
from models.workloads import make_workload

FIT = 12  # fit rows of the test series


def series(tmp_path: Path, fit: list[int], held_out: list[int], name: str = "s.csv") -> str:
    path = tmp_path / name
    path.write_text("t,cores\n" + "".join(f"{i},{c}\n" for i, c in enumerate(fit + held_out)), encoding="utf-8")
    return str(path)


def overload(seed: int) -> Workload:
    return make_workload("overload", seed=seed, rounds=6)


FIT_ROWS = [16, 15, 13, 12, 14, 16, 17, 18, 16, 11, 12, 16]
HELD_OUT = [16, 16, 17, 15, 16, 16]


def test_the_replays_play_the_fit_rows_from_their_start(tmp_path: Path) -> None:
    spec = series(tmp_path, FIT_ROWS, HELD_OUT)
    fitted, played = scaled_rows(spec, 16, fit_rows=FIT)
    w = with_capacity(overload(0), spec, "forecast", start=5, fit_rows=FIT, replay_fit_rows=True)
    assert list(w.capacity or ()) == np.roll(fitted, -5).tolist()
    assert list(with_capacity(overload(0), spec, "forecast", start=5, fit_rows=FIT).capacity or ()) == \
        np.roll(played, -5).tolist()


def test_the_choice_is_the_grid_q_of_the_largest_replayed_welfare(tmp_path: Path) -> None:
    spec = series(tmp_path, FIT_ROWS, HELD_OUT)
    choice = tune_quantile(overload, spec, FIT, seeds=3, first_seed=7, stride=5)
    assert set(choice.welfare) == set(QUANTILE_GRID) == set(choice.evicted_cancelled)
    for q in QUANTILE_GRID:  # each q's mean, recomputed run by run
        runs = [run_simulation(with_capacity(overload(seed), spec, "forecast", quantile=q, start=k * 5,
                                             fit_rows=FIT, replay_fit_rows=True))
                for k, seed in enumerate(range(7, 10))]
        assert choice.welfare[q] == pytest.approx(sum(r.welfare for r in runs) / 3, rel=1e-12)
    assert choice.welfare[choice.quantile] == max(choice.welfare.values())
    assert tune_quantile(overload, spec, FIT, seeds=3, first_seed=7, stride=5) == choice  # deterministic


def test_the_held_out_rows_do_not_move_the_choice(tmp_path: Path) -> None:
    a = tune_quantile(overload, series(tmp_path, FIT_ROWS, HELD_OUT, "a.csv"), FIT, seeds=2)
    b = tune_quantile(overload, series(tmp_path, FIT_ROWS, [4, 30, 2, 40, 1, 25], "b.csv"), FIT, seeds=2)
    assert a == b


def test_a_tie_keeps_the_default_quantile(tmp_path: Path) -> None:
    spec = series(tmp_path, [16] * FIT, [16] * 6)  # constant capacity: every q prices the same
    choice = tune_quantile(overload, spec, FIT, seeds=2)
    assert len(set(choice.welfare.values())) == 1
    assert choice.quantile == DEFAULT_QUANTILE
    without_default = tune_quantile(overload, spec, FIT, grid=(0.5, 0.2), seeds=1)
    assert without_default.quantile == 0.2  # then the lower q


@pytest.mark.parametrize(("grid", "seeds", "match"), [
    ((), 1, r"quantile grid \(\) must be non-empty"),
    ((0.1, 1.0), 1, r"quantile grid \(0\.1, 1\.0\) must be non-empty, each q strictly between 0 and 1"),
    ((0.0,), 1, r"each q strictly between 0 and 1"),
    ((0.3,), 0, r"tuning seeds=0 must be >= 1"),
])
def test_a_bad_grid_or_seed_count_is_refused(tmp_path: Path, grid: tuple[float, ...], seeds: int, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        tune_quantile(overload, series(tmp_path, FIT_ROWS, HELD_OUT), FIT, grid=grid, seeds=seeds)
