"""platform.toml: platform, operator and tenant tokens, validated with messages naming field, value and bound."""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from server.config import EXAMPLE, ConfigError, load_config, parse_config
from server.limits import MAX_TOKEN_FILE
from tests.grpc_support import ACME, CONFIG, GLOBEX, OP, PLATFORM, toml_text


def with_(**changes: Any) -> dict[str, Any]:
    return {**CONFIG, **changes}


def test_the_test_configuration_parses_and_maps_tokens_to_principals() -> None:
    cfg = parse_config(CONFIG)
    assert cfg.tenants == ("acme", "globex") and cfg.auth_enabled
    assert [cfg.authenticate(t).name for t in (OP, ACME, GLOBEX)] == ["operator", "acme", "globex"]  # type: ignore[union-attr]
    assert cfg.authenticate("nobody-token") is None


def test_the_readme_example_parses(monkeypatch: pytest.MonkeyPatch) -> None:
    import tomllib
    monkeypatch.setenv("SOWSCHED_OPERATOR_TOKEN", "op-from-environment")
    monkeypatch.setenv("SOWSCHED_GLOBEX_TOKEN", "globex-from-environment")
    cfg = parse_config(tomllib.loads(EXAMPLE))
    assert cfg.authenticate("op-from-environment").is_operator  # type: ignore[union-attr]
    assert cfg.platform.C == 32


def test_max_active_jobs_is_per_tenant_and_optional() -> None:
    cfg = parse_config(with_(tenants=[{"name": "acme", "token": ACME, "max_active_jobs": 3},
                                      {"name": "globex", "token": GLOBEX}]))
    assert dict(cfg.max_active_jobs) == {"acme": 3}
    assert dict(parse_config(CONFIG).max_active_jobs) == {}


def test_the_prediction_engines_conformal_step_is_off_unless_configured() -> None:
    assert parse_config(with_()).prediction_conformal_gamma is None
    assert parse_config(with_(server={"prediction_conformal_gamma": 0.02})).prediction_conformal_gamma == 0.02
    assert parse_config(with_(server={"prediction_conformal_gamma": 1})).prediction_conformal_gamma == 1.0


