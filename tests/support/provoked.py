"""Provoking a refusal in a test: the gRPC status, the reason code in the rich status, and that
nothing changed (the log's head is where it was).

``tests/server/test_every_code_provoked.py`` counts a reason code as provoked when a test names
it outright in a call of one of :data:`REFUSAL_ASSERTIONS`; these two helpers are the ones that
also check that nothing changed."""

from __future__ import annotations

from typing import Any, Final

import grpc

from spades.client import ErrorDetails
from spades.v1 import actions_pb2
from spades_server.app.server import SpadesServer
from tests.support.clients import SeatStream
from tests.support.refusals import assert_action_refused, assert_call_refused
from tests.support.servers import log_head

#: The assertions of a refusal a provoked code is counted through, each with the position of
#: its ``reason_code`` argument: these two (status, reason code, nothing written),
#: tests/server/refusals.py's (status and reason code of a call or an ActionResult), and the
#: challenge suites' ``refused`` (the SDK's error: status and reason code).
REFUSAL_ASSERTIONS: Final = {
    "refused_unchanged": 3,
    "action_refused_unchanged": 5,
    "assert_call_refused": 2,
    "assert_action_refused": 2,
    "assert_status_details": 2,
    "refused": 2,
}


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
    head = await log_head(server)
    try:
        outcome = await call
    except grpc.aio.AioRpcError as raised:
        error = raised
    else:
        assert isinstance(outcome, grpc.aio.AioRpcError), f"the call succeeded: {outcome}"
        error = outcome
    details = assert_call_refused(error, code, reason_code, field)
    assert await log_head(server) == head, "a refusal writes nothing"
    return details


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
    head = await log_head(server)
    result = await stream.act(action, sequence)
    details = assert_action_refused(result, code, reason_code, field)
    assert await log_head(server) == head, "a refusal writes nothing"
    return details
