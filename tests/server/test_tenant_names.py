"""A tenant name is its namespace for good: the store records the configured tenants at every start-up and reload,
and a configuration giving a name that owns jobs back without `reinstate = true` is refused (server/scheduler.py
_adopt_tenants, server/store.py record_tenants)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from mechanism.sow import SoW
from server.config import OPERATOR, ConfigError, ServerConfig, parse_config
from server.scheduler import DurableScheduler
from server.service import encode_reply
from server.store import CommandStore, StoreError
from tests.grpc_support import ACME, CONFIG, GLOBEX, OP, FailingCommit, sow

NEW_ACME_TOKEN = "acme-token-of-a-new-tenant"


def configured(*tenants: dict[str, Any]) -> ServerConfig:
    doc = copy.deepcopy(CONFIG)
    doc["tenants"] = list(tenants)
    return parse_config(doc)


BOTH = configured({"name": "acme", "token": ACME}, {"name": "globex", "token": GLOBEX})
WITHOUT_ACME = configured({"name": "globex", "token": GLOBEX})
NEW_ACME = configured({"name": "acme", "token": NEW_ACME_TOKEN}, {"name": "globex", "token": GLOBEX})


def open_store(path: Path, config: ServerConfig, snapshot_every: int = 0) -> DurableScheduler:
    return DurableScheduler(config, CommandStore(path, config.identity()), encode_reply, snapshot_every=snapshot_every)


def submit(sched: DurableScheduler, tenant: str, job_id: str, outcomes: list[list[Any]] | None = None) -> None:
    operator = sched.config.authenticate(OP)
    assert operator is not None
    body = SoW.parse(sow(outcomes=outcomes), sched.config.platform).model_dump(mode="json")
    sched.execute(operator, f"submit-{tenant}-{job_id}", "submit", {"tenant": tenant, "job_id": job_id, "sow": body})


def acme_with_a_job_then_taken_out(path: Path) -> None:
    """A store whose acme submitted a job and was then taken out of the configuration (a restart without it)."""
    sched = open_store(path, BOTH)
    submit(sched, "acme", "a1")
    sched.close()
    open_store(path, WITHOUT_ACME).close()


def test_a_reload_whose_tenant_record_fails_to_commit_is_refused_and_the_server_serves_on(tmp_path: Path) -> None:
    sched = open_store(tmp_path / "s.db", BOTH)
    try:
        real = sched.store._db
        sched.store._db = FailingCommit(real)  # type: ignore[assignment]  # the disk is full for a moment
        with pytest.raises(StoreError, match="cannot"):
            sched.reconfigure(WITHOUT_ACME)
        sched.store._db = real
        assert sched.config is BOTH and sched.store.configured_tenants() == frozenset({"acme", "globex"})
        submit(sched, "acme", "a1")  # the failed record left no transaction open: the log takes commands again
        assert sched.log_seq == 1 and sched.broken is None
    finally:
        sched.close()


def test_a_name_whose_only_jobs_are_archived_is_refused_to_a_new_tenant(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    sched = open_store(path, BOTH, snapshot_every=1)
    submit(sched, "acme", "a1", outcomes=[[0, 1, 1.0]])
    for _ in range(12):  # the job ends and a snapshot archives it: the engine forgets it
        sched.execute(OPERATOR, None, "advance", {})
    sched.close()
    sched = open_store(path, WITHOUT_ACME, snapshot_every=1)
    assert sched.restored_from > 0 and not sched.engine.jobs and sched.store.archive.holds_tenant("acme")
    sched.close()
    with pytest.raises(ConfigError, match="tenants 'acme': own jobs"):
        open_store(path, NEW_ACME, snapshot_every=1)


def test_a_refused_start_up_records_nothing_and_releases_the_store(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    acme_with_a_job_then_taken_out(path)
    with pytest.raises(ConfigError, match=r"tenants 'acme': own jobs .* set `reinstate = true` in the entry"):
        open_store(path, NEW_ACME)
    reader = CommandStore(path, NEW_ACME.identity(), read_only=True)
    try:
        assert reader.configured_tenants() == frozenset({"globex"})
    finally:
        reader.close()
    open_store(path, WITHOUT_ACME).close()  # the one-writer lock was released


def test_the_refusal_names_every_returning_name_that_owns_jobs_and_only_those(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    sched = open_store(path, BOTH)
    submit(sched, "acme", "a1")
    submit(sched, "globex", "g1")
    sched.close()
    open_store(path, configured()).close()  # no tenants at all (authentication off): both taken out
    back = configured({"name": "acme", "token": ACME}, {"name": "globex", "token": GLOBEX},
                      {"name": "initech", "token": "initech-token-1"})
    with pytest.raises(ConfigError, match=r"^tenants 'acme', 'globex': own jobs"):
        open_store(path, back)


def test_a_start_up_whose_tenant_record_cannot_be_written_is_refused_and_releases_the_store(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = CommandStore(path, BOTH.identity())
    store._db = FailingCommit(store._db)  # type: ignore[assignment]
    with pytest.raises(StoreError, match=r"s\.db: cannot record the configured tenants: disk I/O error"):
        DurableScheduler(BOTH, store, encode_reply, snapshot_every=0)  # `sowsched serve` exits 2 with this message
    reader = CommandStore(path, BOTH.identity(), read_only=True)
    try:
        assert reader.configured_tenants() is None  # nothing recorded
    finally:
        reader.close()
    open_store(path, BOTH).close()  # the one-writer lock is free


def test_a_backup_restored_under_another_name_carries_the_record_and_refuses_the_name_too(tmp_path: Path) -> None:
    from server.backup import backup_store
    path = tmp_path / "s.db"
    acme_with_a_job_then_taken_out(path)
    copy_path = backup_store(path, tmp_path / "other.db").path
    with pytest.raises(ConfigError, match="tenants 'acme': own jobs"):
        open_store(copy_path, NEW_ACME)
    reinstated = configured({"name": "acme", "token": NEW_ACME_TOKEN, "reinstate": True},
                            {"name": "globex", "token": GLOBEX})
    open_store(copy_path, reinstated).close()
    open_store(path, WITHOUT_ACME).close()  # the original's record is its own: acme is still out there
    with pytest.raises(ConfigError, match="tenants 'acme': own jobs"):
        open_store(path, NEW_ACME)


def test_sowsched_serve_refusing_a_name_back_exits_2_naming_the_tenant_and_the_fix(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.grpc_support import PLATFORM, ROOT
    path = tmp_path / "s.db"
    acme_with_a_job_then_taken_out(path)
    toml = ["[platform]", *(f"{k} = {v!r}" for k, v in PLATFORM.items()), "[operator]", f'token = "{OP}"',
            "[[tenants]]", 'name = "acme"', f'token = "{NEW_ACME_TOKEN}"', "[[tenants]]", 'name = "globex"',
            f'token = "{GLOBEX}"']
    (tmp_path / "platform.toml").write_text("\n".join(toml) + "\n")
    run = subprocess.run([sys.executable, "-m", "cli.commands.server", "serve", "--config",
                          str(tmp_path / "platform.toml"), "--store", str(path), "--listen", "127.0.0.1:0",
                          "--log-level", "warning"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert run.stderr.startswith("sowsched serve: tenants 'acme': own jobs but were not in the configuration this "
                                 "store last served with")
    assert "give a new tenant a new name, or set `reinstate = true` in the entry" in run.stderr


def fail_to_bind(path: Path, config: ServerConfig) -> None:
    """Start a server on `path` with `config` on a port in use: it fails after the replay."""
    import socket

    from server.app import ServerOptions, StartupError, start_server
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(StartupError, match="cannot bind"):
            start_server(config, ServerOptions(store=str(path), listen=f"127.0.0.1:{taken.getsockname()[1]}"))


def recorded(path: Path) -> frozenset[str] | None:
    """The store's tenant record, read as an offline reader does."""
    reader = CommandStore(path, BOTH.identity(), read_only=True)
    try:
        return reader.configured_tenants()
    finally:
        reader.close()