def test_a_file_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "platform.toml"
    path.write_text(toml_text(PLATFORM))
    assert load_config(path).platform.S_m == PLATFORM["S_m"]


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (with_(platform={**PLATFORM, "C_m": 9}), r"C_m=9 exceeds the bound C=8"),
        (with_(platform={**PLATFORM, "C": 0}), r"platform.C \(value 0\).*greater than or equal to 1"),
        (
            with_(tenants=[{"name": "acme", "token": "short"}]),
            r"tenants\[0\]\.token \(value hidden: 5 characters\).*at least 8",
        ),
        (
            with_(tenants=[{"name": "acme"}]),
            r"give exactly one of token \(at least 8 characters\), token_env or token_file",
        ),
        (with_(tenants=[{"name": "operator", "token": "tok-tok-tok"}]), r"name='operator' is reserved"),
        # wall-clock rounds are logged as the caller 'clock', which the scheduler lets act on every job
        (with_(tenants=[{"name": "clock", "token": "tok-tok-tok"}]), r"name='clock' is reserved for the wall clock"),
        (with_(tenants=[{"name": "bad name", "token": "tok-tok-tok"}]), r"tenants\[0\]\.name \(value 'bad name'\)"),
        (
            with_(tenants=[{"name": "a", "token": "tok-tok-1"}, {"name": "a", "token": "tok-tok-2"}]),
            r"tenants\[1\].name='a' is used twice",
        ),
        (with_(tenants=[{"name": "a", "token": OP}]), r"tenants\[0\] \('a'\) reuses the token of 'operator'"),
        ({"platform": PLATFORM, "tenants": [{"name": "a", "token": "tok-tok-1"}]}, r"\[operator\] is missing"),
        (with_(server={"oracle": "psychic"}), r"server.oracle \(value 'psychic'\)"),
        (
            with_(server={"prediction_conformal_gamma": 0.0}),
            r"server\.prediction_conformal_gamma \(value 0\.0\).*greater than 0",
        ),
        (
            with_(server={"prediction_conformal_gamma": 1.5}),
            r"server\.prediction_conformal_gamma \(value 1\.5\).*less than or equal to 1",
        ),
        (
            with_(server={"prediction_conformal_gamma": "0.02"}),
            r"server\.prediction_conformal_gamma \(value '0\.02'\).*valid number",
        ),
        (with_(extra=1), r"extra \(value 1\).*not permitted"),
        (
            with_(tenants=[{"name": "a", "token": "tok-tok-1", "max_active_jobs": 0}]),
            r"tenants\[0\]\.max_active_jobs \(value 0\).*greater than or equal to 1",
        ),
        (
            with_(tenants=[{"name": "a", "token": "tok-tok-1", "max_active_jobs": "many"}]),
            r"tenants\[0\]\.max_active_jobs \(value 'many'\).*valid integer",
        ),
        (
            with_(tenants=[{"name": "a", "token": "tok-tok-1", "max_active_jobs": True}]),
            r"tenants\[0\]\.max_active_jobs \(value True\).*valid integer",
        ),
        (
            with_(tenants=[{"name": "a", "token": "tok-tok-1", "max_active_jobs": "3"}]),
            r"tenants\[0\]\.max_active_jobs \(value '3'\).*valid integer",
        ),
    ],
)
def test_invalid_configurations_are_rejected_naming_the_field(data: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        parse_config(data)


def test_a_token_from_an_unset_variable_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_SUCH_TOKEN", raising=False)
    with pytest.raises(ConfigError, match=r"operator\.token_env='NO_SUCH_TOKEN': the variable is unset"):
        parse_config(with_(operator={"token_env": "NO_SUCH_TOKEN"}))


def test_a_token_file_is_read_relative_to_the_configuration_file_without_its_newline(tmp_path: Path) -> None:
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "acme").write_text("acme-from-a-file\n")
    path = tmp_path / "platform.toml"
    path.write_text(toml_text(PLATFORM).replace(f'token = "{ACME}"', 'token_file = "secrets/acme"'))
    cfg = load_config(path)
    assert cfg.authenticate("acme-from-a-file").name == "acme"  # type: ignore[union-attr]
    assert cfg.authenticate(ACME) is None
    assert load_config(path, resolve_tokens=False).tokens == {}  # offline tools read no secret


@pytest.mark.parametrize(("content", "match"), [
    (None, r"tenants\[0\]\.token_file='.*/acme': cannot read the token \(No such file or directory\)"),
    ("short\n", r"tenants\[0\]\.token_file='.*/acme' line 1: the token has 5 characters, below the bound 8"),
    ("acme-token-new-1\nshort\n", r"token_file='.*/acme' line 2: the token has 5 characters, below the bound 8"),
    ("\n  \n", r"token_file='.*/acme': no token in the file \(it is empty or blank\)"),
    ("two words here\n", r"the token holds white space inside"),
    (b"\xff\xfe-not-text", r"cannot read the token \(not UTF-8 text\)"),
])
def test_a_bad_token_file_is_refused_naming_the_tenant_the_file_and_the_bound(
        tmp_path: Path, content: str | bytes | None, match: str) -> None:
    if isinstance(content, bytes):
        (tmp_path / "acme").write_bytes(content)
    elif content is not None:
        (tmp_path / "acme").write_text(content)
    data = with_(tenants=[{"name": "acme", "token_file": "acme"}])
    with pytest.raises(ConfigError, match=match):
        parse_config(data, base=tmp_path)


