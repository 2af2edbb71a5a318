"""Reloading platform.toml (SIGHUP): tokens, tenants and limits change without a restart; nothing else may."""

from __future__ import annotations

import copy
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from clients.client import RpcFailure, SchedulerClient
from mechanism.engine import Engine
from mechanism.sow import SoW
from server.app import RunningServer, ServerOptions, start_server
from server.config import ConfigError, Principal, ServerConfig, parse_config
from server.errors import Refused, Unauthenticated
from tests.grpc_support import ACME, CONFIG, GLOBEX, OP, ServerProcess, client, running, sow

ACME2 = "acme-token-rotated-2"


def edited(**changes: Any) -> dict[str, Any]:
    doc = copy.deepcopy(CONFIG)
    doc.update(changes)
    return doc


def reload(srv: RunningServer, doc: dict[str, Any]) -> bool:
    return srv.reload(lambda: parse_config(doc))


def code_of(call: Any) -> str:
    with pytest.raises(RpcFailure) as info:
        call()
    return info.value.code


def test_a_rotated_token_replaces_the_old_one_at_once_and_leaves_other_tenants_alone(tmp_path: Path) -> None:
    with running(tmp_path / "log.db") as srv:
        old, new, globex = client(srv, ACME), client(srv, ACME2), client(srv, GLOBEX)
        old.submit("a1", sow())
        assert reload(srv, edited(tenants=[{"name": "acme", "token": ACME2}, {"name": "globex", "token": GLOBEX}]))
        assert code_of(lambda: old.get_job("a1")) == "UNAUTHENTICATED"
        assert new.get_job("a1").view.id == "a1"  # the same tenant: its jobs stay its own
        assert globex.status().own_active_jobs == 0


