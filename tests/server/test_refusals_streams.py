"""Streams the server ends for its own reasons, over the wire on both log backends: a stream
its client stopped reading (STREAM_NOT_READ), and an account's Connect stream open while the
server stops (SHUTTING_DOWN); each with its status, its reason code, and no event written."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import grpc
import pytest
from prometheus_client import REGISTRY

from spades.engine import Rules
from spades.v1 import account_pb2, account_pb2_grpc, play_pb2, play_pb2_grpc
from tests.support.backends import Storages, head_position
from tests.support.clients import READ_TIMEOUT, Client, close_streams
from tests.support.refusals import assert_call_refused, nothing_written
from tests.support.seats import play_turns
from tests.support.servers import log_head, new_server, running_server

Code = grpc.StatusCode
#: A channel whose stream window is about 1 KiB and does not grow (tests/faults/
#: test_slow_consumer.py says why): a stream never read fills it after a few events.
SLOW_READER_OPTIONS = (("grpc.http2.bdp_probe", 0), ("grpc.http2.lookahead_bytes", 1024))


def streams_closed_unread() -> float:
    return REGISTRY.get_sample_value("spades_errors_total", {"code": "RESOURCE_EXHAUSTED"}) or 0.0


async def status_of(call: Any) -> grpc.aio.AioRpcError:
    """Read a stream to its end: the error status it ends with."""
    try:
        while await asyncio.wait_for(call.read(), READ_TIMEOUT) is not grpc.aio.EOF:  # type: ignore[attr-defined]
            pass
    except grpc.aio.AioRpcError as error:
        return error
    raise AssertionError(f"the stream ended with {await call.code()}")


@pytest.mark.asyncio
async def test_a_stream_whose_client_stopped_reading_is_closed_as_not_read(
    storage: Storages,
) -> None:
    async with (
        running_server(storage(), stream_write_timeout=0.2) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
        grpc.aio.insecure_channel(
            f"127.0.0.1:{server.port}", options=SLOW_READER_OPTIONS
        ) as slow_channel,
    ):
        client = Client(channel)
        table_id = (await client.create_table(Rules(max_hands=1))).table.table_id
        tokens = await client.seat_all(table_id)
        streams = await client.started_streams(tokens)
        await play_turns(client, table_id, streams, random.Random(3))  # a match: many events
        await close_streams(streams)
        head = await log_head(server)
        closed_before = streams_closed_unread()
        # A spectator who asks for the whole match and reads nothing of it.
        watch = play_pb2_grpc.PlayServiceStub(slow_channel).Watch(
            play_pb2.WatchRequest(table_id=table_id)
        )
        async with asyncio.timeout(READ_TIMEOUT):
            while streams_closed_unread() == closed_before:
                await asyncio.sleep(0.01)  # until the server closed it (its metric says so)
        async with nothing_written(server):
            error = await status_of(watch)
            assert_call_refused(error, Code.RESOURCE_EXHAUSTED, "STREAM_NOT_READ")
        assert await log_head(server) == head, "closing a stream writes nothing"


@pytest.mark.asyncio
async def test_a_connect_stream_open_as_the_server_stops_ends_with_shutting_down(
    storage: Storages,
) -> None:
    where = storage()
    server = new_server(where, shutdown_grace=0.2)
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            accounts = account_pb2_grpc.AccountServiceStub(channel)
            created = await accounts.CreateAccount(
                account_pb2.CreateAccountRequest(
                    name="Connected Bot", kind=account_pb2.ACCOUNT_KIND_BOT
                )
            )
            connect = accounts.Connect(
                account_pb2.ConnectRequest(),
                metadata=(("authorization", f"Bearer {created.key}"),),
            )
            await asyncio.wait_for(connect.read(), READ_TIMEOUT)  # the account's first event
            head = await head_position(server.log)
            stopping = asyncio.ensure_future(server.stop())
            error = await status_of(connect)
            await stopping
    finally:
        await server.stop()
    assert_call_refused(error, Code.UNAVAILABLE, "SHUTTING_DOWN")
    async with where.new_log() as log:
        assert await head_position(log) == head, "stopping writes no event"
