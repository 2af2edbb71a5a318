"""Server configuration: the platform and its tenants, read from a TOML file and validated with pydantic."""

from __future__ import annotations

import hmac
import os
import stat
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from mechanism.platform import Platform
from mechanism.validation import error_rule, field_path
from server.limits import MAX_TENANT_NAME, MAX_TOKEN_FILE

OPERATOR = "operator"
EXECUTOR = "executor"  # the agent that runs jobs: reads every job and event, reports arrivals, launches, completions
SERVER = "server"  # the caller the server's own derived commands (a dependent job's arrival) are logged as
CLOCK = "clock"  # the caller wall-clock rounds are logged as; it may act on every job
TENANT_NAME = rf"^[A-Za-z0-9][A-Za-z0-9_.-]{{0,{MAX_TENANT_NAME - 1}}}$"


class TokenSource(BaseModel):
    """A bearer token, given inline (`token`), read from an environment variable (`token_env`) or from a file
    (`token_file`: a mounted secret; re-read when the server reloads its configuration on SIGHUP, so it can rotate
    without a restart, which a variable of the running process cannot). A token file may hold several tokens, one
    per line, all valid at once: a rotation adds the new one, moves the clients over, then drops the old one."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    token: str | None = Field(default=None, min_length=8)
    token_env: str | None = Field(default=None, min_length=1)
    token_file: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _one_source(self) -> TokenSource:
        if sum(x is not None for x in (self.token, self.token_env, self.token_file)) != 1:
            raise ValueError("give exactly one of token (at least 8 characters), token_env or token_file")
        return self

    def resolve(self, where: str, base: Path) -> tuple[str, ...]:
        """The tokens (one, but for a token file of several lines); `base` is the directory a relative token_file is
        read from (the configuration file's)."""
        if self.token is not None:
            return (_sendable(f"{where}.token", self.token),)
        if self.token_file is not None:
            name = f"{where}.token_file={str(base / self.token_file)!r}"
            return tuple(_sendable(f"{name} line {n}", token)
                         for n, token in _tokens_from_file(name, base / self.token_file))
        assert self.token_env is not None
        value = os.environ.get(self.token_env, "")
        if len(value) < 8:
            raise ConfigError(
                f"{where}.token_env={self.token_env!r}: the variable is unset or shorter than 8 characters"
            )
        return (_sendable(f"{where}.token_env={self.token_env!r}", value),)


def _sendable(name: str, token: str) -> str:
    """The token, if a client can send it: gRPC metadata values are printable ASCII (a token holding anything else,
    such as a byte order mark from an editor, would lock its holder out)."""
    for i, c in enumerate(token, start=1):
        if not " " <= c <= "~":
            raise ConfigError(f"{name}: the token holds U+{ord(c):04X} at character {i}, outside printable ASCII "
                              "(no client can send it)")
    if token != token.strip():  # the server strips the token a client sends: this one would never authenticate
        raise ConfigError(f"{name}: the token begins or ends with a space (the server strips it from the token a "
                          "client sends, so no client could authenticate with it)")
    return token


def _tokens_from_file(name: str, path: Path) -> list[tuple[int, str]]:
    """(line number, token) for each non-blank line without its surrounding white space (a trailing newline is
    usual): a regular file (symbolic links followed) of at most MAX_TOKEN_FILE bytes, each token at least 8
    characters with no white space inside, at least one. It is opened without blocking, so a FIFO or a device named
    by mistake is refused instead of stalling the reload. `name` names the field and the path in errors."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            raise ConfigError(f"{name}: not a regular file (a directory, FIFO or device)")
        with os.fdopen(fd, "rb") as f:
            raw = f.read(MAX_TOKEN_FILE + 1)
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ConfigError(f"{name}: cannot read the token ({reason})") from None
    if len(raw) > MAX_TOKEN_FILE:
        raise ConfigError(f"{name}: {max(len(raw), info.st_size)} bytes, above the bound {MAX_TOKEN_FILE}")
    tokens = [(n, line.strip()) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if not tokens:
        raise ConfigError(f"{name}: no token in the file (it is empty or blank)")
    for n, token in tokens:
        if any(c.isspace() for c in token):
            raise ConfigError(f"{name} line {n}: the token holds white space inside (one token per line)")
        if len(token) < 8:
            raise ConfigError(f"{name} line {n}: the token has {len(token)} characters, below the bound 8")
    return tokens


class TenantConfig(TokenSource):
    name: str = Field(pattern=TENANT_NAME)
    # At most this many of the tenant's jobs active (submitted, waiting or running) at once; none: no limit.
    # Every active job raises the expected usage y and so everyone's prices until it ends, including SoWs that
    # never arrive (they cost their tenant nothing): the limit bounds what one tenant can do to the others.
    max_active_jobs: int | None = Field(default=None, ge=1, strict=True)  # strict: `true` or "3" is refused
    # A name is its tenant's namespace for good: a name the store's last configuration did not have but which owns
    # jobs is refused unless this says the same tenant is coming back (a new tenant would own the old jobs, invoices
    # and request ids).
    reinstate: bool = Field(default=False, strict=True)

    @field_validator("name")
    @classmethod
    def _not_operator(cls, v: str) -> str:
        if v == OPERATOR:
            raise ValueError(f"name={v!r} is reserved for the operator")
        if v == CLOCK:
            raise ValueError(f"name={v!r} is reserved for the wall clock")
        if v == EXECUTOR:
            raise ValueError(f"name={v!r} is reserved for the executor ([executor])")
        if v == SERVER:
            raise ValueError(f"name={v!r} is reserved for the server's own derived commands")
        return v


class ServerSection(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    oracle: Literal["mc", "exact"] = "mc"
    # completions before the prediction engine's learned laws replace the requested duration as a point law
    prediction_cold_start: int = Field(default=20, ge=1, strict=True)
    # adaptive conformal inference on the learned laws' 0.9-quantile with this step (absent: the laws as learned)
    prediction_conformal_gamma: float | None = Field(default=None, gt=0, le=1, strict=True)


class ConfigFile(BaseModel):
    """The whole platform.toml: [platform], optional [server], optional [operator], optional [executor] and
    [[tenants]]."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    platform: Platform
    server: ServerSection = ServerSection()
    operator: TokenSource | None = None
    executor: TokenSource | None = None
    tenants: tuple[TenantConfig, ...] = ()

    @model_validator(mode="after")
    def _unique(self) -> ConfigFile:
        seen: set[str] = set()
        for i, t in enumerate(self.tenants):
            if t.name in seen:
                raise ValueError(f"tenants[{i}].name={t.name!r} is used twice")
            seen.add(t.name)
        if (self.tenants or self.executor) and self.operator is None:
            raise ValueError(f"{'tenants are' if self.tenants else '[executor] is'} configured but [operator] is "
                             "missing: give the operator a token")
        return self


class ConfigError(ValueError):
    """The configuration file is unreadable or invalid; the message names the field, value and bound."""


@dataclass(frozen=True)
class Principal:
    """Who is calling: a tenant, or the operator (who may act for every tenant); with the token and configuration it
    was authenticated by (neither compared nor shown), so that a command which waited through a reload is checked
    again against the new configuration (`holds`)."""

    name: str
    token: str = field(default="", repr=False, compare=False)
    config: ServerConfig | None = field(default=None, repr=False, compare=False)

    @property
    def is_operator(self) -> bool:
        return self.name == OPERATOR

    @property
    def is_executor(self) -> bool:
        return self.name == EXECUTOR

    @property
    def acts_for_tenants(self) -> bool:
        """Whether it names the tenant whose job it means (the operator and the executor) instead of acting in a
        namespace of its own."""
        return self.name in (OPERATOR, EXECUTOR)

    def holds(self, config: ServerConfig) -> bool:
        """Whether its token still names it under `config` (a principal made without a configuration always does)."""
        return self.renewed(config) is not None

    def renewed(self, config: ServerConfig) -> Principal | None:
        """The same caller authenticated under `config` (itself if that is its own), or None if its token no longer
        names it there."""
        if self.config is None or self.config is config:
            return self
        found = config.caller(self.token)
        return found if found == self else None


@dataclass(frozen=True)
class ServerConfig:
    platform: Platform
    oracle: Literal["mc", "exact"]
    tokens: dict[str, str]  # token -> principal name; empty: authentication is off (loopback only)
    tenants: tuple[str, ...]
    max_active_jobs: Mapping[str, int] = field(default_factory=dict)  # tenant -> its limit (absent: none)
    reinstated: frozenset[str] = frozenset()  # tenants marked `reinstate = true`: may take back a name owning jobs
    prediction_cold_start: int = 20  # [server] prediction_cold_start (docs/prediction.md)
    prediction_conformal_gamma: float | None = None  # [server] prediction_conformal_gamma (docs/prediction.md)

    def identity(self) -> dict[str, Any]:
        """What a command log must be replayed with: the platform and the oracle."""
        return {"platform": self.platform.model_dump(mode="json"), "oracle": self.oracle}

    @property
    def auth_enabled(self) -> bool:
        return bool(self.tokens)

    def authenticate(self, token: str) -> Principal | None:
        """The principal holding `token`, compared in constant time; None if it is unknown."""
        found = None
        for known, name in self.tokens.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                found = name
        return Principal(found, token, self) if found is not None else None

    def caller(self, token: str | None) -> Principal | None:
        """Who sends bearer `token` (None: no bearer token): every caller is the operator when authentication is off."""
        if not self.auth_enabled:
            return Principal(OPERATOR, token or "", self)
        return None if token is None else self.authenticate(token)


def parse_config(data: dict[str, Any], resolve_tokens: bool = True, base: Path = Path(".")) -> ServerConfig:
    """Validate a decoded platform.toml document; without `resolve_tokens` no token is read (offline tools that
    only replay a store need the platform, not the secrets in the environment). Relative token files are read
    from `base`."""
    try:
        doc = ConfigFile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_explain(exc)) from None
    tokens: dict[str, str] = {}
    limits = {t.name: t.max_active_jobs for t in doc.tenants if t.max_active_jobs is not None}
    reinstated = frozenset(t.name for t in doc.tenants if t.reinstate)
    if not resolve_tokens:
        return ServerConfig(platform=doc.platform, oracle=doc.server.oracle, tokens=tokens,
                            tenants=tuple(t.name for t in doc.tenants), max_active_jobs=limits, reinstated=reinstated,
                        prediction_cold_start=doc.server.prediction_cold_start,
                        prediction_conformal_gamma=doc.server.prediction_conformal_gamma)
    holders: list[tuple[str, str, TokenSource]] = [("operator", OPERATOR, doc.operator)] if doc.operator else []
    holders += [("executor", EXECUTOR, doc.executor)] if doc.executor else []
    holders += [(f"tenants[{i}]", t.name, t) for i, t in enumerate(doc.tenants)]
    for where, name, source in holders:
        for token in source.resolve(where, base):
            if tokens.get(token, name) != name:
                raise ConfigError(f"{where} ({name!r}) reuses the token of {tokens[token]!r}")
            tokens[token] = name
    return ServerConfig(platform=doc.platform, oracle=doc.server.oracle, tokens=tokens,
                        tenants=tuple(t.name for t in doc.tenants), max_active_jobs=limits, reinstated=reinstated,
                        prediction_cold_start=doc.server.prediction_cold_start,
                        prediction_conformal_gamma=doc.server.prediction_conformal_gamma)


