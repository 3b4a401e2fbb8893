"""A refused request: a gRPC status, a reason written for a person, and a reason code.

Every refusal goes out as a ``google.rpc.Status`` (the ``grpc-status-details-bin`` trailer of a
call, or ``ActionResult.status`` on a Play stream) built here by :func:`status_of`, with:

- ``ErrorInfo{reason, domain: "spades.v1", metadata}``: ``reason`` is the stable code from the
  one catalogue, :class:`spades.reasons.Reason` (``docs/errors.md`` is its table);
- ``BadRequest`` with one ``FieldViolation`` naming the field, for invalid input;
- ``RetryInfo`` with the delay, when waiting helps (rate limits).

Raise :func:`refuse` with a code: its status comes from the catalogue, so a code never goes
out with two statuses. ``RequestError(status, reason, reason_code=...)`` does the same for a
code not (yet) in the catalogue; tests/server/test_reasons.py checks that every code raised is.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import error_details_pb2, status_pb2

from spades.engine import IllegalAction, InvalidRules
from spades.reasons import DOMAIN, Reason


class RequestError(Exception):
    """Refuse a request with ``code`` and ``reason``; nothing was written."""

    def __init__(
        self,
        code: grpc.StatusCode,
        reason: str,
        *,
        reason_code: str = "",
        field: str = "",
        retry_delay: float = 0.0,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason
        # The stable UPPER_SNAKE code a program acts on (google.rpc.ErrorInfo.reason).
        self.reason_code = str(reason_code)
        #: The request field at fault (BadRequest.FieldViolation.field), as a path.
        self.field = field
        #: Seconds to wait before trying again (RetryInfo), 0 when waiting does not help.
        self.retry_delay = retry_delay
        #: Facts a program may use (ErrorInfo.metadata): short values, never a long input.
        self.metadata: dict[str, str] = dict(metadata or {})


def refuse(
    reason_code: Reason,
    reason: str,
    *,
    field: str = "",
    retry_delay: float = 0.0,
    metadata: Mapping[str, str] | None = None,
) -> RequestError:
    """The refusal for ``reason_code``, with the gRPC status the catalogue gives it.

    >>> error = refuse(Reason.TABLE_NOT_FOUND, "there is no table 'x'")
    >>> error.code.name, error.reason_code
    ('NOT_FOUND', 'TABLE_NOT_FOUND')
    """
    return RequestError(
        grpc.StatusCode[reason_code.status],
        reason,
        reason_code=reason_code,
        field=field,
        retry_delay=retry_delay,
        metadata=metadata,
    )


def table_not_found(table_id: str) -> RequestError:
    """NOT_FOUND for a table id (its length was checked first, so echoing it is safe)."""
    return refuse(
        Reason.TABLE_NOT_FOUND, f"there is no table {table_id!r}", metadata={"table_id": table_id}
    )


def from_illegal(error: IllegalAction, field_prefix: str = "") -> RequestError:
    """The engine's refusal as the server's: its code (so its status), its words, its field
    (``field_prefix`` puts the action's field path where the request holds the action)."""
    field = f"{field_prefix}{error.field}" if error.field else ""
    return refuse(error.code, error.reason, field=field)


def from_invalid_rules(error: InvalidRules, field_prefix: str = "") -> RequestError:
    """A rule set (or preset deals) the engine cannot play: INVALID_ARGUMENT naming the field."""
    field = f"{field_prefix}{error.field}"
    return refuse(error.code, f"{field}: {error.reason}", field=field)


def duration(seconds: float) -> duration_pb2.Duration:
    """A delay as a Duration, rounded up to the millisecond (never shorter than asked)."""
    millis = math.ceil(seconds * 1000)
    return duration_pb2.Duration(seconds=millis // 1000, nanos=millis % 1000 * 1_000_000)


def status_of(error: RequestError) -> status_pb2.Status:
    """The ``google.rpc.Status`` of a refusal, with its details (see the module's doc)."""
    details: list[any_pb2.Any] = []
    if error.reason_code:
        info = error_details_pb2.ErrorInfo(
            reason=error.reason_code, domain=DOMAIN, metadata=error.metadata
        )
        details.append(_packed(info))
    if error.field:
        violation = error_details_pb2.BadRequest.FieldViolation(
            field=error.field, description=error.reason
        )
        details.append(_packed(error_details_pb2.BadRequest(field_violations=[violation])))
    if error.retry_delay > 0:
        details.append(
            _packed(error_details_pb2.RetryInfo(retry_delay=duration(error.retry_delay)))
        )
    return status_pb2.Status(code=error.code.value[0], message=error.reason, details=details)


def _packed(
    message: error_details_pb2.ErrorInfo
    | error_details_pb2.BadRequest
    | error_details_pb2.RetryInfo,
) -> any_pb2.Any:
    packed = any_pb2.Any()
    # Deterministic: a map (ErrorInfo.metadata) in key order, so the same refusal is the same
    # bytes however its metadata was gathered (a repeated action id's comes back from the log).
    packed.Pack(message, deterministic=True)
    return packed


# Shorthands by status (from before the catalogue): prefer refuse(Reason.X, ...), whose status
# the catalogue gives. tests/server/test_reasons.py flags a call of these without a reason_code.


def not_found(what: str, *, reason_code: str = "") -> RequestError:
    return RequestError(grpc.StatusCode.NOT_FOUND, what, reason_code=reason_code)


def invalid(reason: str, *, reason_code: str = "", field: str = "") -> RequestError:
    return RequestError(
        grpc.StatusCode.INVALID_ARGUMENT, reason, reason_code=reason_code, field=field
    )


def precondition(reason: str, *, reason_code: str = "") -> RequestError:
    return RequestError(grpc.StatusCode.FAILED_PRECONDITION, reason, reason_code=reason_code)


def unauthenticated(reason: str, *, reason_code: str = "") -> RequestError:
    return RequestError(grpc.StatusCode.UNAUTHENTICATED, reason, reason_code=reason_code)


def denied(reason: str, *, reason_code: str = "") -> RequestError:
    return RequestError(grpc.StatusCode.PERMISSION_DENIED, reason, reason_code=reason_code)


def unavailable(reason: str, *, reason_code: str = "") -> RequestError:
    return RequestError(grpc.StatusCode.UNAVAILABLE, reason, reason_code=reason_code)


class LimitExceeded(RequestError):
    """RESOURCE_EXHAUSTED; ``retry_delay`` is the seconds to wait (0: waiting does not help)."""

    def __init__(
        self, reason: str, retry_delay: float = 0.0, *, reason_code: Reason = Reason.RATE_LIMITED
    ) -> None:
        super().__init__(
            grpc.StatusCode[reason_code.status],
            reason,
            reason_code=reason_code,
            retry_delay=retry_delay,
        )