def test_every_line_of_a_token_file_is_a_token_of_its_tenant_so_a_rotation_can_overlap(tmp_path: Path) -> None:
    (tmp_path / "acme").write_text("acme-token-new-1\n\n  acme-token-old-0  \n")
    cfg = parse_config(with_(tenants=[{"name": "acme", "token_file": "acme"}]), base=tmp_path)
    assert [cfg.authenticate(t).name for t in ("acme-token-new-1", "acme-token-old-0")] == ["acme", "acme"]  # type: ignore[union-attr]
    (tmp_path / "globex").write_text(f"globex-own-token\n{OP}\n")
    with pytest.raises(ConfigError, match=r"tenants\[1\] \('globex'\) reuses the token of 'operator'"):
        parse_config(
            with_(tenants=[{"name": "acme", "token_file": "acme"}, {"name": "globex", "token_file": "globex"}]),
            base=tmp_path,
        )


@pytest.mark.parametrize(("tenant", "shown"), [
    ({"name": "acme", "toke": "acme-secret-value"}, r"tenants\[0\]\.toke \(value hidden: 17 characters\): Extra"),
    ({"name": "acme", "token": 12345678}, r"tenants\[0\]\.token \(value hidden: int\): Input should be a valid string"),
])
def test_a_configuration_error_describes_a_token_or_an_unknown_key_without_echoing_it(
        tenant: dict[str, Any], shown: str) -> None:
    with pytest.raises(ConfigError, match=shown) as info:
        parse_config(with_(tenants=[tenant]))
    assert "secret-value" not in str(info.value) and "12345678" not in str(info.value)


def test_file_errors_name_the_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[platform]\nC = = 3\n")
    with pytest.raises(ConfigError, match=r"bad.toml: not valid TOML: .*line 2"):
        load_config(bad)
    with pytest.raises(ConfigError, match=r"missing\.toml: cannot read the configuration"):
        load_config(tmp_path / "missing.toml")
    invalid = tmp_path / "invalid.toml"
    invalid.write_text(toml_text({**PLATFORM, "H": 0.5}))
    with pytest.raises(ConfigError, match=r"invalid.toml: platform.H \(value 0.5\)"):
        load_config(invalid)


def test_without_operator_and_tenants_authentication_is_off() -> None:
    assert not parse_config({"platform": PLATFORM}).auth_enabled


