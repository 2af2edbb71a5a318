"""Seed 004's scores on hand-made windows, NA cases, the adjustment switch and the weighted pooling."""

import numpy as np
import pytest

from models.forecast.scores import Score, adjust, adjustment_switch, survival, utilization


def test_survival_means_offered_at_least_used_and_is_na_without_an_offer() -> None:
    u = np.array([50.0, 50.0, 40.0, 100.0, 120.0, 99.0])
    actual = np.array([40.0, 50.0, 60.0, 20.0, 20.0, 100.0])
    got = survival(u, actual)
    assert got[:3] == pytest.approx([1.0, 1.0, 0.0])  # u >= actual survives, u < actual is hit
    assert np.isnan(got[3]) and np.isnan(got[4])  # nothing offered: NA
    assert got[5] == 0.0  # the VM used everything: the job was hit


def test_utilization_is_the_used_share_of_the_free_room_and_na_without_room() -> None:
    u = np.array([50.0, 40.0, 100.0, 30.0, 10.0])
    actual = np.array([40.0, 60.0, 20.0, 100.0, 10.0])
    got = utilization(u, actual)
    assert got[0] == pytest.approx(50 / 60)  # used 50 of the 60 left free
    assert got[1] == 0.0  # the job was hit
    assert got[2] == 0.0  # nothing offered
    assert np.isnan(got[3])  # no room existed: NA
    assert got[4] == pytest.approx(1.0)  # exact forecast uses all the room


def test_granularity_rounds_rooms_down_to_whole_cores() -> None:
    # 4 cores: 25 % each; offered 100-30=70 -> 50, real 100-20=80 -> 75
    assert survival([30.0], [20.0], 25.0) == pytest.approx([1.0])
    assert utilization([30.0], [20.0], 25.0) == pytest.approx([50 / 75])
    assert np.isnan(survival([80.0], [10.0], 25.0))[0]  # offered 20 -> 0 cores: NA
    assert survival([50.0], [90.0], 25.0) == pytest.approx([0.0])  # real room below a core: hit
    assert np.isnan(utilization([50.0], [90.0], 25.0))[0]
    with pytest.raises(ValueError, match="granularity=-1"):
        survival([1.0], [1.0], -1.0)


def test_adjustment_reproduces_the_seeds_example() -> None:
    # seed 004 1.9: with (1, 1), the survivals 0, 1, 0 become 0 of 2 predictions
    surv, util = adjust(np.array([0.0, 1.0, 0.0]), np.array([0.0, 0.7, 0.0]), 1, 1)
    assert np.nansum(surv) == 0 and np.count_nonzero(~np.isnan(surv)) == 2
    assert util == pytest.approx([0.0, 0.0, 0.0])  # the window held back uses nothing


def test_adjustment_switch_counts_runs_and_skips_na() -> None:
    scores = np.array([0, 0, 1, np.nan, 1, 1, 0, 0, 0], dtype=float)
    # on after 2 failures, off after 2 successes seen while on
    assert list(adjustment_switch(scores, 2, 2)) == [0, 0, 1, 1, 1, 0, 0, 0, 1]
    with pytest.raises(ValueError, match="integers >= 1"):
        adjustment_switch(scores, 0, 1)


def test_scores_pool_as_weighted_means_of_the_non_na_windows() -> None:
    a = Score.of(np.array([1.0, 0.0, np.nan]), np.array([0.5, 0.0, 0.25]))
    assert (a.survival, a.survival_weight, a.utilization, a.utilization_weight, a.predictions) == \
        (0.5, 2, pytest.approx(0.25), 3, 3)
    b = Score.of(np.array([1.0, 1.0, 1.0, 1.0]), np.array([np.nan, 1.0, 1.0, 1.0]))
    pooled = Score.pooled([a, b])
    assert pooled.survival == pytest.approx(5 / 6)
    assert pooled.utilization == pytest.approx((0.75 + 3) / 6)
    assert pooled.survival_weight == 6 and pooled.predictions == 7
    empty = Score.of(np.array([np.nan]), np.array([np.nan]))
    assert empty.survival is None and empty.utilization is None
