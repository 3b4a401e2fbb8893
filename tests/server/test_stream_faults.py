"""Streams that misbehave: a second stream for a seat, a client that vanishes."""

from __future__ import annotations

import asyncio
import random

import grpc
import pytest

from spades.engine import Rules
from spades_server.app.server import SpadesServer
from tests.support.clients import Client
from tests.support.seats import play_until_over
from tests.support.time import wait_for_state


@pytest.mark.asyncio
async def test_a_second_stream_for_a_seat_wins_and_the_first_is_closed(client: Client) -> None:
    table_id = (await client.create_table(Rules(max_hands=1))).table.table_id
    tokens = await client.seat_all(table_id)
    first = client.seat_stream(tokens[0])
    await first.start()
    second = client.seat_stream(tokens[0])
    await second.start()
    with pytest.raises(grpc.aio.AioRpcError) as closed:
        while True:
            await first.next()
    assert closed.value.code() is grpc.StatusCode.ABORTED
    assert "newer stream" in (closed.value.details() or "")
    # The newer stream plays on, with the other seats, to the end of the match.
    others = [client.seat_stream(token) for token in tokens[1:]]
    for stream in others:
        await stream.start()
    rng = random.Random(3)
    await asyncio.gather(*(play_until_over(stream, rng) for stream in [second, *others]))


@pytest.mark.asyncio
async def test_a_client_that_vanishes_mid_stream_harms_no_one(
    server: SpadesServer, client: Client
) -> None:
    table_id = (await client.create_table(Rules(max_hands=1))).table.table_id
    tokens = await client.seat_all(table_id)
    vanishing = client.seat_stream(tokens[0])
    await vanishing.start()
    seat = next(s for s in range(4) if server.absent.connected(table_id, s))
    vanishing.call.cancel()
    await wait_for_state(
        lambda: not server.absent.connected(table_id, seat), "the server saw the stream go"
    )
    # Everyone, the vanished seat included (reconnecting), finishes the match.
    streams = [client.seat_stream(token) for token in tokens]
    for stream in streams:
        await stream.start()
    rng = random.Random(5)
    await asyncio.gather(*(play_until_over(stream, rng) for stream in streams))
