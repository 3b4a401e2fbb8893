"""Timers on the server's clock: the lobby's checkpoints and a stream's write watchdog wait for
time on ``ops.clocks.Clock``, so a test's ``ManualClock`` moves them (and real time does not)."""

from __future__ import annotations

import grpc
import pytest

from spades.engine import Clock, Rules
from spades.v1 import play_pb2, play_pb2_grpc
from spades_server.app.server import SpadesServer
from spades_server.processes.projection import LOBBY
from tests.support.backends import Storages
from tests.support.clients import Client
from tests.support.servers import lobby_caught_up, running_server
from tests.support.slow_readers import (
    SLOW_READER_OPTIONS,
    drained_status,
    refused_for_exhaustion,
)
from tests.support.time import TURN_CLOCK, ManualClock, wait_for_state

#: Longer than any test runs: only the test's clock can make it pass.
HOUR = 3600.0
TURN = 30.0
SLOW = Rules(max_hands=1, clock=Clock(turn_millis=int(TURN * 1000), extension_millis=0))
NO_SUBSTITUTES: dict[str, object] = {"substitute_after_timeouts": 0, "disconnect_grace": 0}


async def checkpointed(server: SpadesServer) -> int:
    checkpoint = await server.log.load_projection(LOBBY)
    return -1 if checkpoint is None else checkpoint.position


async def folded_table(client: Client, server: SpadesServer) -> int:
    """Create a table; the lobby's position once it has folded it."""
    await client.create_table(Rules())
    await lobby_caught_up(server)
    return server.projection.position


@pytest.mark.asyncio
async def test_the_lobby_checkpoints_when_the_servers_clock_says_so(storage: Storages) -> None:
    clock = ManualClock()
    async with (
        running_server(storage("lobby-checkpoints"), clock) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        client = Client(channel)
        # The start checkpointed, due again after the default interval of the clock; from then
        # on, every hour of the clock.
        interval = server.projection.checkpoint_interval
        server.projection.checkpoint_interval = HOUR
        clock.advance(interval)
        first = await folded_table(client, server)
        await wait_for_state(
            lambda: _checkpoint_at(server, first), "the lobby checkpointed once it was due"
        )
        clock.advance(HOUR - 1)
        await folded_table(client, server)
        assert await checkpointed(server) == first, "checkpointed before the interval passed"
        clock.advance(1)
        last = await folded_table(client, server)
        await wait_for_state(
            lambda: _checkpoint_at(server, last), "the lobby checkpointed once the hour passed"
        )


async def _checkpoint_at(server: SpadesServer, position: int) -> bool:
    return await checkpointed(server) == position


@pytest.mark.asyncio
async def test_a_stream_not_read_is_closed_after_the_write_timeout_of_the_servers_clock(
    storage: Storages,
) -> None:
    clock = ManualClock()
    async with (
        running_server(
            storage("write-watch"), clock, stream_write_timeout=HOUR, **NO_SUBSTITUTES
        ) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
        grpc.aio.insecure_channel(
            f"127.0.0.1:{server.port}", options=SLOW_READER_OPTIONS
        ) as slow_channel,
    ):
        client = Client(channel)
        table_id = (await client.create_table(SLOW)).table.table_id
        await client.seat_all(table_id)
        for _ in range(40):  # the turn clock plays: a history longer than the slow window
            await clock.sleeping(TURN_CLOCK)
            clock.advance(TURN)
        await clock.sleeping(TURN_CLOCK)
        before = refused_for_exhaustion()
        watch = play_pb2_grpc.PlayServiceStub(slow_channel).Watch(
            play_pb2.WatchRequest(table_id=table_id)
        )

        def closed() -> bool:
            # Each hour of the clock, the watch looks whether a write waits since an hour.
            if refused_for_exhaustion() > before:
                return True
            if clock.timers():
                clock.advance(HOUR)
            return False

        await wait_for_state(closed, "the stream not read closed after an hour of the clock")
        _, error = await drained_status(watch)
    assert error is not None and error.code() is grpc.StatusCode.RESOURCE_EXHAUSTED, error
    assert f"not read for {HOUR:g} s" in (error.details() or "")
