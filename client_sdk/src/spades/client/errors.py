"""Typed errors for refused calls: one class per gRPC status, each with the server's reason.

>>> error = error_for(grpc.StatusCode.NOT_FOUND, "there is no table 'x'")
>>> isinstance(error, NotFound), error.reason
(True, "there is no table 'x'")
"""

from __future__ import annotations

from typing import Final

import grpc


class SpadesError(Exception):
    """A call the server refused (or could not be made): ``code`` and a ``reason`` for a person."""

    def __init__(self, code: grpc.StatusCode, reason: str) -> None:
        super().__init__(f"{code.name}: {reason}")
        self.code = code
        self.reason = reason


class NotFound(SpadesError):
    """No such table (NOT_FOUND)."""


class InvalidArgument(SpadesError):
    """A malformed request: a bad name, rule set or action (INVALID_ARGUMENT)."""


class FailedPrecondition(SpadesError):
    """Not now: the table is full or started, the move breaks a rule (FAILED_PRECONDITION)."""


class PermissionDenied(SpadesError):
    """A private table without its join code (PERMISSION_DENIED)."""


class Unauthenticated(SpadesError):
    """A missing or wrong seat token (UNAUTHENTICATED)."""


class ResourceExhausted(SpadesError):
    """Too many requests or streams (RESOURCE_EXHAUSTED)."""


class Unavailable(SpadesError):
    """The server cannot be reached or is going away; try again (UNAVAILABLE)."""


class Aborted(SpadesError):
    """The request lost a race, for example an action answering a stale sequence (ABORTED)."""


class OutOfRange(SpadesError):
    """A sequence number past the table's latest (OUT_OF_RANGE)."""


class AlreadyExists(SpadesError):
    """Something with that name exists already: an account name taken (ALREADY_EXISTS)."""


class ActionRefused(SpadesError):
    """The server refused an action sent on a Play stream (its ActionResult was not accepted)."""


_BY_CODE: Final[dict[grpc.StatusCode, type[SpadesError]]] = {
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.ABORTED: Aborted,
    grpc.StatusCode.OUT_OF_RANGE: OutOfRange,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExists,
}
_CODE_BY_NUMBER: Final = {code.value[0]: code for code in grpc.StatusCode}

#: Failures of the connection rather than of the request: reconnecting may cure them.
TRANSIENT_CODES: Final = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.INTERNAL,  # a stream reset (RST_STREAM) surfaces as INTERNAL
        grpc.StatusCode.CANCELLED,  # cancelled by the server or a proxy, not by us
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.DEADLINE_EXCEEDED,
    }
)


def status_code(number: int) -> grpc.StatusCode:
    """The ``grpc.StatusCode`` of a google.rpc.Code number (UNKNOWN for an unknown one)."""
    return _CODE_BY_NUMBER.get(number, grpc.StatusCode.UNKNOWN)


def error_for(code: grpc.StatusCode, reason: str) -> SpadesError:
    """The typed error for a status code."""
    return _BY_CODE.get(code, SpadesError)(code, reason)


def from_rpc_error(error: grpc.RpcError) -> SpadesError:
    """The typed error for a failed call, carrying the server's details as its reason."""
    code: grpc.StatusCode = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    details = error.details() if hasattr(error, "details") else None
    return error_for(code, details or str(code.value[1]))


def is_transient(error: SpadesError) -> bool:
    """True for a dropped connection or a server going away (worth reconnecting)."""
    return error.code in TRANSIENT_CODES