def test_a_platform_or_oracle_change_is_refused_naming_each_field_and_the_old_configuration_stays(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with running(tmp_path / "log.db") as srv:
        before = srv.scheduler.config
        doc = edited(platform={**CONFIG["platform"], "C": 16, "seed": 4},
                     server={"oracle": "exact"}, tenants=[{"name": "acme", "token": ACME2}])
        assert not reload(srv, doc)
        assert srv.scheduler.config is before
        assert client(srv, ACME).status().own_active_jobs == 0  # the old token still works
        assert code_of(lambda: client(srv, ACME2).status()) == "UNAUTHENTICATED"
    refusal = next(r for r in caplog.records if r.getMessage().startswith("configuration reload refused"))
    error = refusal.fields["error"]  # type: ignore[attr-defined]
    assert "oracle ('mc' -> 'exact')" in error and "platform.C (8 -> 16)" in error and "platform.seed (3 -> 4)" in error
    assert "needs a new store" in error


def test_a_configuration_that_does_not_load_is_refused_and_the_old_one_stays(tmp_path: Path) -> None:
    def broken() -> ServerConfig:
        raise ConfigError("platform.toml: not valid TOML: Expected '=' (at line 3, column 5)")

    with running(tmp_path / "log.db") as srv:
        assert not srv.reload(broken)
        assert client(srv, ACME).status().own_active_jobs == 0


def test_a_server_beyond_loopback_refuses_a_configuration_without_tokens(tmp_path: Path) -> None:
    srv = start_server(parse_config(CONFIG), ServerOptions(store=str(tmp_path / "log.db"), listen="0.0.0.0:0"))
    try:
        assert not reload(srv, {"platform": CONFIG["platform"]})
        assert code_of(lambda: client(srv, None).status()) == "UNAUTHENTICATED"
    finally:
        srv.stop(0)


def test_on_loopback_a_configuration_without_tokens_opens_the_server_as_at_start(tmp_path: Path) -> None:
    with running(tmp_path / "log.db") as srv:
        assert reload(srv, {"platform": CONFIG["platform"]})
        assert client(srv, None).status().active_jobs == 0  # every caller is the operator


def test_a_changed_limit_applies_to_the_next_submission_both_ways(tmp_path: Path) -> None:
    with running(tmp_path / "log.db") as srv:
        acme = client(srv, ACME)
        acme.submit("a1", sow())
        limited = edited(tenants=[{"name": "acme", "token": ACME, "max_active_jobs": 1},
                                  {"name": "globex", "token": GLOBEX}])
        assert reload(srv, limited)
        assert acme.status().own_max_active_jobs == 1
        assert code_of(lambda: acme.submit("a2", sow())) == "RESOURCE_EXHAUSTED"
        assert reload(srv, CONFIG)
        acme.submit("a2", sow())
        assert acme.status().own_active_jobs == 2


@pytest.mark.parametrize("every", [0, 1])  # its jobs held in memory, or its ended ones in the archive
def test_a_removed_tenant_loses_its_token_but_the_operator_still_reads_and_reports_on_its_jobs(
        tmp_path: Path, every: int) -> None:
    with running(tmp_path / "log.db", snapshot_every=every) as srv:
        globex, op = client(srv, GLOBEX), client(srv, OP)
        globex.submit("done", sow(outcomes=[[0, 2, 1.0]]))
        globex.submit("open", sow(outcomes=[[3, 1, 1.0]]))
        globex.report_arrival("done")
        op.advance()
        globex.report_completion("done")
        op.advance()
        assert reload(srv, edited(tenants=[{"name": "acme", "token": ACME}]))
        assert code_of(lambda: globex.status()) == "UNAUTHENTICATED"
        assert op.get_job("done", tenant="globex").view.state == "COMPLETED"
        assert [j.view.id for j in op.list_jobs(tenant="globex")] == ["done", "open"]
        assert op.invoice("globex").total > 0
        op.advance()
        assert op.report_arrival("open", tenant="globex").view.reported_arrival == 3
        with pytest.raises(
            RpcFailure, match=r"INVALID_ARGUMENT: tenant='globex' is not configured \(configured: acme\)"
        ):
            op.submit("new", sow(), tenant="globex")  # no new jobs for a tenant taken out
        with pytest.raises(RpcFailure, match=r"tenant='globx' is not configured and owns no jobs"):
            op.get_job("done", tenant="globx")  # a typo is still caught
        with pytest.raises(RpcFailure, match=r"tenant='globx' is not configured and owns no jobs"):
            op.invoice("globx")


def test_a_tenant_whose_jobs_are_all_archived_is_still_known_to_the_operator(tmp_path: Path) -> None:
    with running(tmp_path / "log.db", snapshot_every=1) as srv:
        globex, op = client(srv, GLOBEX), client(srv, OP)
        globex.submit("g1", sow(outcomes=[[0, 2, 1.0]]))
        globex.report_arrival("g1")
        op.advance()
        globex.report_completion("g1")
        op.advance()
        op.advance()  # a snapshot after the job ended moves it to the archive
        assert not any(key.startswith("globex/") for key in srv.scheduler.engine.jobs)
        assert reload(srv, edited(tenants=[{"name": "acme", "token": ACME}]))
        assert srv.scheduler.known_tenant("globex") and not srv.scheduler.known_tenant("initech")
        assert op.get_job("g1", tenant="globex").view.state == "COMPLETED"


def test_an_event_stream_ends_unauthenticated_once_its_token_is_revoked(tmp_path: Path) -> None:
    with running(tmp_path / "log.db") as srv:
        acme, op = client(srv, ACME), client(srv, OP)
        acme.submit("a1", sow())
        seen: list[int] = []
        failure: list[RpcFailure] = []

        def follow() -> None:
            try:
                for event in acme.watch(0, follow=True):
                    seen.append(event.seq)
            except RpcFailure as exc:
                failure.append(exc)

        watcher = threading.Thread(target=follow)
        watcher.start()
        deadline = time.monotonic() + 10
        while not seen and time.monotonic() < deadline:
            time.sleep(0.02)
        assert reload(srv, edited(tenants=[{"name": "acme", "token": ACME2}, {"name": "globex", "token": GLOBEX}]))
        watcher.join(60)  # a following stream never ends by itself: only the revocation ends it
        assert not watcher.is_alive()
        assert failure and failure[0].code == "UNAUTHENTICATED"
        assert f"resume from_seq={seen[-1] + 1}" in failure[0].details
        op.advance()  # the operator's own token is unchanged


def test_reloads_are_counted_by_outcome_in_the_metrics(tmp_path: Path) -> None:
    with running(tmp_path / "log.db", metrics_listen="127.0.0.1:0") as srv:
        assert reload(srv, CONFIG)
        assert not reload(srv, edited(server={"oracle": "exact"}))
        counter = srv._observer.config_reloads_total  # type: ignore[attr-defined]
        assert counter.labels("applied")._value.get() == 1
        assert counter.labels("refused")._value.get() == 1


def test_sighup_rereads_the_file_and_its_token_files_and_a_broken_file_keeps_the_last_good_one(
        tmp_path: Path) -> None:
    secret = tmp_path / "acme.token"
    secret.write_text(ACME + "\n")
    proc = ServerProcess(tmp_path, None, "--log-level", "info")
    text = proc.config.read_text().replace(f'token = "{ACME}"', 'token_file = "acme.token"')
    proc.config.write_text(text)
    try:
        port = proc.start()
        client(port, ACME).submit("a1", sow())
        secret.write_text(ACME2 + "\n")
        assert proc.proc is not None
        proc.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: _works(port, ACME2))
        assert code_of(lambda: client(port, ACME).status()) == "UNAUTHENTICATED"
        proc.config.write_text(text + "\n[[tenants]\n")  # broken TOML
        proc.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: "configuration reload refused" in (tmp_path / "server.log").read_text())
        assert client(port, ACME2).get_job("a1").view.id == "a1"  # still serving, with the last good tokens
        assert proc.terminate() == 0
    finally:
        proc.close()
    log = (tmp_path / "server.log").read_text()
    assert '"tokens_changed": ["acme"]' in log and "not valid TOML" in log
    assert ACME2 not in log  # tokens are never logged


