"""server/errors.py: every refusal maps to the gRPC status its `code` names, and every status the server sends is
declared there."""

from __future__ import annotations

import ast
from pathlib import Path

import grpc
import pytest
from pydantic import ValidationError

from mechanism.engine import DuplicateJob, EngineError, InvalidReport, OutsideSupport, UnknownJob
from mechanism.failure_exact import OracleTooLarge
from mechanism.sow import SoW
from server import errors
from server.errors import (
    Exhausted,
    FailedPrecondition,
    LimitReached,
    PermissionDenied,
    Refused,
    Unauthenticated,
    Unavailable,
    bounded,
    status,
)
from tests.conftest import small_platform

SERVER = Path(errors.__file__).resolve().parent


@pytest.mark.parametrize(("kind", "code"), [
    (Refused, grpc.StatusCode.INVALID_ARGUMENT), (PermissionDenied, grpc.StatusCode.PERMISSION_DENIED),
    (FailedPrecondition, grpc.StatusCode.FAILED_PRECONDITION), (Unavailable, grpc.StatusCode.UNAVAILABLE),
    (Unauthenticated, grpc.StatusCode.UNAUTHENTICATED), (LimitReached, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (Exhausted, grpc.StatusCode.RESOURCE_EXHAUSTED), (EngineError, grpc.StatusCode.INVALID_ARGUMENT),
    (UnknownJob, grpc.StatusCode.NOT_FOUND), (DuplicateJob, grpc.StatusCode.ALREADY_EXISTS),
    (InvalidReport, grpc.StatusCode.FAILED_PRECONDITION), (OutsideSupport, grpc.StatusCode.INVALID_ARGUMENT),
])
def test_a_refusal_is_sent_with_the_status_its_code_names_and_its_message(kind: type[Exception],
                                                                           code: grpc.StatusCode) -> None:
    assert status(kind("job 'acme/j' is in the way")) == (code, "job 'acme/j' is in the way")
    assert kind.code == code.name  # type: ignore[attr-defined]
    assert issubclass(kind, errors.REFUSALS)


def test_a_long_refusal_is_sent_bounded() -> None:
    assert status(Refused("x" * 501))[1] == bounded("x" * 501) != "x" * 501


def test_an_invalid_sow_is_invalid_argument_naming_the_field() -> None:
    with pytest.raises(ValidationError) as info:
        SoW.parse({"concurrency": 0, "value_steps": [[2, 1.0]], "outcomes": [[0, 1, 1.0]]}, small_platform())
    code, message = status(info.value)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and message.startswith("sow.concurrency")


def test_a_platform_too_large_for_the_exact_oracle_is_resource_exhausted() -> None:
    assert status(OracleTooLarge("exact oracle needs 9 joint outcomes")) == (
        grpc.StatusCode.RESOURCE_EXHAUSTED, "exact failure oracle: exact oracle needs 9 joint outcomes")


def test_anything_else_is_internal_naming_only_its_type() -> None:
    assert status(KeyError("/secret/path")) == (grpc.StatusCode.INTERNAL, "internal error: KeyError")
    assert not isinstance(KeyError(), errors.REFUSALS)


def test_no_server_module_but_errors_names_a_grpc_status_or_declares_a_refusal() -> None:
    """Every status the servicer sends comes from server/errors.py `status`; no other module subclasses a refusal."""
    refusals = {"Refused", "EngineError", *(c.__name__ for c in errors.Refused.__subclasses__())}
    for path in SERVER.glob("*.py"):
        if path.name == "errors.py":
            continue
        text = path.read_text()
        assert "StatusCode" not in text, path.name
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                bases = {b.id for b in node.bases if isinstance(b, ast.Name)}
                assert not bases & refusals, (path.name, node.name)
