"""A stream's write watchdog (``api.interceptors.RequestErrors``) on a bare gRPC server: a client
that never reads even the first message still gets the stream's status once the write timeout
passes. The headers go out on their own before that message: grpc notes them sent only once a
write completes, so the abort after a first write the watchdog cancelled sent them again, the
call refused the batch (TOO_MANY_OPERATIONS), and the client waited for a status forever (the
watchdog test of ``test_timers_on_the_clock.py`` met it now and then, on a loaded machine)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest

from spades_server.api.interceptors import RequestErrors
from tests.support.slow_readers import SLOW_READER_OPTIONS, drained_status
from tests.support.time import ManualClock, wait_for_state

HOUR = 3600.0
#: Far more than a slow reader's flow-control window: its write waits until the client reads.
BIG = b"x" * (256 * 1024)


async def one_big_message(request: bytes, context: object) -> AsyncIterator[bytes]:
    yield BIG


@pytest.mark.asyncio
async def test_a_first_message_never_read_ends_the_stream_with_its_status() -> None:
    clock = ManualClock()
    server = grpc.aio.server(interceptors=[RequestErrors(HOUR, clock)])
    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(
                "test.Big", {"Get": grpc.unary_stream_rpc_method_handler(one_big_message)}
            ),
        )
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(
            f"127.0.0.1:{port}", options=SLOW_READER_OPTIONS
        ) as channel:
            call = channel.unary_stream("/test.Big/Get", None, None)(b"")
            await wait_for_state(clock.timers, "the first write waits for the client")
            clock.advance(HOUR)
            received, error = await drained_status(call)
    finally:
        await server.stop(None)
    assert error is not None and error.code() is grpc.StatusCode.RESOURCE_EXHAUSTED, error
    assert f"not read for {HOUR:g} s" in (error.details() or "")
    assert received <= 1  # the message in flight may still arrive, and nothing after it
