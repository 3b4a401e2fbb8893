"""Typed errors for refused calls: one class per gRPC status, each with the server's reason
and what a program acts on: the reason code, the fields at fault and how long to wait.

The server sends every refusal as a ``google.rpc.Status`` (docs/errors.md): on a call in the
``grpc-status-details-bin`` trailer, on a Play stream in ``ActionResult.status``. Its details
are read here once, into :class:`ErrorDetails`.

>>> error = error_for(grpc.StatusCode.NOT_FOUND, "there is no table 'x'")
>>> isinstance(error, NotFound), error.reason, error.reason_code
(True, "there is no table 'x'", '')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import grpc
from google.rpc import error_details_pb2, status_pb2

from spades.reasons import DOMAIN

#: The trailer that carries a call's google.rpc.Status.
STATUS_DETAILS_METADATA: Final = "grpc-status-details-bin"


@dataclass(frozen=True, slots=True)
class FieldViolation:
    """A request field at fault (``BadRequest.FieldViolation``): its path and what is wrong."""

    field: str
    description: str


@dataclass(frozen=True, slots=True)
class ErrorDetails:
    """The machine-readable part of a refusal (the details of its google.rpc.Status)."""

    #: The stable UPPER_SNAKE code (``ErrorInfo.reason``; :class:`spades.reasons.Reason`).
    reason_code: str = ""
    #: ``ErrorInfo.metadata``: short facts such as ``{"table_sequence": "12"}``.
    metadata: Mapping[str, str] = field(default_factory=dict)
    field_violations: tuple[FieldViolation, ...] = ()
    #: Seconds to wait before trying again (``RetryInfo``), None when waiting does not help.
    retry_delay: float | None = None

    @staticmethod
    def from_status(status: status_pb2.Status) -> ErrorDetails:
        """The details of a google.rpc.Status (ErrorInfo of another domain is ignored)."""
        reason_code, metadata = "", {}
        violations: list[FieldViolation] = []
        retry_delay = None
        for detail in status.details:
            info = error_details_pb2.ErrorInfo()
            bad_request = error_details_pb2.BadRequest()
            retry = error_details_pb2.RetryInfo()
            if detail.Unpack(info):
                if info.domain == DOMAIN:
                    reason_code, metadata = info.reason, dict(info.metadata)
            elif detail.Unpack(bad_request):
                violations += [
                    FieldViolation(violation.field, violation.description)
                    for violation in bad_request.field_violations
                ]
            elif detail.Unpack(retry):
                retry_delay = retry.retry_delay.ToNanoseconds() / 1e9
        return ErrorDetails(reason_code, metadata, tuple(violations), retry_delay)

    @staticmethod
    def from_trailers(metadata: Any) -> ErrorDetails:
        """The details in a call's trailing metadata (none when it carries no status)."""
        for key, value in metadata or ():
            if key == STATUS_DETAILS_METADATA and isinstance(value, bytes):
                try:
                    return ErrorDetails.from_status(status_pb2.Status.FromString(value))
                except Exception:  # a proxy's garbled trailer: the code and reason still hold
                    return NO_DETAILS
        return NO_DETAILS


NO_DETAILS: Final = ErrorDetails()


class SpadesError(Exception):
    """A call the server refused (or could not be made): ``code`` and a ``reason`` for a person,
    and ``details`` for a program (:attr:`reason_code`, :attr:`field`, :attr:`retry_delay`)."""

    def __init__(
        self, code: grpc.StatusCode, reason: str, details: ErrorDetails = NO_DETAILS
    ) -> None:
        super().__init__(f"{code.name}: {reason}")
        self.code = code
        self.reason = reason
        self.details = details
        #: True when grpc.aio's client lost the server's status (:func:`status_lost`).
        self.status_lost = False

    @property
    def reason_code(self) -> str:
        """The stable reason code ("MUST_FOLLOW_SUIT"), "" when the server sent none."""
        return self.details.reason_code

    @property
    def field(self) -> str:
        """The path of the (first) request field at fault, "" when none is named."""
        violations = self.details.field_violations
        return violations[0].field if violations else ""

    @property
    def field_violations(self) -> tuple[FieldViolation, ...]:
        return self.details.field_violations

    @property
    def metadata(self) -> Mapping[str, str]:
        return self.details.metadata

    @property
    def retry_delay(self) -> float | None:
        """Seconds to wait before trying again (RetryInfo), None when waiting does not help."""
        return self.details.retry_delay


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


def error_for(
    code: grpc.StatusCode, reason: str, details: ErrorDetails = NO_DETAILS
) -> SpadesError:
    """The typed error for a status code."""
    return _BY_CODE.get(code, SpadesError)(code, reason, details)


def from_rpc_error(error: grpc.RpcError) -> SpadesError:
    """The typed error for a failed call: the server's message as its reason, and the details
    of its google.rpc.Status (the ``grpc-status-details-bin`` trailer)."""
    code: grpc.StatusCode = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    message = error.details() if hasattr(error, "details") else None
    trailers = error.trailing_metadata() if hasattr(error, "trailing_metadata") else None
    details = ErrorDetails.from_trailers(trailers)
    typed = error_for(code, message or str(code.value[1]), details)
    typed.status_lost = status_lost(error)
    return typed


def status_lost(error: grpc.RpcError) -> bool:
    """Whether grpc.aio's client lost the server's status of a stream (grpc/grpc#36066).

    A stream the server refuses as it opens (before reading anything) may end, on the client,
    with INTERNAL "Internal error from Core" instead of the server's status, when a write of
    the client meets the already-ended stream: its debug string then names the failed
    ``execute_batch``. Only that case counts; any other INTERNAL is the server's. A call whose
    refusal changes nothing (opening a Play stream) is made again on a new call then."""
    if not hasattr(error, "code") or error.code() is not grpc.StatusCode.INTERNAL:
        return False
    debug = error.debug_error_string() if hasattr(error, "debug_error_string") else ""
    return "execute_batch" in (debug or "")


def is_transient(error: SpadesError) -> bool:
    """True for a dropped connection or a server going away (worth reconnecting)."""
    return error.code in TRANSIENT_CODES