def _works(port: int, token: str) -> bool:
    try:
        client(port, token).status()
    except RpcFailure:
        return False
    return True


def wait_for(condition: Any, seconds: float = 60.0) -> None:
    """Poll until `condition` holds; the bound is for liveness on a loaded machine, not a timing assertion."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_reload_that_fails_in_any_way_is_refused_and_the_server_serves_on(tmp_path: Path) -> None:
    def failing() -> ServerConfig:
        raise RecursionError("maximum recursion depth exceeded")  # what a bug in a loader could raise

    with running(tmp_path / "log.db") as srv:
        assert not srv.reload(failing)
        assert client(srv, ACME).status().own_active_jobs == 0


def test_a_command_authenticated_before_a_reload_that_revoked_its_token_is_refused_by_the_writer(
        tmp_path: Path) -> None:
    with running(tmp_path / "log.db") as srv:
        sched = srv.scheduler
        acme_before, globex_before = sched.config.authenticate(ACME), sched.config.authenticate(GLOBEX)
        assert acme_before is not None and globex_before is not None
        job = SoW.parse(sow(), sched.config.platform).model_dump(mode="json")
        assert reload(srv, edited(tenants=[{"name": "acme", "token": ACME2}, {"name": "globex", "token": GLOBEX}]))
        # the call was authenticated, then waited for the writer while the reload went through
        with pytest.raises(Unauthenticated, match=r"the token no longer authenticates 'acme'"):
            sched.execute(acme_before, "r1", "submit", {"job_id": "a1", "tenant": "acme", "sow": job})
        assert sched.log_seq == 0
        sched.execute(globex_before, "r1", "submit", {"job_id": "g1", "tenant": "globex", "sow": job})  # still held
        assert client(srv, ACME2).submit("a1", sow()).job == "a1"


def test_an_operator_submission_for_a_tenant_a_reload_removed_while_it_waited_is_refused_by_the_writer(
        tmp_path: Path) -> None:
    with running(tmp_path / "log.db") as srv:
        sched = srv.scheduler
        operator = sched.config.authenticate(OP)
        assert operator is not None and operator.is_operator
        job = SoW.parse(sow(), sched.config.platform).model_dump(mode="json")
        assert reload(srv, edited(tenants=[{"name": "globex", "token": GLOBEX}]))  # acme taken out
        # the call was checked against the old configuration, then waited for the writer while the reload went through
        with pytest.raises(Refused, match=r"tenant='acme' is not configured \(the server's configuration changed"):
            sched.execute(operator, "r1", "submit", {"job_id": "a1", "tenant": "acme", "sow": job})
        assert sched.log_seq == 0
        sched.execute(operator, "r2", "submit", {"job_id": "g1", "tenant": "globex", "sow": job})  # still configured
        sched.execute(operator, "r3", "submit", {"job_id": "o1", "tenant": "operator", "sow": job})  # its own namespace
        assert sched.log_seq == 2


def test_a_command_logged_before_a_reload_revoked_its_token_is_acknowledged_to_its_caller(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the writer checks a command's token; once it is logged, its caller gets the reply (a reload just after must not
    # turn a durable command into UNAUTHENTICATED, or a client would think it was not done)
    with running(tmp_path / "log.db") as srv:
        applied = srv.scheduler.execute

        def execute_then_rotate(*args: Any, **kwargs: Any) -> Any:
            ack = applied(*args, **kwargs)
            assert reload(srv, edited(tenants=[{"name": "acme", "token": ACME2}, {"name": "globex", "token": GLOBEX}]))
            return ack
        monkeypatch.setattr(srv.scheduler, "execute", execute_then_rotate)
        quote = client(srv, ACME).submit("a1", sow(), request_id="r1")
        assert quote.job == "a1" and srv.scheduler.log_seq == 1
        assert code_of(lambda: client(srv, ACME).get_job("a1")) == "UNAUTHENTICATED"
        assert client(srv, ACME2).get_job("a1").view.id == "a1"


def test_a_read_authenticated_before_a_reload_that_revoked_its_token_gets_nothing_read_after_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with running(tmp_path / "log.db") as srv:
        acme = client(srv, ACME)
        acme.submit("a1", sow())
        sched = srv.scheduler
        reading = sched.reading
        rotated = edited(tenants=[{"name": "acme", "token": ACME2}, {"name": "globex", "token": GLOBEX}])

        @contextmanager
        def reload_first() -> Iterator[Engine]:  # the reload takes the lock just before the waiting read
            monkeypatch.setattr(sched, "reading", reading)
            assert reload(srv, rotated)
            with reading() as engine:
                yield engine

        monkeypatch.setattr(sched, "reading", reload_first)
        with pytest.raises(RpcFailure, match=r"UNAUTHENTICATED: the token no longer authenticates 'acme'"):
            acme.get_job("a1")
        assert client(srv, ACME2).get_job("a1").view.id == "a1"


class Aborted(Exception):
    """What grpc's context.abort raises."""


