"""Invariants of the scores and of the dominated area, over generated windows and curves."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from models.forecast.scores import survival, utilization
from models.forecast.tradeoff import dominated_area

cpu = st.floats(min_value=0.0, max_value=100.0, allow_nan=False)
bound = st.floats(min_value=-20.0, max_value=150.0, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(u=bound, actual=cpu, granularity=st.sampled_from([0.0, 12.5, 25.0]))
def test_scores_are_in_the_unit_interval_or_na_exactly_when_the_seed_says(u: float, actual: float,
                                                                         granularity: float) -> None:
    s = survival([u], [actual], granularity)[0]
    ut = utilization([u], [actual], granularity)[0]
    if granularity == 0:
        assert np.isnan(s) == (u >= 100)
        assert np.isnan(ut) == (actual >= 100)
    if not np.isnan(s):
        assert s in (0.0, 1.0)
    if not np.isnan(ut):
        assert 0.0 <= ut <= 1.0
        if s == 0.0:
            assert ut == 0.0  # a job that was hit used nothing


@settings(max_examples=200, deadline=None)
@given(points=st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), max_size=8),
       extra=st.tuples(st.floats(0, 1), st.floats(0, 1)))
def test_dominated_area_never_shrinks_when_a_point_is_added(points: list[tuple[float, float]],
                                                          extra: tuple[float, float]) -> None:
    before = dominated_area(points, (0.5, 0.0))
    after = dominated_area([*points, extra], (0.5, 0.0))
    assert after >= before - 1e-12
    assert 0.0 <= after <= 0.5 + 1e-12
