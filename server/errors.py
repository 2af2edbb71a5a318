"""The refusals the server answers with, each carrying the gRPC status code it is sent with.

The engine's own refusals (mechanism/engine.py `EngineError` and its kinds) carry their codes the same way.
"""

from __future__ import annotations


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
    """The caller's token no longer names it: the configuration was reloaded while its command waited."""

    code = "UNAUTHENTICATED"


class LimitReached(Refused):
    """The tenant is at its max_active_jobs; nothing changed, retry when some of its jobs have ended."""

    code = "RESOURCE_EXHAUSTED"


class Exhausted(Refused):
    """A bounded server resource is in use up to its limit; nothing changed, retry later."""

    code = "RESOURCE_EXHAUSTED"
