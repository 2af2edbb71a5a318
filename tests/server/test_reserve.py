"""A server whose platform sets its own reserve (docs/model.md 10.9): the reserve follows the logged overloads and a
restart replays it to the identical state digest."""

from __future__ import annotations

from pathlib import Path

from server.app import RunningServer, ServerOptions, start_server
from server.config import parse_config
from tests.grpc_support import ACME, CONFIG, PLATFORM, client, sow

RESERVED = {**PLATFORM, "reserve": {"up": 3.0, "down": 0.5, "most": 7}}


def start(store: Path) -> RunningServer:
    return start_server(parse_config({**CONFIG, "platform": RESERVED}), ServerOptions(store=str(store),
                                                                                      listen="127.0.0.1:0"))


def test_the_reserve_follows_the_logged_overloads_and_is_replayed_to_the_identical_digest(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    srv = start(store)
    try:
        op, acme = client(srv), client(srv, ACME)
        acme.submit("j1", sow(concurrency=4, outcomes=[[0, 3, 1.0]]))
        acme.report_arrival("j1")
        op.advance()  # j1 starts: no overload, the reserve stays 0
        assert srv.scheduler.engine.reserve == 0.0
        op.report_capacity(1, 3)  # below j1's 4 nodes: step 3 of round 1 evicts it
        acme.submit("j2", sow(concurrency=2))
        op.advance()
        reserve = srv.scheduler.engine.reserve
        op.advance()
        after_quiet = srv.scheduler.engine.reserve
        before = op.status()
    finally:
        srv.stop(0)
    assert (reserve, after_quiet) == (3.0, 2.5)
    again = start(store)
    try:
        assert again.scheduler.engine.reserve == after_quiet and client(again).status() == before
    finally:
        again.stop(0)
