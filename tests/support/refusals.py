"""Assertions on a refusal as a program reads it: the gRPC status, and the google.rpc.Status
details (ErrorInfo reason and domain, the field violation) on a failed call or in
ActionResult.status; and that a refusal wrote nothing. Shared by the suites that check refusals
over the wire."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

import grpc
from google.rpc import error_details_pb2, status_pb2

from spades.client import ErrorDetails
from spades.reasons import DOMAIN
from spades.v1 import lobby_pb2, play_pb2
from spades_server.app.server import SpadesServer
from tests.support.clients import Client
from tests.support.servers import log_head


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


def assert_status(error: grpc.aio.AioRpcError, code: grpc.StatusCode, *reason: str) -> None:
    """A call ended with ``code`` and a reason for a person that says each of ``reason``."""
    assert error.code() == code, (error.code(), error.details())
    details = error.details() or ""
    assert details, "a reason for a person"
    for part in reason:
        assert part in details, (part, details)


@asynccontextmanager
async def nothing_written(
    server: SpadesServer, client: Client | None = None, table_id: str = ""
) -> AsyncIterator[None]:
    """The log (and, given ``client``, the lobby entry of ``table_id``) are exactly as they
    were: what a refusal must leave."""
    head = await log_head(server)
    before = None
    if table_id:
        assert client is not None, "the lobby entry is read through a client"
        before = (await client.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id))).table
    yield
    assert await log_head(server) == head, "nothing may be written"
    if table_id:
        assert before is not None and client is not None
        after = (await client.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id))).table
        assert after == before
        assert await server.log.stream_version(table_id) == before.sequence