def test_a_start_up_that_fails_after_its_replay_puts_the_tenant_record_back(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    sched = open_store(path, BOTH)
    submit(sched, "acme", "a1")
    sched.close()
    fail_to_bind(path, WITHOUT_ACME)  # the start-up fails after the replay recorded WITHOUT_ACME's tenants
    assert recorded(path) == frozenset({"acme", "globex"})  # what last served, not what never did
    open_store(path, BOTH).close()  # acme needs no reinstate: the configuration that never served did not count


def test_a_failed_first_start_up_leaves_no_tenant_record(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    fail_to_bind(path, BOTH)
    assert recorded(path) is None


def test_a_reload_refused_by_a_failing_store_is_logged_by_its_message_without_a_traceback(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from tests.grpc_support import running
    with running(tmp_path / "s.db") as srv:
        real = srv.scheduler.store._db
        srv.scheduler.store._db = FailingCommit(real)  # type: ignore[assignment]
        try:
            assert not srv.reload(lambda: WITHOUT_ACME)
        finally:
            srv.scheduler.store._db = real
    refusal = next(r for r in caplog.records if r.getMessage().startswith("configuration reload refused"))
    assert not refusal.exc_info
    assert refusal.fields["error"].endswith("cannot record the configured tenants: disk I/O error")  # type: ignore[attr-defined]