class Context:
    """A stream's server context: its caller's token, active until aborted."""

    def __init__(self, token: str) -> None:
        self.token = token

    def is_active(self) -> bool:
        return True

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.token}"),)

    def abort(self, code: Any, details: str) -> None:
        raise Aborted(f"{code.name}: {details}")


def three_started(srv: RunningServer) -> tuple[SchedulerClient, Principal]:
    """Three jobs of acme started (six events), acme's client and its principal as the servicer sees it."""
    acme, op = client(srv, ACME), client(srv, OP)
    for i in range(3):
        acme.submit(f"a{i}", sow(outcomes=[[0, 2, 1.0]]))
        acme.report_arrival(f"a{i}")
    op.advance()
    principal = srv.service._principal(Context(ACME))
    assert principal is not None
    return acme, principal


def test_an_event_stream_sends_nothing_more_of_a_batch_read_before_its_token_was_revoked(tmp_path: Path) -> None:
    with running(tmp_path / "log.db") as srv:
        _, principal = three_started(srv)
        stream = (b.events[0] for b in srv.service._watch(principal, 0, False, Context(ACME)))  # one event each
        next(stream)  # the batch is read; its first event is on the wire
        assert reload(srv, edited(tenants=[{"name": "acme", "token": ACME2}, {"name": "globex", "token": GLOBEX}]))
        second = [e.seq for e in client(srv, ACME2).watch(0, follow=False)][1]
        with pytest.raises(Aborted, match=rf"UNAUTHENTICATED: .*resume from_seq={second} with a valid token"):
            next(stream)


def test_an_event_stream_whose_token_a_reload_kept_goes_on_with_the_rest_of_its_batch(tmp_path: Path) -> None:
    with running(tmp_path / "log.db") as srv:
        acme, principal = three_started(srv)
        expected = [e.seq for e in acme.watch(0, follow=False)]
        stream = (b.events[0] for b in srv.service._watch(principal, 0, False, Context(ACME)))  # one event each
        seen = [next(stream).seq]
        assert reload(srv, edited(tenants=[{"name": "acme", "token": ACME}, {"name": "globex", "token": "globex-2"}]))
        assert seen + [e.seq for e in stream] == expected


