"""Assertions on a refusal as a program reads it: the gRPC status, and the google.rpc.Status
details (ErrorInfo reason and domain, the field violation) on a failed call or in
ActionResult.status. Shared by the suites that check refusals over the wire."""

from __future__ import annotations

from typing import Any, cast

import grpc
from google.rpc import error_details_pb2, status_pb2

from spades.client import ErrorDetails
from spades.reasons import DOMAIN
from spades.v1 import play_pb2


def trailers(error: grpc.aio.AioRpcError) -> list[tuple[str, str | bytes]]:
    return list(cast(Any, error.trailing_metadata()) or ())


def call_status(error: grpc.aio.AioRpcError) -> status_pb2.Status:
    """The google.rpc.Status of a failed call (its grpc-status-details-bin trailer)."""
    for key, value in trailers(error):
        if key == "grpc-status-details-bin":
            assert isinstance(value, bytes)
            return status_pb2.Status.FromString(value)
    raise AssertionError(f"no status details on {error.code()}: {error.details()}")


def assert_status_details(
    status: status_pb2.Status,
    code: grpc.StatusCode,
    reason_code: str,
    field: str | None = None,
) -> ErrorDetails:
    """The Status says ``code`` and ``reason_code`` (domain spades.v1), a reason for a person,
    and names ``field`` (no field violation when None)."""
    assert status.code == code.value[0], status
    assert status.message, "a reason for a person"
    info = error_details_pb2.ErrorInfo()
    infos = [detail for detail in status.details if detail.Unpack(info)]
    assert len(infos) == 1, status
    assert (info.reason, info.domain) == (reason_code, DOMAIN), status
    details = ErrorDetails.from_status(status)
    fields = [violation.field for violation in details.field_violations]
    assert fields == ([] if field is None else [field]), status
    return details


def assert_call_refused(
    error: grpc.aio.AioRpcError, code: grpc.StatusCode, reason_code: str, field: str | None = None
) -> ErrorDetails:
    assert error.code() == code, (error.code(), error.details())
    status = call_status(error)
    assert status.message == error.details()
    return assert_status_details(status, code, reason_code, field)


def assert_action_refused(
    result: play_pb2.ActionResult,
    code: grpc.StatusCode,
    reason_code: str,
    field: str | None = None,
) -> ErrorDetails:
    """Refused with the code and reason as before, and the same in ``status``."""
    assert not result.accepted, result
    assert result.HasField("status"), result
    assert (result.code, result.reason) == (result.status.code, result.status.message)
    return assert_status_details(result.status, code, reason_code, field)
