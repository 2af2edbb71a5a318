"""Problem (1)'s pieces by hand: the load, the utility, eq. (4)'s violation rate and eq. (5)'s ratio."""

import numpy as np
import pytest

from models.cuc.problem import UNSCHEDULED, Jobs, load, utility, utility_ratio, violation_rate


def jobs3() -> Jobs:
    # job 0: 2 cores x 3 h, start in [0, 2]; job 1: 5 cores x 1 h in [1, 3]; job 2: 1 core x 2 h in [0, 3]
    return Jobs.of(c=[2, 5, 1], d=[3, 1, 2], e=[0, 1, 0], l=[2, 3, 3], T=4)


def test_load_sums_running_demands_and_utility_sums_c_d_of_scheduled_jobs() -> None:
    j = jobs3()
    start = [1, 1, UNSCHEDULED]  # job 0 on hours 1-3, job 1 on hour 1
    assert load(j, start).tolist() == [0, 7, 2, 2]
    assert utility(j, start) == 2 * 3 + 5 * 1


def test_the_violation_rate_counts_hours_whose_load_exceeds_capacity() -> None:
    j = jobs3()
    start = [0, 1, 2]  # loads: h0 2, h1 2+5=7, h2 2+1=3, h3 1
    assert load(j, start).tolist() == [2, 7, 3, 1]
    # a = [2, 6, 3, 0]: hour 1 (7 > 6) and hour 3 (1 > 0) violate, hours 0 and 2 are at capacity (not >)
    assert violation_rate(j, start, [2, 6, 3, 0]) == pytest.approx(2 / 4)
    assert violation_rate(j, start, [9, 9, 9, 9]) == 0.0


def test_the_utility_ratio_is_u_over_the_bound_and_one_when_both_are_zero() -> None:
    assert utility_ratio(93.0, 100.0) == pytest.approx(0.93)
    assert utility_ratio(0.0, 0.0) == 1.0
    with pytest.raises(ValueError, match="utilities must be >= 0"):
        utility_ratio(-1.0, 2.0)


def test_last_start_keeps_jobs_inside_the_scope() -> None:
    # ST_i = min(l_i, T - d_i): job 0 (d=3, T=4) cannot start after hour 1 although l = 2
    assert jobs3().last_start.tolist() == [1, 3, 2]


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"c": [0], "d": [1], "e": [0], "l": [1]}, "demand c_i"),
    ({"c": [1], "d": [0], "e": [0], "l": [1]}, "duration d_i"),
    ({"c": [1], "d": [1], "e": [2], "l": [1]}, "start window"),
    ({"c": [1], "d": [1], "e": [0], "l": [4]}, "start window"),
    ({"c": [1, 2], "d": [1], "e": [0], "l": [1]}, "different lengths"),
])
def test_jobs_refuse_bad_fields(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Jobs.of(T=4, **kwargs)


def test_schedules_outside_windows_are_refused() -> None:
    j = jobs3()
    with pytest.raises(ValueError, match="outside"):
        load(j, [2, 1, 0])  # job 0 cannot start at 2 (it would end after T)
    with pytest.raises(ValueError, match="entries"):
        load(j, [0, 1])
    with pytest.raises(ValueError, match="capacity has 3 hours"):
        violation_rate(j, [0, 1, 0], np.ones(3))