def test_sighup_during_startup_in_a_row_with_bad_files_and_before_sigterm_never_stops_the_server(
        tmp_path: Path) -> None:
    status = Path("/proc/self/status")
    if not status.exists():
        pytest.skip("needs /proc to see when the server catches SIGHUP")
    proc = ServerProcess(tmp_path, None, "--log-level", "info")
    good = proc.config.read_text()
    server_log = tmp_path / "server.log"

    try:
        early = hang_up_once(proc, "SigCgt", [])  # during start-up: before the port is bound, maybe in the replay
        port = proc.start()
        early.join(10)
        assert proc.proc is not None
        wait_for(lambda: "configuration reloaded" in server_log.read_text())
        for broken, error in ((b"[platform]\nC = 8 # caf\xe9\n", "not UTF-8 text"),
                              (b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n", "nested too deeply")):
            proc.config.write_bytes(broken)
            for _ in range(3):  # several in a row
                proc.proc.send_signal(signal.SIGHUP)
            wait_for(lambda error=error: error in server_log.read_text())
            assert client(port, ACME).status().own_active_jobs == 0
        proc.config.write_text(good)
        proc.proc.send_signal(signal.SIGHUP)
        proc.proc.send_signal(signal.SIGTERM)
        assert proc.proc.wait(timeout=30) == 0
    finally:
        proc.close()
    text = server_log.read_text()
    assert "configuration reload refused" in text and "Traceback" not in text


def test_a_burst_of_sighups_never_wedges_the_loop_the_next_reload_and_sigterm_are_still_served(
        tmp_path: Path) -> None:
    """A signal handler that took a lock (threading.Event.set) could interrupt the main thread while it held that
    lock, and no reload or shutdown would ever be served again; a burst makes that interleaving likely."""
    proc = ServerProcess(tmp_path, None, "--log-level", "info")
    server_log = tmp_path / "server.log"
    try:
        port = proc.start()
        assert proc.proc is not None
        for _ in range(2000):
            proc.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: "configuration reloaded" in server_log.read_text())
        proc.config.write_text("[[tenants]\n")  # broken TOML: only a reload served after the burst logs it
        proc.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: "not valid TOML" in server_log.read_text())
        assert client(port, ACME).status().own_active_jobs == 0
        assert proc.terminate() == 0
    finally:
        proc.close()


def test_a_sighup_during_the_cli_imports_is_held_and_served_once_the_server_runs(tmp_path: Path) -> None:
    """`sowsched serve` blocks SIGHUP before importing the server (about a second), so a reload asked for then
    neither kills the process (SIGHUP's default) nor is lost."""
    if not Path("/proc/self/status").exists():
        pytest.skip("needs /proc to see when the CLI holds SIGHUP")
    proc = ServerProcess(tmp_path, None, "--log-level", "info")
    proc.module = "cli.main"
    masks: list[dict[str, bool]] = []
    try:
        early = hang_up_once(proc, "SigBlk", masks)
        port = proc.start()
        early.join(10)
        assert masks == [{"SigBlk": True, "SigCgt": False}]  # sent while held, before the server's handler existed
        wait_for(lambda: "configuration reloaded" in (tmp_path / "server.log").read_text())
        assert client(port, ACME).status().own_active_jobs == 0
        assert proc.terminate() == 0
    finally:
        proc.close()


def hang_up_once(proc: ServerProcess, mask: str, seen: list[dict[str, bool]]) -> threading.Thread:
    """A started thread that sends SIGHUP to the server process as soon as /proc shows the signal in `mask`
    (SigCgt: a handler catches it; SigBlk: it is held), appending to `seen` which masks held it then."""
    bit = 1 << (signal.SIGHUP - 1)

    def watch() -> None:
        while proc.proc is None:
            time.sleep(0.0005)
        status = Path(f"/proc/{proc.proc.pid}/status")
        while proc.proc.poll() is None:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
            if int(fields[mask], 16) & bit:
                seen.append({name: bool(int(fields[name], 16) & bit) for name in ("SigBlk", "SigCgt")})
                proc.proc.send_signal(signal.SIGHUP)
                return
            time.sleep(0.0005)

    thread = threading.Thread(target=watch)
    thread.start()
    return thread


# ---- a tenant name is its namespace for good ----

WITHOUT_ACME = edited(tenants=[{"name": "globex", "token": GLOBEX}])
NEW_ACME = edited(tenants=[{"name": "acme", "token": ACME2}, {"name": "globex", "token": GLOBEX}])
ACME_BACK = edited(tenants=[{"name": "acme", "token": ACME2, "reinstate": True}, {"name": "globex", "token": GLOBEX}])


