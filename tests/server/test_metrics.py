"""The /metrics endpoint of a real server on 127.0.0.1: RPC counts by code, writer times, state gauges, isolation."""

from __future__ import annotations

import logging
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from cli.commands.server import main as server_main
from clients.client import RpcFailure
from server.app import RunningServer, StartupError
from server.limits import MAX_PORT
from server.metrics import ServerMetrics, parse_address
from server.observer import NO_METRICS
from server.store import CommandStore
from tests.grpc_support import ACME, OP, client, config, running, sow

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def scrape(srv: RunningServer) -> Samples:
    with urllib.request.urlopen(f"http://127.0.0.1:{srv.metrics_port}/metrics", timeout=10) as reply:
        return parse(reply.read().decode())


def value(samples: Samples, name: str, **labels: str) -> float:
    """A sample's value; 0 for a labelled series never observed (prometheus_client exports none)."""
    return samples.get((name, frozenset(labels.items())), 0.0)


def registry_samples(srv: RunningServer) -> Samples:
    """The server's own registry, readable after stop (the endpoint is gone then)."""
    metrics = srv.scheduler.metrics
    assert isinstance(metrics, ServerMetrics)
    return parse(generate_latest(metrics.registry).decode())


def logged_commands(store: Path) -> list[str]:
    """The kinds of the commands in the log, read independently of the server."""
    st = CommandStore(store, config().identity())
    try:
        return [c.kind for c in st.commands(after=0)]
    finally:
        st.close()


