"""`sowsched serve` and `sowsched state-digest` (from a running server or by replaying a store offline)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.main import main
from clients.client import SchedulerClient
from server.app import ServerOptions, StartupError, start_server
from tests.cli.commands.test_jobs import undocumented_arguments
from tests.grpc_support import ACME, OP, PATIENT, PLATFORM, ServerProcess, config, running, sow, toml_text


def test_state_digest_of_a_server_equals_the_offline_replay_of_its_store(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    proc = ServerProcess(tmp_path, None, "--snapshot-every", "2")
    try:
        port = proc.start()
        with SchedulerClient(f"127.0.0.1:{port}", ACME, retry=PATIENT) as acme:
            acme.submit("j1", sow())
            acme.report_arrival("j1")
            acme.submit("j2", sow())
        assert main(["state-digest", "--server", f"127.0.0.1:{port}", "--token", OP, "--json"]) == 0
        remote = json.loads(capsys.readouterr().out)
        assert proc.terminate() == 0
    finally:
        proc.close()
    assert main(["state-digest", "--store", f"sqlite:///{proc.store}", "--config", str(proc.config), "--json"]) == 0
    offline = json.loads(capsys.readouterr().out)
    assert offline["digest"] == remote["digest"]
    assert (offline["snapshot_seq"], offline["commands"]) == (2, 1)  # the snapshot after 2 commands, then 1
    assert main(["state-digest", "--store", str(proc.store), "--config", str(proc.config), "--full-replay",
                 "--json"]) == 0
    full = json.loads(capsys.readouterr().out)
    assert full["digest"] == remote["digest"] and (full["snapshot_seq"], full["commands"]) == (0, 3)
    assert full["replay_s"] >= 0.0
    assert main(["state-digest", "--store", str(proc.store), "--config", str(proc.config)]) == 0
    assert capsys.readouterr().out.strip() == remote["digest"]


@pytest.mark.parametrize(("argv", "match"), [
    (["--store", "missing.db", "--config", "platform.toml"], "no such file"),
    (["--store", "x.db"], "--store needs --config"),
])
def test_state_digest_refuses_a_missing_store_or_config(tmp_path: Path, argv: list[str], match: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["state-digest", *[str(tmp_path / a) if a.endswith((".db", ".toml")) else a for a in argv]]) == 2
    assert match in capsys.readouterr().err


def test_state_digest_with_a_tenant_token_exits_1_instead_of_printing_an_empty_digest(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with running(tmp_path / "s.db") as srv:
        assert main(["state-digest", "--server", f"127.0.0.1:{srv.port}", "--token", ACME, "--json"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "PERMISSION_DENIED: the state digest needs the operator token" in err


def test_state_digest_and_simulate_of_an_unreachable_server_exit_69(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["state-digest", "--server", "127.0.0.1:1", "--retries", "1"]) == 69
    assert "UNAVAILABLE" in capsys.readouterr().err
    assert main(["simulate", "--workload", "toy", "--server", "127.0.0.1:1", "--retries", "1"]) == 69
    assert "sowsched simulate: UNAVAILABLE" in capsys.readouterr().err
    assert main(["simulate", "--workload", "toy", "--server", "127.0.0.1:1", "--retries", "0"]) == 2
    assert "sowsched simulate: --retries=0 is below the bound 1" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["simulate", "--workload", "toy"], ["state-digest"]])
def test_a_missing_tls_ca_file_is_a_usage_error_naming_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                command: list[str]) -> None:
    missing = tmp_path / "no-ca.pem"
    assert main([*command, "--server", "127.0.0.1:1", "--tls-ca", str(missing), "--retries", "1"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"sowsched {command[0]}: ") and str(missing) in err
    assert "Traceback" not in err


def test_serve_refuses_a_negative_snapshot_interval(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "platform.toml"
    config.write_text(toml_text(PLATFORM))
    assert main(["serve", "--store", str(tmp_path / "s.db"), "--config", str(config), "--snapshot-every", "-1"]) == 2
    assert "snapshot_every=-1 is below the bound 0" in capsys.readouterr().err


def test_serve_refuses_a_bad_configuration(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "platform.toml"
    config.write_text(toml_text({**PLATFORM, "C_m": 99}))
    assert main(["serve", "--store", str(tmp_path / "s.db"), "--config", str(config)]) == 2
    assert "C_m=99 exceeds the bound C=8" in capsys.readouterr().err


def test_serve_refuses_a_store_written_for_another_platform(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    proc = ServerProcess(tmp_path)
    try:
        proc.start()
        assert proc.terminate() == 0
    finally:
        proc.close()
    other = tmp_path / "other.toml"
    other.write_text(toml_text({**PLATFORM, "seed": 4}))
    assert main(["serve", "--store", str(proc.store), "--config", str(other)]) == 2
    assert "not for the configured" in capsys.readouterr().err


@pytest.mark.parametrize(("listen", "match"), [
    ("127.0.0.1:99999", "listen='127.0.0.1:99999': port 99999 is above the bound 65535"),
    ("nonsense", "listen='nonsense': cannot bind"),
])
def test_serve_refuses_a_listen_address_it_cannot_use(listen: str, match: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "platform.toml"
    config.write_text(toml_text(PLATFORM))
    assert main(["serve", "--listen", listen, "--store", str(tmp_path / "s.db"), "--config", str(config)]) == 2
    assert f"sowsched serve: {match}" in capsys.readouterr().err


def test_a_second_server_on_a_port_in_use_is_refused_instead_of_sharing_it(tmp_path: Path) -> None:
    with running(tmp_path / "a.db") as first:
        taken = f"127.0.0.1:{first.port}"
        with pytest.raises(StartupError, match=f"listen='{taken}': cannot bind"):
            start_server(config(), ServerOptions(store=str(tmp_path / "b.db"), listen=taken)).stop(0)


def test_serve_refuses_a_negative_grace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["serve", "--store", str(tmp_path / "s.db"), "--config", "platform.toml", "--grace", "-1"])
    assert info.value.code == 2
    assert "argument --grace: -1.0 is not a number of seconds >= 0" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--min-ping-interval", "--keepalive-time", "--keepalive-timeout"])
@pytest.mark.parametrize("value", ["0", "nan", "1e10"])
def test_serve_refuses_a_keepalive_interval_outside_its_bounds(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                               flag: str, value: str) -> None:
    with pytest.raises(SystemExit) as info:
        main(["serve", "--store", str(tmp_path / "s.db"), "--config", "platform.toml", flag, value])
    assert info.value.code == 2
    assert f"argument {flag}: {float(value)} is outside [0.001, 1e9] seconds" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["serve", "state-digest"])
def test_every_argument_has_a_help_text(command: str) -> None:
    assert undocumented_arguments(command) == []


def test_a_certificate_and_key_that_do_not_load_are_named_in_the_refusal(tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.write_text("not a certificate\n")
    key.write_text("not a key\n")
    options = ServerOptions(store=str(tmp_path / "s.db"), listen="127.0.0.1:0", tls_cert=cert, tls_key=key)
    with pytest.raises(StartupError, match="or the TLS certificate and key are not a matching PEM pair"):
        start_server(config(), options).stop(0)


def test_a_second_server_on_a_store_in_use_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config_file = tmp_path / "platform.toml"
    config_file.write_text(toml_text(PLATFORM))
    with running(tmp_path / "s.db"):
        assert main(["serve", "--listen", "127.0.0.1:0", "--store", str(tmp_path / "s.db"),
                     "--config", str(config_file)]) == 2
    assert "s.db is in use by another server" in capsys.readouterr().err


def test_an_offline_digest_needs_no_token_secrets_and_reads_a_live_store(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    with running(tmp_path / "s.db") as srv:
        SchedulerClient(f"127.0.0.1:{srv.port}", ACME).submit("j1", sow())
        live = srv.scheduler.engine.digest()
        secretless = tmp_path / "secretless.toml"  # the same platform, tokens only named by variables
        secretless.write_text(toml_text(PLATFORM).replace(f'token = "{OP}"', 'token_env = "UNSET_OPERATOR_TOKEN"'))
        monkeypatch.delenv("UNSET_OPERATOR_TOKEN", raising=False)
        assert main(["state-digest", "--store", str(tmp_path / "s.db"), "--config", str(secretless), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["digest"] == live
