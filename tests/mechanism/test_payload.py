"""SoW payloads (command, env) and parents (after): every bound refused with a message naming the field, the value
and the bound; a SoW without them dumps exactly as before they existed."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from pydantic import ValidationError

from mechanism.payload import (
    MAX_AFTER,
    MAX_ARG_CHARS,
    MAX_COMMAND_ARGS,
    MAX_ENV_NAME,
    MAX_ENV_VALUE,
    MAX_ENV_VARS,
    MAX_PAYLOAD_CHARS,
)
from mechanism.sow import SoW
from tests.conftest import small_platform

P = small_platform()
BASE: dict[str, Any] = {"concurrency": 1, "value_steps": [[5, 10.0]], "outcomes": [[0, 1, 1.0]]}


def parse(**extra: Any) -> SoW:
    return SoW.parse({**BASE, **extra}, P)


@pytest.mark.parametrize("extra, match", [
    ({"command": ["x"] * (MAX_COMMAND_ARGS + 1)}, rf"command has {MAX_COMMAND_ARGS + 1} arguments, above the bound"),
    ({"command": ["x", "y" * (MAX_ARG_CHARS + 1)]}, rf"command\[1\] has {MAX_ARG_CHARS + 1} characters, above the"),
    ({"command": [""]}, r"command\[0\]='' is empty"),
    ({"command": ["a\0b"]}, r"command\[0\]='a\\x00b' holds a NUL"),
    ({"command": ["ok", 3]}, r"command\[1\]=3 is not text"),
    ({"command": "sleep 1"}, r"command must be a list of text"),
    ({"env": {f"V{i}": "1" for i in range(MAX_ENV_VARS + 1)}}, rf"env has {MAX_ENV_VARS + 1} variables"),
    ({"env": {"N" * (MAX_ENV_NAME + 1): "1"}}, rf"must have 1 to {MAX_ENV_NAME} characters"),
    ({"env": {"1X": "1"}}, r"env name '1X' is not a variable name"),
    ({"env": {"A=B": "1"}}, r"env name 'A=B' is not a variable name"),
    ({"env": {"SOWSCHED_JOB_ID": "1"}}, r"env name 'SOWSCHED_JOB_ID' is reserved"),
    ({"env": {"X": "v" * (MAX_ENV_VALUE + 1)}}, rf"env\[X\] has {MAX_ENV_VALUE + 1} characters, above the bound"),
    ({"env": {"X": 1}}, r"names and values must be text"),
    ({"env": ["X=1"]}, r"env must be an object"),
    ({"command": ["x" * MAX_ARG_CHARS] * (MAX_PAYLOAD_CHARS // MAX_ARG_CHARS + 1)},
     rf"command and env hold \d+ characters, above the bound {MAX_PAYLOAD_CHARS}"),
    ({"after": [f"p{i}" for i in range(MAX_AFTER + 1)], "signal_mode": "none"}, rf"after has {MAX_AFTER + 1} job ids"),
    ({"after": ["p", "p"], "signal_mode": "none"}, r"after\[1\]='p' repeats after\[0\]"),
    ({"after": [""], "signal_mode": "none"}, r"after\[0\]='' is not a job id"),
    ({"after": ["p"]}, r"signal_mode='explicit' with after: .* signal_mode must be 'none'"),
    ({"after": ["p"], "signal_mode": "duration"}, r"signal_mode='duration' with after"),
])
def test_payload_and_after_bounds_are_refused_naming_field_value_and_bound(extra: dict[str, Any], match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        parse(**extra)


def test_a_sow_without_payload_dumps_as_before_and_one_with_it_round_trips() -> None:
    plain = parse()
    assert set(plain.model_dump()) == {"concurrency", "value_steps", "outcomes", "signal_mode"}
    full = parse(command=["sleep", "1"], env={"B": "2", "A": "1"}, after=["p"], signal_mode="none")
    dumped = full.model_dump(mode="json")
    assert dumped["command"] == ["sleep", "1"] and list(dumped["env"]) == ["A", "B"] and dumped["after"] == ["p"]
    assert SoW.parse(dumped, P) == full and pickle.loads(pickle.dumps(full)) == full
