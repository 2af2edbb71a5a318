"""Server assembly: structured logs go to the stderr of the moment; the wall clock keeps its pace; no signal is
lost on its way to the serve loop."""

from __future__ import annotations

import gc
import json
import logging
import math
import os
import signal
import time
from pathlib import Path

import pytest

from server.app import ServerOptions, StartupError, WallClock, _Caught, setup_logging, start_server
from server.config import CLOCK
from tests.grpc_support import ACME, client, config, running, sow


def test_structured_logs_follow_sys_stderr_when_it_is_replaced(capsys: pytest.CaptureFixture[str]) -> None:
    root = logging.getLogger("sowsched")
    before = (root.handlers[:], root.level, root.propagate)
    setup_logging("info")
    try:
        logging.getLogger("sowsched.test").info("hello", extra={"fields": {"n": 1}})
        line = json.loads(capsys.readouterr().err)
        assert (line["msg"], line["n"], line["level"], line["logger"]) == ("hello", 1, "info", "sowsched.test")
    finally:
        root.handlers[:], root.level, root.propagate = before


class Rounds:
    """A scheduler stand-in for the wall clock: records when each round starts and ends; `slow` rounds take
    `slow_s`, the others `busy_s`."""

    def __init__(self, busy_s: float = 0.0, slow: frozenset[int] = frozenset(), slow_s: float = 0.0) -> None:
        self.busy_s, self.slow, self.slow_s = busy_s, slow, slow_s
        self.spans: list[tuple[float, float]] = []

    def execute(self, caller: str, request_id: str | None, kind: str, body: dict[str, object]) -> None:
        assert (caller, request_id, kind, body) == (CLOCK, None, "advance", {})
        started = time.monotonic()
        time.sleep(self.slow_s if len(self.spans) in self.slow else self.busy_s)
        self.spans.append((started, time.monotonic()))


def run_clock(rounds: Rounds, round_s: float, count: int) -> float:
    """Run the wall clock until `count` rounds have ended; the time it started."""
    clock = WallClock(rounds, round_s)  # type: ignore[arg-type]
    started = time.monotonic()
    clock.start()
    deadline = started + 30
    while len(rounds.spans) < count and time.monotonic() < deadline:
        time.sleep(0.005)
    clock.halt.set()
    clock.join(5)
    assert not clock.is_alive() and len(rounds.spans) >= count
    return started


def test_the_wall_clock_keeps_its_pace_when_rounds_take_time_instead_of_drifting() -> None:
    rounds = Rounds(busy_s=0.03)  # each round holds the writer for 60 % of its period
    started = run_clock(rounds, 0.05, 12)
    for k, (begin, _) in enumerate(rounds.spans, start=1):
        assert begin >= started + k * 0.05 - 0.002  # never early
    assert rounds.spans[11][0] - started < 12 * 0.05 + 0.1  # late by scheduling jitter at most, not by 12 x 30 ms


def test_a_round_slower_than_the_period_skips_the_ticks_it_covered_instead_of_playing_them_back_to_back() -> None:
    rounds = Rounds(slow=frozenset({0}), slow_s=0.35)  # the first round takes 3.5 periods
    started = run_clock(rounds, 0.1, 3)
    (_, slow_end), (second, _), (third, _) = rounds.spans[:3]
    assert second >= slow_end + 0.025  # no catch-up round right after the slow one
    assert second >= started + 0.5 - 0.002 and third >= started + 0.6 - 0.002  # the next ticks, in phase


def test_stopping_the_wall_clock_during_a_round_lets_that_round_finish_and_plays_no_other() -> None:
    rounds = Rounds(slow=frozenset({0}), slow_s=0.2)
    clock = WallClock(rounds, 0.05)  # type: ignore[arg-type]
    clock.start()
    time.sleep(0.1)  # the first round started at 0.05 s and holds the writer until 0.25 s
    clock.halt.set()
    clock.join(5)
    assert not clock.is_alive() and len(rounds.spans) == 1


def test_a_serving_server_has_frozen_its_replayed_state_out_of_the_cyclic_collector_until_it_stops(
        tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    with running(store) as srv:
        client(srv, ACME).submit("j1", sow())
        client(srv).advance()
    gc.unfreeze()  # what an earlier start in this process froze
    assert gc.get_freeze_count() == 0
    try:
        with running(store) as srv:
            assert srv.scheduler.replayed == 2
            assert gc.get_freeze_count() > 0
            engine = srv.scheduler.engine  # built by the replay: in the permanent generation, not a collected one
            assert gc.is_tracked(engine) and not any(o is engine for o in gc.get_objects())
            assert client(srv).status().now == 1  # and it serves
        assert gc.get_freeze_count() == 0  # stopped: back to the collector (a process may start servers again)
    finally:
        gc.unfreeze()


@pytest.mark.parametrize("seconds", [math.inf, math.nan, 1e10, -1.0])
def test_a_round_length_the_clock_cannot_wait_is_refused_at_start_naming_the_bound(
        tmp_path: Path, seconds: float) -> None:
    # 1e10 s is beyond threading.TIMEOUT_MAX: the clock thread died of OverflowError and no round was ever played
    with pytest.raises(StartupError, match=rf"round_seconds={seconds} must be positive and at most 1e\+09"):
        start_server(config(), ServerOptions(store=str(tmp_path / "x.db"), listen="127.0.0.1:0", clock="wall",
                                             round_seconds=seconds))
    assert not (tmp_path / "x.db").exists()


def test_a_signal_whose_wakeup_byte_a_full_pipe_dropped_is_still_reported_once() -> None:
    readable, writable = os.pipe()
    try:
        caught = _Caught()
        os.write(writable, bytes([signal.SIGHUP]))
        caught.handler(signal.SIGHUP, None)
        caught.handler(signal.SIGTERM, None)  # its byte was dropped: the pipe was full
        assert caught.take(readable) == {signal.SIGHUP, signal.SIGTERM}
        os.write(writable, bytes([signal.SIGHUP]))
        assert caught.take(readable) == {signal.SIGHUP}  # each signal is reported once
    finally:
        os.close(readable)
        os.close(writable)