def serve(store: Path, doc: dict[str, Any]) -> RunningServer:
    return start_server(parse_config(doc), ServerOptions(store=str(store), listen="127.0.0.1:0"))


def test_a_reload_giving_a_removed_tenants_name_back_while_it_owns_jobs_is_refused_unless_reinstated(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with running(tmp_path / "log.db") as srv:
        client(srv, ACME).submit("a1", sow())
        assert reload(srv, WITHOUT_ACME)
        before = srv.scheduler.config
        assert not reload(srv, NEW_ACME)
        assert srv.scheduler.config is before
        refusal = next(r for r in caplog.records if r.getMessage().startswith("configuration reload refused"))
        assert refusal.fields["error"].startswith(  # type: ignore[attr-defined]
            "tenants 'acme': own jobs but were not in the configuration this store last served with")
        assert code_of(lambda: client(srv, ACME2).status()) == "UNAUTHENTICATED"
        assert reload(srv, ACME_BACK)  # the same tenant, coming back: its jobs are its own again
        assert client(srv, ACME2).get_job("a1").view.id == "a1"


def test_a_restart_giving_a_removed_tenants_name_back_while_it_owns_jobs_is_refused_unless_reinstated(
        tmp_path: Path) -> None:
    store = tmp_path / "log.db"
    with running(store) as srv:
        client(srv, ACME).submit("a1", sow())
    serve(store, WITHOUT_ACME).stop(0)  # a restart without acme: its jobs stay, the store records it was taken out
    with pytest.raises(ConfigError, match=r"tenants 'acme': own jobs but were not in the configuration this store "
                                          r"last served with.*set `reinstate = true`"):
        serve(store, NEW_ACME)
    srv = serve(store, ACME_BACK)  # the refusal changed nothing: the store opens again
    try:
        assert client(srv, ACME2).get_job("a1").view.id == "a1"
    finally:
        srv.stop(0)
    serve(store, NEW_ACME).stop(0)  # recorded as configured since: no flag needed any more


def test_a_new_tenant_and_a_removed_tenant_that_owned_nothing_take_their_names_without_a_flag(tmp_path: Path) -> None:
    with running(tmp_path / "log.db") as srv:
        assert reload(srv, WITHOUT_ACME) and reload(srv, NEW_ACME)  # acme never submitted anything
        assert reload(srv, edited(tenants=[*NEW_ACME["tenants"], {"name": "initech", "token": "initech-token"}]))
        assert client(srv, "initech-token").submit("i1", sow()).job == "i1"


def test_a_store_that_recorded_no_tenants_takes_the_configured_ones_as_they_are(tmp_path: Path) -> None:
    store = tmp_path / "log.db"
    with running(store) as srv:
        client(srv, ACME).submit("a1", sow())
        srv.scheduler.store._db.execute("DELETE FROM meta WHERE key = 'tenants'")  # a store from before the record
    serve(store, WITHOUT_ACME).stop(0)
    with pytest.raises(ConfigError, match="tenants 'acme': own jobs"):
        serve(store, NEW_ACME)


def test_reinstate_must_be_a_boolean() -> None:
    doc = edited(tenants=[{"name": "acme", "token": ACME, "reinstate": "yes"}])
    with pytest.raises(ConfigError, match=r"tenants\[0\]\.reinstate \(value 'yes'\): Input should be a valid boolean"):
        parse_config(doc)
    assert parse_config(ACME_BACK).reinstated == frozenset({"acme"})


def test_an_offline_replay_of_a_store_neither_checks_nor_records_its_tenants(tmp_path: Path) -> None:
    from server.scheduler import DurableScheduler
    from server.service import encode_reply
    from server.store import CommandStore
    store = tmp_path / "log.db"
    with running(store) as srv:
        client(srv, ACME).submit("a1", sow())
    serve(store, WITHOUT_ACME).stop(0)
    config = parse_config(NEW_ACME)
    reader = DurableScheduler(config, CommandStore(store, config.identity(), read_only=True), encode_reply)
    try:  # state-digest --store: a replay with whatever configuration is at hand
        assert reader.store.configured_tenants() == frozenset({"globex"})
    finally:
        reader.close()
