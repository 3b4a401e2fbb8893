"""The table cache is bounded: finished and idle tables leave it, and a table that left is
loaded from the log again exactly as it was (streams, records and commands see no difference).
Tables with an open stream stay, so every stream and command of a table share one object."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Callable

import grpc
import pytest

from spades import protocol
from spades.engine import Clock, MatchState, Rules
from spades.v1 import lobby_pb2, play_pb2, view_pb2
from spades_server.app import config
from spades_server.app.server import SpadesServer
from spades_server.ops.settings import DEFAULT_CACHE_SIZE
from tests.support.backends import Storages
from tests.support.clients import Client, close_streams, current_view, watch
from tests.support.seats import play_turns
from tests.support.servers import log_events, running_server

ONE_HAND = Rules(max_hands=1)
CACHE_SIZE = 2


@contextlib.asynccontextmanager
async def serving(
    storage: Storages, cache_size: int, **settings: object
) -> AsyncIterator[tuple[SpadesServer, Client]]:
    async with contextlib.AsyncExitStack() as stack:
        server = await stack.enter_async_context(
            running_server(storage(), table_cache_size=cache_size, **settings)
        )
        channel = await stack.enter_async_context(
            grpc.aio.insecure_channel(f"127.0.0.1:{server.port}")
        )
        yield server, Client(channel)


def cached_ids(server: SpadesServer) -> set[str]:
    return {table.table_id for table in server.store.cached_tables()}


async def eventually(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    """Wait for ``condition`` (a closed stream lets go of its table when the server sees the
    client's cancellation, a moment after the client closed it)."""
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.01)


@pytest.mark.asyncio
async def test_an_evicted_table_plays_watches_and_records_as_before(storage: Storages) -> None:
    rng = random.Random(14)
    async with serving(storage, CACHE_SIZE) as (server, client):
        # A table left in the middle of its hand (every stream closed: idle).
        idle = (await client.create_table(ONE_HAND, name="idle")).table.table_id
        idle_tokens = await client.seat_all(idle)
        streams = await client.started_streams(idle_tokens)
        await play_turns(
            client,
            idle,
            streams,
            rng,
            until=lambda now: now.view.phase == view_pb2.PHASE_PLAYING,
        )
        await close_streams(streams)

        # Finished tables, more than the cache holds.
        finished = []
        for number in range(2 * CACHE_SIZE + 1):
            table_id = (await client.create_table(ONE_HAND, name=f"m{number}")).table.table_id
            streams = await client.started_streams(await client.seat_all(table_id))
            final = await play_turns(client, table_id, streams, rng)
            assert final.view.phase == view_pb2.PHASE_ENDED
            await close_streams(streams)
            finished.append(table_id)

        # Streams closed: the cache holds no more than its bound, the oldest are gone.
        await eventually(lambda: len(server.store.cached_tables()) <= CACHE_SIZE)
        assert idle not in cached_ids(server) and finished[0] not in cached_ids(server)

        # An evicted finished table: its record and a Watch from the start are the log's.
        logged = await log_events(server, finished[0])
        record = (
            await client.play.GetRecord(play_pb2.GetRecordRequest(table_id=finished[0]))
        ).record
        assert [event.sequence for event in record.events] == [e.sequence for e in logged]
        replay = watch(client, finished[0], after_sequence=1)
        try:
            assert (await replay.snapshot()).sequence == 1
            while len(replay.events()) < len(logged) - 1:
                await replay.next()
        finally:
            replay.close()
        assert [e.sequence for e in replay.events()] == list(range(2, len(logged) + 1))
        expected = MatchState.from_events(protocol.event_from_proto(e) for e in logged)
        assert server.store.cached(finished[0]).state.scores == expected.scores

        # The evicted idle table: its players come back with their tokens and finish it.
        for table_id in finished[1:]:
            await current_view(client, table_id)  # pushes the idle table out again
        await eventually(lambda: idle not in cached_ids(server))
        streams = await client.started_streams(idle_tokens)
        final = await play_turns(client, idle, streams, rng)
        assert final.view.phase == view_pb2.PHASE_ENDED
        await close_streams(streams)
        logged = await log_events(server, idle)
        assert MatchState.from_events(protocol.event_from_proto(e) for e in logged).is_over
        summary = (await client.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=idle))).table
        assert summary.sequence == len(logged)


@pytest.mark.asyncio
async def test_a_table_with_an_open_stream_stays_cached(storage: Storages) -> None:
    async with serving(storage, 0) as (server, client):
        watched = (await client.create_table(ONE_HAND, name="watched")).table.table_id
        spectator = watch(client, watched)
        try:
            await spectator.snapshot()
            other = (await client.create_table(ONE_HAND, name="other")).table.table_id
            await current_view(client, other)
            await eventually(lambda: cached_ids(server) == {watched})
            # The stream still sees what commands append (one object for both).
            await client.seat_all(watched, 1)
            event = (await spectator.next()).event
            assert event.WhichOneof("kind") == "seat_taken"
        finally:
            spectator.close()


def test_the_cache_size_is_a_setting() -> None:
    assert config.from_args([], {}).table_cache_size == DEFAULT_CACHE_SIZE
    assert config.from_args([], {"SPADES_TABLE_CACHE_SIZE": "64"}).table_cache_size == 64
    assert config.from_args(["--table-cache-size", "8"], {}).table_cache_size == 8
    with pytest.raises(SystemExit):
        config.from_args(["--table-cache-size", "-1"], {})


@pytest.mark.asyncio
async def test_the_clock_times_out_a_table_that_left_the_cache(storage: Storages) -> None:
    slow_turns = Rules(max_hands=1, clock=Clock(turn_millis=600, extension_millis=600))
    # No house bots: nobody but the clock acts, and no stream holds the table.
    async with serving(storage, 0, house_bots=0) as (server, client):
        table_id = (await client.create_table(slow_turns, name="left alone")).table.table_id
        await client.seat_all(table_id)  # the match starts; nobody opens a stream
        await eventually(lambda: table_id not in cached_ids(server))
        # Only the clock acts: it loads the table again and times out each turn.
        async with asyncio.timeout(30):
            while True:
                kinds = [e.WhichOneof("kind") for e in await log_events(server, table_id)]
                if kinds.count("turn_timed_out") >= 2:
                    break
                await asyncio.sleep(0.1)
