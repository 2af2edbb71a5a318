"""WatchEventBatches: the events of WatchEvents, those read together in one message (a round's at once), with the same
rules (a tenant's own only, resume from a seq); a client falls back to WatchEvents on a server without the call."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from clients.client import RpcFailure, TenantEvent
from server.app import RunningServer
from server.gen.sowsched.v1 import scheduler_pb2 as pb
from server.gen.sowsched.v1 import scheduler_pb2_grpc as pb_grpc
from server.service import SchedulerService
from tests.clients.executor_support import wait_until
from tests.grpc_support import ACME, GLOBEX, OP, client, running, sow

NOW = sow(concurrency=1, outcomes=[[0, 1, 1.0]], signal_mode="none")  # arrives at once, starts in its first round


@pytest.fixture()
def srv(tmp_path: Path) -> Iterator[RunningServer]:
    with running(tmp_path / "b.db") as s:
        yield s


def played(s: RunningServer) -> None:
    """Jobs of two tenants, arrived, started in one round."""
    acme, globex = client(s, ACME), client(s, GLOBEX)
    for i in range(3):
        acme.submit(f"a{i}", NOW)
        acme.report_arrival(f"a{i}")
    globex.submit("g", NOW)
    globex.report_arrival("g")
    client(s, OP).advance()


def raw(s: RunningServer, token: str, method: str) -> list[pb.Event]:
    c = client(s, token)
    stream = getattr(c.stub, method)(pb.WatchEventsRequest(from_seq=0, follow=False), metadata=c._metadata)
    return list(stream)


def flat(batches: list[list[TenantEvent]]) -> list[tuple[int, str, str, str]]:
    return [(te.event.seq, te.event.type, te.tenant, te.event.job) for batch in batches for te in batch]


def test_batches_hold_the_events_of_watch_events_in_order_read_together_in_one_message(srv: RunningServer) -> None:
    played(srv)
    for token in (OP, ACME):
        messages = raw(srv, token, "WatchEventBatches")
        events = [e.SerializeToString() for m in messages for e in m.events]
        assert events == [e.SerializeToString() for e in raw(srv, token, "WatchEvents")]
        assert len(messages) == 1 and len(events) > 1  # everything was logged before the read: one message
    assert {te.tenant for batch in client(srv, ACME).watch_batches(follow=False) for te in batch} == {"acme"}


def test_a_following_batch_stream_gets_a_rounds_events_in_one_batch(srv: RunningServer) -> None:
    op = client(srv, OP)
    acme = client(srv, ACME)
    for i in range(4):
        acme.submit(f"a{i}", NOW)
        acme.report_arrival(f"a{i}")
    seq = op.status().events
    got: list[list[TenantEvent]] = []
    stream = client(srv, OP).watch_batches(seq, follow=True)
    reader = threading.Thread(target=lambda: got.append(next(stream)), daemon=True)
    reader.start()
    wait_until(lambda: srv.service.open_streams == 1, what="the stream open and waiting")
    report = op.advance()
    reader.join(timeout=30)
    assert [(te.event.seq, te.event.type) for te in got[0]] == [(e.seq, e.type) for e in report.events]
    assert "start" in [te.event.type for te in got[0]]
    stream.close()


def test_a_negative_from_seq_is_refused_on_the_batch_stream(srv: RunningServer) -> None:
    with pytest.raises(RpcFailure, match=r"^INVALID_ARGUMENT: from_seq=-1 is below the bound 0"):
        next(client(srv, OP).watch_batches(-1, follow=False))


def test_a_client_follows_a_server_without_batches_one_event_a_batch(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that predates WatchEventBatches answers it UNIMPLEMENTED: the client reads WatchEvents instead."""
    monkeypatch.setattr(SchedulerService, "WatchEventBatches", pb_grpc.SchedulerServicer.WatchEventBatches)
    with running(tmp_path / "old.db") as s:
        played(s)
        batches = list(client(s, OP).watch_batches(follow=False))
        assert all(len(b) == 1 for b in batches)
        assert flat(batches) == flat([[te] for te in client(s, OP).watch_tenants(follow=False)])
        assert "start" in [te.event.type for b in batches for te in b]


def test_a_batch_stream_holds_a_watcher_slot_until_it_is_closed(tmp_path: Path) -> None:
    with running(tmp_path / "w.db", max_workers=3, max_watchers=1) as s:
        op = client(s, OP)
        client(s, ACME).submit("a1", NOW)
        stream = op.watch_batches(0, follow=True, resume=False)
        assert [te.event.seq for te in next(stream)] == [0]  # this stream now holds the only slot
        with pytest.raises(RpcFailure, match=r"^RESOURCE_EXHAUSTED: 1 event streams are open"):
            next(op.watch_batches(0, follow=False, resume=False))
        stream.close()  # the client cancels: the server drops the stream and frees its slot
        wait_until(lambda: s.service.open_streams == 0, what="the closed stream's slot freed")
        assert [te.event.seq for b in op.watch_batches(0, follow=False, resume=False) for te in b] == [0]
