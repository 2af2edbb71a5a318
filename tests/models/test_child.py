"""models/child.py: a call in a child process returns its result or raises its exception, and is killed when its
time is up."""

from __future__ import annotations

import time

import pytest

from models.child import TimeUp, call_in_child


def test_the_child_returns_the_calls_result() -> None:
    assert call_in_child(30.0, divmod, 7, 2) == (3, 1)


def test_the_childs_exception_is_raised_here() -> None:
    with pytest.raises(ValueError, match=r"invalid literal for int\(\) with base 10: 'x'"):
        call_in_child(30.0, int, "x")


def test_a_call_past_its_time_is_killed_and_raises_time_up() -> None:
    call_in_child(30.0, divmod, 7, 2)  # the fork server started, so the time below is the call's
    tick = time.perf_counter()
    with pytest.raises(TimeUp, match=r"no result after 0.3 s: the child process was killed"):
        call_in_child(0.3, time.sleep, 60)
    assert time.perf_counter() - tick < 2.0


def test_a_time_of_zero_is_refused() -> None:
    with pytest.raises(ValueError, match=r"seconds=0 must be > 0"):
        call_in_child(0, divmod, 7, 2)