@pytest.mark.parametrize(("content", "match"), [
    (b"[platform]\nC = 8 # caf\xe9\n", r"bad\.toml: not UTF-8 text"),
    (b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n", r"bad\.toml: not valid TOML: nested too deeply"),
])
def test_a_configuration_file_that_is_not_utf8_or_nests_too_deeply_is_a_config_error(
        tmp_path: Path, content: bytes, match: str) -> None:
    (tmp_path / "bad.toml").write_bytes(content)  # not a UnicodeDecodeError or RecursionError: a reload survives it
    with pytest.raises(ConfigError, match=match):
        load_config(tmp_path / "bad.toml")


def test_a_token_file_with_white_space_inside_is_refused_without_calling_its_length_short(tmp_path: Path) -> None:
    (tmp_path / "acme").write_text("two words here\n")
    with pytest.raises(ConfigError, match=r"token_file='.*/acme' line 1: the token holds white space inside") as info:
        parse_config(with_(tenants=[{"name": "acme", "token_file": "acme"}]), base=tmp_path)
    assert "below the bound" not in str(info.value)


def test_a_token_file_that_is_not_a_regular_file_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "acme"
    os.mkfifo(fifo)  # no writer: opening it for reading would block the reload (and SIGTERM behind it) for ever
    outcome: list[BaseException | None] = []

    def read() -> None:
        try:
            parse_config(with_(tenants=[{"name": "acme", "token_file": "acme"}]), base=tmp_path)
            outcome.append(None)
        except BaseException as exc:  # the test inspects it
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(30)  # returns at once unless the read blocks
    if reader.is_alive():  # release the blocked open before failing
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(2)
        pytest.fail("reading a FIFO token_file blocked")
    assert isinstance(outcome[0], ConfigError)
    assert re.search(r"tenants\[0\]\.token_file='.*/acme': not a regular file", str(outcome[0]))
    with pytest.raises(ConfigError, match=r"token_file='.*': not a regular file"):
        parse_config(with_(tenants=[{"name": "acme", "token_file": str(tmp_path)}]), base=tmp_path)  # a directory


def test_a_token_file_above_the_size_bound_is_refused_naming_its_size(tmp_path: Path) -> None:
    (tmp_path / "acme").write_text("x" * (MAX_TOKEN_FILE + 1))
    with pytest.raises(ConfigError, match=rf"token_file='.*/acme': {MAX_TOKEN_FILE + 1} bytes, above the bound "
                                          rf"{MAX_TOKEN_FILE}"):
        parse_config(with_(tenants=[{"name": "acme", "token_file": "acme"}]), base=tmp_path)


def test_a_token_file_is_read_through_symbolic_links_and_after_an_atomic_rename(tmp_path: Path) -> None:
    # a Kubernetes secret volume: acme -> ..data/acme, ..data -> a timestamped directory swapped by rename
    for name, token in (("v1", "acme-token-one"), ("v2", "acme-token-two")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "acme").write_text(token + "\n")
    (tmp_path / "..data").symlink_to("v1")
    (tmp_path / "acme").symlink_to("..data/acme")
    data = with_(tenants=[{"name": "acme", "token_file": "acme"}])
    assert parse_config(data, base=tmp_path).authenticate("acme-token-one") is not None
    (tmp_path / "..data_tmp").symlink_to("v2")
    (tmp_path / "..data_tmp").replace(tmp_path / "..data")
    assert parse_config(data, base=tmp_path).authenticate("acme-token-two") is not None
    (tmp_path / "v2" / "acme").unlink()  # a dangling link names the path it was given
    with pytest.raises(ConfigError, match=r"token_file='.*/acme': cannot read the token \(No such file"):
        parse_config(data, base=tmp_path)


def test_an_unreadable_token_file_is_refused_naming_the_reason(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    (tmp_path / "acme").write_text("acme-token-unreadable\n")
    (tmp_path / "acme").chmod(0)
    with pytest.raises(ConfigError, match=r"token_file='.*/acme': cannot read the token \(Permission denied\)"):
        parse_config(with_(tenants=[{"name": "acme", "token_file": "acme"}]), base=tmp_path)


def test_a_token_no_client_can_send_is_refused_naming_the_character(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # gRPC metadata is printable ASCII: such a token would lock its tenant out after a reload reported as applied
    (tmp_path / "acme").write_bytes("\ufeffacme-token-from-windows\r\n".encode())  # a byte order mark
    with pytest.raises(ConfigError, match=r"tenants\[0\]\.token_file='.*/acme' line 1: the token holds U\+FEFF at "
                                          r"character 1, outside printable ASCII"):
        parse_config(with_(tenants=[{"name": "acme", "token_file": "acme"}]), base=tmp_path)
    with pytest.raises(ConfigError, match=r"tenants\[0\]\.token: the token holds U\+00E9 at character 9, outside "
                                          r"printable ASCII"):
        parse_config(with_(tenants=[{"name": "acme", "token": "acme-tok\u00e9n-1"}]))
    monkeypatch.setenv("ACME_TOKEN", "acme-token\x01")
    with pytest.raises(ConfigError, match=r"tenants\[0\]\.token_env='ACME_TOKEN': the token holds U\+0001 at "
                                          r"character 11"):
        parse_config(with_(tenants=[{"name": "acme", "token_env": "ACME_TOKEN"}]))


def test_a_configuration_path_that_is_not_a_regular_file_is_refused_without_blocking(tmp_path: Path) -> None:
    import os
    fifo = tmp_path / "platform.toml"
    os.mkfifo(fifo)  # reading it would wait for a writer for ever
    with pytest.raises(ConfigError, match=r"platform\.toml: cannot read the configuration: not a regular file"):
        load_config(fifo)
    with pytest.raises(ConfigError, match=r"not a regular file"):
        load_config(tmp_path)


def test_a_token_beginning_or_ending_with_a_space_is_refused_since_the_server_strips_what_clients_send(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # the server reads 'authorization: Bearer <token>' and strips the token, so such a token never authenticated:
    # accepted, it locked its holder out (UNAUTHENTICATED with the very token configured)
    for token in ("acme-token-1 ", " acme-token-1"):
        with pytest.raises(ConfigError, match=r"tenants\[0\]\.token: the token begins or ends with a space"):
            parse_config(with_(tenants=[{"name": "acme", "token": token}]))
    monkeypatch.setenv("ACME_TOKEN", "acme-token-1 ")
    with pytest.raises(ConfigError, match=r"tenants\[0\]\.token_env='ACME_TOKEN': the token begins or ends with a "
                                          r"space"):
        parse_config(with_(tenants=[{"name": "acme", "token_env": "ACME_TOKEN"}]))
    with pytest.raises(ConfigError) as info:
        parse_config(with_(tenants=[{"name": "acme", "token": "acme-token-1 "}]))
    assert "acme-token-1" not in str(info.value)  # described, never echoed


def test_every_token_source_takes_8_characters_and_refuses_7(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACME_TOKEN_7", "acme-to")
    monkeypatch.setenv("ACME_TOKEN_8", "acme-tok")
    (tmp_path / "seven").write_text("acme-to\n")
    (tmp_path / "eight").write_text("acme-tok\n")
    for source, short in (({"token": "acme-to"}, r"tenants\[0\]\.token \(value hidden: 7 characters\).*at least 8"),
                          ({"token_env": "ACME_TOKEN_7"}, r"token_env='ACME_TOKEN_7': the variable is unset or shorter "
                                                          r"than 8 characters"),
                          ({"token_file": "seven"}, r"token_file='.*/seven' line 1: the token has 7 characters, below "
                                                    r"the bound 8")):
        with pytest.raises(ConfigError, match=short):
            parse_config(with_(tenants=[{"name": "acme", **source}]), base=tmp_path)
    for source in ({"token": "acme-tok"}, {"token_env": "ACME_TOKEN_8"}, {"token_file": "eight"}):
        cfg = parse_config(with_(tenants=[{"name": "acme", **source}]), base=tmp_path)
        assert cfg.authenticate("acme-tok").name == "acme"  # type: ignore[union-attr]


def test_a_token_may_hold_every_printable_ascii_character_from_the_first_to_the_last() -> None:
    token = "!acme-token~"  # U+0021 and U+007E, the ends of the printable range after the space
    assert parse_config(with_(tenants=[{"name": "acme", "token": token}])).authenticate(token).name == "acme"  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match=r"tenants\[0\]\.token: the token holds U\+007F at character 11"):
        parse_config(with_(tenants=[{"name": "acme", "token": "acme-token\x7f"}]))


def test_a_token_file_of_exactly_the_size_bound_is_read(tmp_path: Path) -> None:
    (tmp_path / "acme").write_text("x" * (MAX_TOKEN_FILE - 1) + "\n")
    cfg = parse_config(with_(tenants=[{"name": "acme", "token_file": "acme"}]), base=tmp_path)
    assert cfg.authenticate("x" * (MAX_TOKEN_FILE - 1)).name == "acme"  # type: ignore[union-attr]
    assert MAX_TOKEN_FILE == 4096  # the bound docs/operations.md documents


def test_a_tenant_name_is_1_to_64_characters_starting_with_a_letter_or_digit() -> None:
    for name in ("a", "7", "a" * 64, "A.b_c-9"):
        assert parse_config(with_(tenants=[{"name": name, "token": ACME}])).tenants == (name,)
    for name in ("a" * 65, "-acme", ".acme", "_acme", ""):
        with pytest.raises(ConfigError, match=rf"tenants\[0\]\.name \(value '{re.escape(name)}'\): String should match "
                                              r"pattern"):
            parse_config(with_(tenants=[{"name": name, "token": ACME}]))


def test_two_token_sources_are_refused_without_echoing_the_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACME_TOKEN", "acme-from-environment")
    for both in (
        {"token": "acme-secret-value", "token_env": "ACME_TOKEN"},
        {"token": "acme-secret-value", "token_file": "acme"},
        {"token_env": "ACME_TOKEN", "token_file": "acme"},
    ):
        with pytest.raises(ConfigError, match=r"^tenants\[0\]: give exactly one of token") as info:
            parse_config(with_(tenants=[{"name": "acme", **both}]))
        assert "secret-value" not in str(info.value)  # the error is about the whole entry: its value is not shown


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({**CONFIG, "platform": {**PLATFORM, "C_m": PLATFORM["C"] + 1}},
         rf"^platform: C_m={PLATFORM['C'] + 1} exceeds the bound C={PLATFORM['C']}$"),
        ({"platform": PLATFORM, "tenants": [{"name": "acme", "token": ACME}]},
         r"^\(top level\): tenants are configured but \[operator\] is missing: give the operator a token$"),
    ],
)
def test_a_model_level_error_reads_without_pydantics_value_error_prefix(data: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        parse_config(data)


@pytest.mark.parametrize(
    ("source", "match"),
    [
        (
            {"token_env": ""},
            r"tenants\[0\]\.token_env \(value hidden: 0 characters\): String should have at least 1 character",
        ),
        (
            {"token_file": ""},
            r"tenants\[0\]\.token_file \(value hidden: 0 characters\): String should have at least 1 "
            r"character",
        ),
        ({"token_file": 12345678}, r"tenants\[0\]\.token_file \(value hidden: int\)"),
    ],
)
def test_an_empty_token_variable_or_file_name_is_refused_as_a_field(source: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        parse_config(with_(tenants=[{"name": "acme", **source}]))


def test_an_unknown_key_in_the_server_section_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"server\.orcale \(value hidden: 5 characters\): Extra inputs are not "
                                          r"permitted"):
        parse_config(with_(server={"orcale": "exact"}))


def test_a_token_file_may_repeat_a_token_of_its_own_tenant(tmp_path: Path) -> None:
    (tmp_path / "acme").write_text("acme-token-new-1\nacme-token-new-1\n")  # a rotation half done by hand
    cfg = parse_config(with_(tenants=[{"name": "acme", "token_file": "acme"}]), base=tmp_path)
    assert cfg.authenticate("acme-token-new-1").name == "acme"  # type: ignore[union-attr]


def test_a_caller_is_renewed_under_a_new_configuration_only_if_its_token_still_names_it() -> None:
    old = parse_config(CONFIG)
    caller = old.authenticate(ACME)
    assert caller is not None and caller.holds(old) and caller.renewed(old) is caller
    same = parse_config(CONFIG)  # a reload that changed nothing for acme
    assert caller.holds(same) and caller.renewed(same) == caller
    moved = parse_config(
        with_(tenants=[{"name": "acme", "token": "acme-token-new-1"}, {"name": "globex", "token": ACME}])
    )
    assert not caller.holds(moved) and caller.renewed(moved) is None  # the token now names globex, not acme
    revoked = parse_config(with_(tenants=[{"name": "acme", "token": "acme-token-new-1"}]))
    assert not caller.holds(revoked) and caller.renewed(revoked) is None


@pytest.mark.parametrize("value", ["true", 1, "yes"])
def test_reinstate_is_a_toml_boolean_only(value: Any) -> None:
    with pytest.raises(
        ConfigError,
        match=rf"tenants\[0\]\.reinstate \(value {re.escape(repr(value))}\): Input should be a "
        r"valid boolean",
    ):
        parse_config(with_(tenants=[{"name": "acme", "token": ACME, "reinstate": value}]))
    assert parse_config(with_(tenants=[{"name": "acme", "token": ACME}])).reinstated == frozenset()
    assert parse_config(with_(tenants=[{"name": "acme", "token": ACME, "reinstate": True},
                                       {"name": "globex", "token": GLOBEX}])).reinstated == {"acme"}