class Records(logging.Handler):
    """Keeps the log records of one logger (the CLI may have turned propagation to the root off)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture()
def records() -> Iterator[Records]:
    handler = Records()
    logger = logging.getLogger("sowsched")
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)


def settled(records: Records) -> list[logging.LogRecord]:
    return [r for r in records.records if r.getMessage() == "settle"]


@pytest.fixture()
def srv(tmp_path: Path) -> Iterator[RunningServer]:
    with running(tmp_path / "s.db", metrics_listen="127.0.0.1:0") as s:
        yield s


def test_rpc_total_counts_each_call_by_method_and_status_code(srv: RunningServer) -> None:
    acme, op = client(srv, ACME), client(srv, OP)
    acme.submit("j1", sow())
    with pytest.raises(RpcFailure, match="INVALID_ARGUMENT"):
        acme.submit("bad", sow(concurrency=5))
    with pytest.raises(RpcFailure, match="PERMISSION_DENIED"):
        acme.advance()
    with pytest.raises(RpcFailure, match="UNAUTHENTICATED"):
        client(srv, "not-a-token-at-all").status()
    op.advance()
    op.status()
    s = scrape(srv)
    assert value(s, "sowsched_rpc_total", method="SubmitSoW", code="OK") == 1
    assert value(s, "sowsched_rpc_total", method="SubmitSoW", code="INVALID_ARGUMENT") == 1
    assert value(s, "sowsched_rpc_total", method="AdvanceRound", code="PERMISSION_DENIED") == 1
    assert value(s, "sowsched_rpc_total", method="AdvanceRound", code="OK") == 1
    assert value(s, "sowsched_rpc_total", method="GetPlatform", code="UNAUTHENTICATED") == 1
    assert value(s, "sowsched_rpc_total", method="GetPlatform", code="OK") == 1
    assert value(s, "sowsched_rpc_seconds_count", method="SubmitSoW") == 2
    assert value(s, "sowsched_rpc_seconds_count", method="AdvanceRound") == 2
    assert value(s, "sowsched_rpc_seconds_sum", method="SubmitSoW") > 0


def test_rpc_labels_are_only_method_and_code(srv: RunningServer) -> None:
    client(srv, ACME).submit("tenant-job-id", sow())
    s = scrape(srv)
    labels = {k for name, ls in s if name.startswith("sowsched_") and name != "sowsched_build_info" for k, _ in ls}
    assert labels <= {"method", "code", "kind", "le"}
    assert {k for name, ls in s if name == "sowsched_build_info" for k, _ in ls} == {"version", "code"}  # the build
    assert not any(v in ("acme", "tenant-job-id") for _, ls in s for _, v in ls)


def test_writer_and_commit_histograms_count_every_logged_command_and_nothing_else(
        tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    with running(store, metrics_listen="127.0.0.1:0") as srv:
        acme, op = client(srv, ACME), client(srv, OP)
        acme.submit("j1", sow(), request_id="r1")
        acme.submit("j1", sow(), request_id="r1")  # a retry: answered from the log, not logged again
        with pytest.raises(RpcFailure, match="ALREADY_EXISTS"):
            acme.submit("j1", sow())  # refused: not logged
        acme.submit("j2", sow())
        acme.report_arrival("j1")
        op.advance()
        acme.report_completion("j1")
        op.advance()
        s = scrape(srv)
    kinds = logged_commands(store)
    assert kinds == ["submit", "submit", "arrive", "advance", "complete", "advance"]
    for kind in ("submit", "arrive", "advance", "complete"):
        assert value(s, "sowsched_writer_seconds_count", kind=kind) == kinds.count(kind)
        assert value(s, "sowsched_commands_total", kind=kind) == kinds.count(kind)
    assert value(s, "sowsched_commit_seconds_count") == len(kinds)
    writer_sum = sum(value(s, "sowsched_writer_seconds_sum", kind=k) for k in set(kinds))
    assert writer_sum >= value(s, "sowsched_commit_seconds_sum") > 0  # the commit is part of the writer's time


def test_wall_clock_rounds_are_counted_as_advance_commands(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    with running(store, metrics_listen="127.0.0.1:0", clock="wall", round_seconds=0.05) as srv:
        client(srv, OP).submit("j1", sow())
        deadline = time.monotonic() + 30
        while value(scrape(srv), "sowsched_round") < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
    s = registry_samples(srv)  # the counters are final once the server stopped
    kinds = logged_commands(store)
    assert kinds.count("advance") >= 3
    assert value(s, "sowsched_commands_total", kind="advance") == kinds.count("advance")
    assert value(s, "sowsched_writer_seconds_count", kind="advance") == kinds.count("advance")


def test_gauges_equal_the_platform_status_and_the_log(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    with running(store, metrics_listen="127.0.0.1:0", snapshot_every=2) as srv:
        acme, op = client(srv, ACME), client(srv, OP)
        for j in range(3):
            acme.submit(f"j{j}", sow())
        acme.report_arrival("j0")
        op.advance()
        status = op.status()
        s = scrape(srv)
        snapshots = [snap.seq for snap in srv.scheduler.store.snapshots()]
        held = len(srv.scheduler.engine.events)
    assert value(s, "sowsched_round") == status.now == 1
    assert value(s, "sowsched_active_jobs") == status.active_jobs > 0
    assert value(s, "sowsched_log_seq") == len(logged_commands(store)) == 5
    assert value(s, "sowsched_snapshot_seq") == max(snapshots) == 4
    assert value(s, "sowsched_snapshot_seconds_count") == 2  # after commands 2 and 4
    assert value(s, "sowsched_events") == status.events and value(s, "sowsched_ended_jobs") == 0
    assert value(s, "sowsched_held_events") == held < status.events  # the snapshot after command 4 archived the rest
    assert value(s, "sowsched_held_ended_jobs") == 0
    assert value(s, "process_resident_memory_bytes") > 0  # the process collector, for memory growth
    assert value(s, "sowsched_build_info", version=status.server_version, code=status.code_identity) == 1


def test_settle_histogram_counts_the_settler_passes_it_logged(tmp_path: Path, records: Records) -> None:
    # Valuable two-node jobs on 8 nodes, all born in round 0: from the third on the sampled rows are crowded
    # (bound above C - C_m on most rows), so the settler applies the appended jobs between submissions.
    with running(tmp_path / "s.db", metrics_listen="127.0.0.1:0") as srv:
        acme = client(srv, ACME)
        for j in range(8):
            acme.submit(f"j{j}", sow(value=50.0, outcomes=[[0, 2, 1.0]]))
        deadline = time.monotonic() + 30  # after the last reply, nothing competes with the settler for the writer
        while not settled(records) and time.monotonic() < deadline:
            time.sleep(0.01)
    settles = settled(records)
    assert settles
    assert value(registry_samples(srv), "sowsched_settle_seconds_count") == len(settles)


def test_metrics_are_off_by_default(tmp_path: Path) -> None:
    with running(tmp_path / "s.db") as srv:
        client(srv, OP).status()
        assert srv.metrics_port is None
        assert srv.scheduler.metrics is NO_METRICS and srv.service.metrics is NO_METRICS


def test_the_serving_line_logs_the_metrics_port(tmp_path: Path, records: Records) -> None:
    with running(tmp_path / "s.db", metrics_listen="127.0.0.1:0") as srv:
        serving = [r for r in records.records if r.getMessage() == "serving"]
        assert [getattr(r, "fields", {}).get("metrics_port") for r in serving] == [srv.metrics_port]
        assert srv.metrics_port not in (None, 0, srv.port)


def test_stop_closes_the_metrics_endpoint(tmp_path: Path) -> None:
    with running(tmp_path / "s.db", metrics_listen="127.0.0.1:0") as srv:
        assert value(scrape(srv), "sowsched_round") == 0
    with pytest.raises(urllib.error.URLError):
        scrape(srv)


def test_two_servers_in_one_process_do_not_share_counters(tmp_path: Path) -> None:
    with running(tmp_path / "a.db", metrics_listen="127.0.0.1:0") as a, \
            running(tmp_path / "b.db", metrics_listen="127.0.0.1:0") as b:
        client(a, ACME).submit("j1", sow())
        client(b, OP).advance()
        sa, sb = scrape(a), scrape(b)
    assert value(sa, "sowsched_rpc_total", method="SubmitSoW", code="OK") == 1
    assert value(sb, "sowsched_rpc_total", method="SubmitSoW", code="OK") == 0
    assert value(sa, "sowsched_commands_total", kind="advance") == 0
    assert value(sb, "sowsched_commands_total", kind="advance") == 1
    assert (value(sa, "sowsched_round"), value(sb, "sowsched_round")) == (0, 1)


@pytest.mark.parametrize("bad", ["nonsense", "127.0.0.1", ":9464", "127.0.0.1:99999", "127.0.0.1:http",
                                 "127.0.0.1:-1"])
def test_an_unparsable_metrics_address_is_refused_naming_it(tmp_path: Path, bad: str) -> None:
    with pytest.raises(StartupError, match=rf"metrics_listen='{bad}' is not HOST:PORT with PORT in \[0, 65535\]"), \
            running(tmp_path / "s.db", metrics_listen=bad):
        pass


def test_a_metrics_port_in_use_is_refused_before_the_store_is_opened(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    with running(tmp_path / "other.db", metrics_listen="127.0.0.1:0") as other:
        taken = f"127.0.0.1:{other.metrics_port}"
        with pytest.raises(StartupError, match=rf"metrics_listen='{taken}': cannot bind"), \
                running(store, metrics_listen=taken):
            pass
        assert not store.exists()  # refused before a store was created or a log replayed
    with running(store, metrics_listen="127.0.0.1:0") as srv:  # and nothing holds the store
        client(srv, OP).advance()


@pytest.fixture()
def restore_logging() -> Iterator[None]:
    """`sowsched serve` sets up its JSON log handler; put the logger back as it was."""
    logger = logging.getLogger("sowsched")
    handlers, level, propagate = list(logger.handlers), logger.level, logger.propagate
    try:
        yield
    finally:
        logger.handlers[:] = handlers
        logger.setLevel(level)
        logger.propagate = propagate


@pytest.mark.usefixtures("restore_logging")
def test_serve_command_refuses_a_bad_metrics_listen_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "platform.toml"
    cfg.write_text('[platform]\nC = 8\nC_m = 4\nD_m = 4\nS_m = 8\nH = 50.0\nsamples = 200\n')
    code = server_main(["serve", "--listen", "127.0.0.1:0", "--store", str(tmp_path / "s.db"), "--config", str(cfg),
                        "--log-level", "error", "--metrics-listen", "localhost"])
    assert code == 2
    assert "metrics_listen='localhost' is not HOST:PORT" in capsys.readouterr().err


@pytest.mark.parametrize(("text", "address"), [("127.0.0.1:0", ("127.0.0.1", 0)),
                                               ("localhost:9464", ("localhost", 9464)),
                                               ("[::1]:9464", ("::1", 9464)),
                                               ("0.0.0.0:65535", ("0.0.0.0", 65535))])
def test_parse_address_splits_host_and_port(text: str, address: tuple[str, int]) -> None:
    assert parse_address(text) == address


@given(host=st.sampled_from(["127.0.0.1", "localhost", "0.0.0.0", "metrics.example.org", "[::1]", "[::]"]),
       port=st.integers(min_value=0, max_value=2 * MAX_PORT))
def test_parse_address_accepts_exactly_the_ports_of_tcp(host: str, port: int) -> None:
    text = f"{host}:{port}"
    if port <= MAX_PORT:
        assert parse_address(text) == (host.strip("[]"), port)
    else:
        with pytest.raises(ValueError, match=rf"metrics_listen='{re.escape(text)}' is not HOST:PORT"):
            parse_address(text)
