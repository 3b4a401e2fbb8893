"""A Play stream refused as it opens reaches the bot author with the server's status, never
as INTERNAL: grpc.aio's client loses that status when the client's write and the server's
refusal cross (grpc/grpc#36066), and the SDK then opens the stream again, a bounded number of
times (spades.client.status_lost, spades.client.connection.open_seat_connection).

The crossing is made, not waited for: the SDK's first write on a call is let through at the
moment the server has refused the call (its refusal counted, its status not yet taken in by
the client), which loses the status every time here. Left to itself the crossing is rare: about
one open in 600 when the client writes only ``start``, as the SDK does (measured by hand)."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest
from prometheus_client import REGISTRY

from spades.client import SpadesError, Unauthenticated, status_lost
from spades.client.connection import LOST_STATUS_ATTEMPTS, open_seat_connection
from spades.v1 import play_pb2, play_pb2_grpc
from spades_server.app.server import SpadesServer

UNAUTHENTICATED = {"code": "UNAUTHENTICATED"}


def refusals() -> float:
    """Calls the server refused as UNAUTHENTICATED so far (it counts each as it refuses)."""
    return REGISTRY.get_sample_value("spades_errors_total", UNAUTHENTICATED) or 0.0


class CrossingCall:
    """A real Play call whose first write waits until the server has refused the call."""

    def __init__(self, call: Any, refused_before: float) -> None:
        self._call = call
        self._refused_before = refused_before

    async def write(self, request: play_pb2.PlayRequest) -> None:
        async with asyncio.timeout(10):
            while refusals() == self._refused_before:
                await asyncio.sleep(0)  # the server's refusal is made in this event loop
        await self._call.write(request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._call, name)


class CrossingStub:
    """The PlayService stub of a real channel whose first ``crossed`` Play calls cross the
    server's refusal with their first write; ``calls`` counts the calls made."""

    def __init__(self, channel: grpc.aio.Channel, crossed: int) -> None:
        self._stub = play_pb2_grpc.PlayServiceStub(channel)
        self.crossed = crossed
        self.calls = 0

    def Play(self, **kwargs: Any) -> Any:
        self.calls += 1
        refused_before = refusals()
        call = self._stub.Play(**kwargs)
        return CrossingCall(call, refused_before) if self.calls <= self.crossed else call


@pytest.mark.asyncio
async def test_a_refusal_whose_status_grpc_lost_is_asked_again_and_raised_as_sent(
    server: SpadesServer,
) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        stub = CrossingStub(channel, crossed=1)
        with pytest.raises(SpadesError) as raised:
            await open_seat_connection(stub, "not a seat token")  # type: ignore[arg-type]
    assert isinstance(raised.value, Unauthenticated), raised.value
    assert raised.value.reason_code == "SEAT_TOKEN_INVALID"
    assert stub.calls == 2  # the lost one, and the one asked again


@pytest.mark.asyncio
async def test_a_status_lost_every_time_is_asked_a_bounded_number_of_times(
    server: SpadesServer,
) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        stub = CrossingStub(channel, crossed=LOST_STATUS_ATTEMPTS + 5)
        with pytest.raises(SpadesError) as raised:
            await open_seat_connection(stub, "not a seat token")  # type: ignore[arg-type]
    assert raised.value.code is grpc.StatusCode.INTERNAL and raised.value.status_lost
    assert stub.calls == LOST_STATUS_ATTEMPTS


@pytest.mark.asyncio
async def test_only_an_internal_status_from_a_crossed_write_counts_as_lost(
    server: SpadesServer,
) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        stub = CrossingStub(channel, crossed=1)
        statuses = []
        for _ in range(2):  # crossed, then not
            call = stub.Play(metadata=(("spades-seat-token", "not a seat token"),))
            try:
                await call.write(play_pb2.PlayRequest(start=play_pb2.StartPlay()))
                await call.read()
            except grpc.aio.AioRpcError as error:
                statuses.append(error)
            except asyncio.InvalidStateError:
                pytest.fail("the client saw the end before its write: nothing crossed")
    lost, kept = statuses
    assert lost.code() is grpc.StatusCode.INTERNAL and "execute_batch" in (
        lost.debug_error_string() or ""
    )
    assert status_lost(lost)
    assert kept.code() is grpc.StatusCode.UNAUTHENTICATED and not status_lost(kept)
