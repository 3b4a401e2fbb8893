"""The interceptor chain every call goes through, after the limits' guard: a refusal becomes
its status, each call's log lines carry a request id, and a stream's writes wait a bounded time.

A :class:`~spades_server.domain.errors.RequestError` raised anywhere below a servicer goes out as
its ``google.rpc.Status`` (status code, human reason, reason code) here, in one place.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import structlog
from grpc_status import rpc_status

from spades.reasons import Reason
from spades_server.domain import errors
from spades_server.eventlog.base import LogUnavailable
from spades_server.ops import metrics
from spades_server.ops.clocks import SYSTEM_CLOCK, Clock, Timer

log = structlog.get_logger(__name__)
Context = grpc.aio.ServicerContext[Any, Any]


class RequestErrors(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]
    """Turns a RequestError into its status, binds a request id to every log line, and
    bounds how long a stream may wait for its client to read."""

    def __init__(self, write_timeout: float, clock: Clock = SYSTEM_CLOCK) -> None:
        self._write_timeout = write_timeout
        self._clock = clock

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Any]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Any:
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        method = handler_call_details.method
        if handler.unary_unary:
            inner_unary = handler.unary_unary

            async def unary(request: Any, context: Context) -> Any:
                structlog.contextvars.bind_contextvars(request_id=uuid.uuid4().hex[:12])
                try:
                    return await inner_unary(request, context)
                except errors.RequestError as error:
                    await abort(context, error, method)
                except LogUnavailable as error:
                    await abort(context, unavailable(error), method)

            return grpc.unary_unary_rpc_method_handler(
                unary,
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream or handler.stream_stream:
            streaming = handler.unary_stream or handler.stream_stream

            write_timeout = self._write_timeout
            clock = self._clock

            async def stream(request: Any, context: Context) -> None:
                structlog.contextvars.bind_contextvars(request_id=uuid.uuid4().hex[:12])
                # A client that stops reading fills its flow-control window; it gets a bounded
                # wait, then its stream is closed (no one else waits on it).
                watch = WriteWatch(write_timeout, clock)
                headers_sent = False
                try:
                    async for message in streaming(request, context):
                        if not headers_sent:
                            # The headers on their own before the first message: grpc notes
                            # them sent only once a write completes, so an abort after a first
                            # write the watch cancelled would send them again, which the call
                            # refuses (TOO_MANY_OPERATIONS), and the client got no status.
                            await context.send_initial_metadata(())
                            headers_sent = True
                        watch.since = clock.monotonic()
                        if watch.timer is None:
                            watch.arm()
                        try:
                            await context.write(message)
                        except asyncio.CancelledError:
                            if not watch.expired():
                                raise
                            raise errors.refuse(
                                Reason.STREAM_NOT_READ,
                                f"this stream was not read for {write_timeout:g} s, so it is "
                                "closed; reconnect and resume from your last sequence",
                            ) from None
                        finally:
                            watch.since = None
                except errors.RequestError as error:
                    await abort(context, error, method)
                except LogUnavailable as error:
                    await abort(context, unavailable(error), method)
                finally:
                    watch.close()

            make = (
                grpc.unary_stream_rpc_method_handler
                if handler.unary_stream
                else grpc.stream_stream_rpc_method_handler
            )
            return make(
                stream,
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return handler


def unavailable(error: LogUnavailable) -> errors.RequestError:
    """UNAVAILABLE (LOG_UNAVAILABLE) for a log that could not be read or written now, wherever
    below a servicer it was met: the one home that turns storage's failure into a status."""
    return errors.refuse(Reason.LOG_UNAVAILABLE, str(error))


class WriteWatch:
    """Bounds how long each write of one stream may wait (``stream_write_timeout``) with one
    timer per stream, not one per write: a write notes when it began (``since``, None while
    none waits); the timer, armed by a write when none is, looks when the oldest possible
    deadline passes and cancels the stream's task if the write then waiting began ``timeout``
    ago, else moves itself to that write's deadline. A stream writing every few milliseconds so
    costs one timer per ``timeout`` seconds instead of a timer set and cancelled per message
    (asyncio.timeout's), with the same bound: no write waits longer than ``timeout``."""

    __slots__ = ("_cancelling", "_clock", "_fired", "_task", "_timeout", "since", "timer")

    def __init__(self, timeout: float, clock: Clock) -> None:
        self._timeout = timeout
        self._clock = clock
        task = asyncio.current_task()
        assert task is not None
        self._task = task
        self._cancelling = task.cancelling()
        self._fired = False
        #: When the write now waiting began (the clock's monotonic time), None while none waits.
        self.since: float | None = None
        self.timer: Timer | None = None

    def arm(self) -> None:
        """Start the timer for the write that just began (``since``)."""
        assert self.since is not None
        self.timer = self._clock.call_later(self._timeout, self._check)

    def _check(self) -> None:
        self.timer = None
        since = self.since
        if since is None:
            return  # no write waits: the next one arms the timer again
        left = since + self._timeout - self._clock.monotonic()
        if left <= 0:
            self._fired = True
            self._task.cancel()
        else:
            self.timer = self._clock.call_later(left, self._check)

    def expired(self) -> bool:
        """After a CancelledError out of a write: True when this watch cancelled it (and not
        also someone else: the call's own cancellation goes on), as asyncio.timeout decides."""
        if not self._fired:
            return False
        self._fired = False
        return self._task.uncancel() <= self._cancelling

    def close(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


async def abort(context: Context, error: errors.RequestError, method: str) -> None:
    metrics.ERRORS.labels(error.code.name).inc()
    # NOT_FOUND and ABORTED are a client's ordinary misses and races; the rest is worth a look.
    routine = error.code in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.ABORTED)
    (log.debug if routine else log.info)(
        "request refused",
        method=method,
        code=error.code.name,
        reason_code=error.reason_code,
        reason=error.reason,
    )
    # The one place a refusal becomes a call's status: google.rpc.Status with its details, in
    # the grpc-status-details-bin trailer (grpcio-status), beside grpc-status and grpc-message.
    status = rpc_status.to_status(errors.status_of(error))
    await context.abort(status.code, status.details, status.trailing_metadata)
