"""A refusal as a program reads it, and what it must leave: the gRPC status and the
google.rpc.Status details (ErrorInfo reason and domain, the field violation) on a failed call or
in ActionResult.status, and nothing changed (the log's head, and a table's lobby entry and
version, where they were).

A test provokes a refusal with :func:`refused_unchanged` (a call) or
:func:`action_refused_unchanged` (an action on a Play stream), or checks a refusal it provoked
inside ``async with nothing_written(server):`` with :func:`assert_call_refused`,
:func:`assert_action_refused` or :func:`assert_status`: tests/server/test_every_code_provoked.py
counts a reason code as provoked when a test names it in a call of one of
:data:`REFUSAL_ASSERTIONS`, and fails when a refusal is asserted where nothing checks that it
changed nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final, cast

import grpc
from google.rpc import error_details_pb2, status_pb2

from spades.client import ErrorDetails
from spades.reasons import DOMAIN
from spades.v1 import actions_pb2, lobby_pb2, play_pb2
from spades_server.app.server import SpadesServer
from tests.support.clients import Client, SeatStream
from tests.support.servers import log_head

#: The assertions of a refusal a provoked code is counted through, each with the position of
#: its ``reason_code`` argument: the two that provoke (status, reason code, nothing written),
#: the status checks (a call's or an ActionResult's), and the challenge suites' ``refused``
#: (the SDK's error: status and reason code).
REFUSAL_ASSERTIONS: Final = {
    "refused_unchanged": 3,
    "action_refused_unchanged": 5,
    "assert_call_refused": 2,
    "assert_action_refused": 2,
    "assert_status_details": 2,
    "refused": 2,
}


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


async def refused_unchanged(
    server: SpadesServer,
    call: Any,
    code: grpc.StatusCode,
    reason_code: str,
    field: str | None = None,
) -> ErrorDetails:
    """Await ``call`` (a unary call, or an awaitable that returns the error a stream ended
    with, as ``harness.stream_error``): refused with ``code`` and ``reason_code`` (naming
    ``field``), and no event written to the log meanwhile."""
    async with nothing_written(server):
        try:
            outcome = await call
        except grpc.aio.AioRpcError as raised:
            error = raised
        else:
            assert isinstance(outcome, grpc.aio.AioRpcError), f"the call succeeded: {outcome}"
            error = outcome
        return assert_call_refused(error, code, reason_code, field)


async def action_refused_unchanged(
    server: SpadesServer,
    stream: SeatStream,
    action: actions_pb2.Action,
    sequence: int,
    code: grpc.StatusCode,
    reason_code: str,
    field: str | None = None,
) -> ErrorDetails:
    """Send ``action`` at ``sequence`` on a seat's Play stream: its ActionResult is refused
    with ``code`` and ``reason_code``, and no event is written to the log meanwhile."""
    async with nothing_written(server):
        result = await stream.act(action, sequence)
        return assert_action_refused(result, code, reason_code, field)
