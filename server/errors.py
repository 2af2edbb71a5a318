"""The server's refusals, each carrying the gRPC status code it is sent with, and the one mapping from an exception
to the status and message a call ends with.

Every refusal the server sends is declared here (`Refused` and its kinds). The engine's own refusals
(mechanism/engine.py `EngineError` and its kinds) carry their codes the same way, in `code`: the mechanism cannot
import the server, so they are mapped by that attribute. A SoW that fails validation (pydantic's ValidationError) is
INVALID_ARGUMENT and a platform too large for the exact oracle (mechanism/failure_exact.py `OracleTooLarge`) is
RESOURCE_EXHAUSTED. Anything else is a bug: INTERNAL, naming only its type.

Not refusals, and never sent as such: StoreError and ArchiveError (the log failed: the writer stops serving and every
caller is told UNAVAILABLE), ReplayDiverged, ConfigError and StartupError (the server does not start or keeps its
configuration).
"""

from __future__ import annotations

import grpc
from pydantic import ValidationError

from mechanism.engine import EngineError
from mechanism.failure_exact import OracleTooLarge
from mechanism.validation import validation_message
from server.limits import MESSAGE_HEAD, MESSAGE_TAIL


class Refused(Exception):
    """A request the service refuses before the engine sees it; `code` names the gRPC status."""

    code = "INVALID_ARGUMENT"


class PermissionDenied(Refused):
    code = "PERMISSION_DENIED"


class FailedPrecondition(Refused):
    code = "FAILED_PRECONDITION"


class Unavailable(Refused):
    code = "UNAVAILABLE"


class Unauthenticated(Refused):
    """The caller's token does not name it: missing or unknown, or revoked by a configuration reload meanwhile."""

    code = "UNAUTHENTICATED"


class LimitReached(Refused):
    """The tenant is at its max_active_jobs; nothing changed, retry when some of its jobs have ended."""

    code = "RESOURCE_EXHAUSTED"


class Exhausted(Refused):
    """A bounded server resource is in use up to its limit; nothing changed, retry later."""

    code = "RESOURCE_EXHAUSTED"


# What a call may be refused with: nothing changed, and the caller is told why.
REFUSALS = (Refused, EngineError, ValidationError, OracleTooLarge)


def status(exc: BaseException) -> tuple[grpc.StatusCode, str]:
    """The gRPC status code and message a call that raised `exc` ends with."""
    if isinstance(exc, Refused | EngineError):
        return grpc.StatusCode[exc.code], bounded(str(exc))
    if isinstance(exc, ValidationError):
        return grpc.StatusCode.INVALID_ARGUMENT, bounded(validation_message(exc, "sow"))
    if isinstance(exc, OracleTooLarge):  # raised before the engine changes anything
        return grpc.StatusCode.RESOURCE_EXHAUSTED, f"exact failure oracle: {exc}"
    return grpc.StatusCode.INTERNAL, f"internal error: {type(exc).__name__}"


def bounded(message: str) -> str:
    """The message with its middle left out when long (it may echo a huge value): its start names the field and the
    value, its end the bound."""
    if len(message) <= MESSAGE_HEAD + MESSAGE_TAIL:
        return message
    left_out = len(message) - MESSAGE_HEAD - MESSAGE_TAIL
    return f"{message[:MESSAGE_HEAD]} ... ({left_out} characters left out) ... {message[-MESSAGE_TAIL:]}"