def load_config(path: str | Path, resolve_tokens: bool = True) -> ServerConfig:
    p = Path(path)
    try:
        if p.exists() and not p.is_file():  # a FIFO would block the reload (and SIGTERM) until someone writes
            raise ConfigError(f"{p}: cannot read the configuration: not a regular file (a directory, FIFO or device)")
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read the configuration: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{p}: not UTF-8 text (byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses per nested array or table
        raise ConfigError(f"{p}: not valid TOML: nested too deeply") from None
    try:
        return parse_config(data, resolve_tokens, p.parent)
    except ConfigError as exc:
        raise ConfigError(f"{p}: {exc}") from None


def _may_be_secret(err: Any) -> bool:
    """A token field's value, or an unknown key's (a misspelt `token`): not to be echoed into logs."""
    return (err["type"] == "extra_forbidden" and isinstance(err.get("input"), str)) \
        or any("token" in str(part) for part in err["loc"])


def _explain(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = field_path(err["loc"]) or "(top level)"
        value = err.get("input")
        if isinstance(value, dict):
            shown = ""
        elif _may_be_secret(err):  # errors reach the operator's log: a secret is described, not shown
            shown = f" (value hidden: {len(value) if isinstance(value, str) else type(value).__name__}" \
                    f"{' characters' if isinstance(value, str) else ''})"
        else:
            shown = f" (value {value!r})"
        parts.append(f"{loc}{shown}: {error_rule(err)}")
    return "; ".join(parts)


EXAMPLE = """\
# sowsched platform.toml: the platform bounds, the mechanism's parameters and who may call the server.
[platform]
C = 32          # identical nodes
C_m = 8         # max concurrency of a job
D_m = 24        # max duration (rounds)
S_m = 48        # a job's value is 0 at S_m rounds after birth
H = 100.0       # max value
epsilon = 0.1
eps0 = 0.05
delta0 = 0.05
seed = 7
# samples = 2000  # Monte Carlo samples; default ceil(2 ln(D_m S_m / delta0) / eps0^2) (Lemma F.1)
# overload = "newest_demanding"  # step 3 spares jobs waiting for a later start; default "newest" (Remark 2)

[server]
oracle = "mc"   # or "exact" (small instances only)
# prediction_cold_start = 20         # completions before feature submissions get learned laws (docs/prediction.md)
# prediction_conformal_gamma = 0.02  # adaptive conformal laws with this step; default off (docs/prediction.md)

[operator]
token_env = "SOWSCHED_OPERATOR_TOKEN"

# [executor]    # optional: the agent that runs jobs (sowsched agent): reads every job, reports launches/completions
# token_env = "SOWSCHED_EXECUTOR_TOKEN"

[[tenants]]
name = "acme"
token = "acme-token-change-me"
max_active_jobs = 500   # optional: at most this many active jobs at once (RESOURCE_EXHAUSTED beyond)
# reinstate = true      # only for a tenant taken out earlier and coming back under the name that owns its jobs

[[tenants]]
name = "globex"
token_env = "SOWSCHED_GLOBEX_TOKEN"
"""
