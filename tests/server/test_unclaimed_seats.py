"""Unclaimed seats: a seat taken at a waiting table whose holder never opens a stream is freed
after --unclaimed-seat-timeout (a SeatLeft in the log, once), also when the deadline passes
while the server is down; a seat whose holder opened a stream is kept (on any replica, and
after a restart: the log keeps a claim of it)."""

from __future__ import annotations

import uuid
from pathlib import Path

import grpc
import pytest

from spades.engine import Rules
from spades.engine import events as ev
from spades.v1 import cards_pb2, lobby_pb2
from spades_server.app.server import SpadesServer
from tests.support.backends import require_postgres
from tests.support.clients import Client, rpc_error
from tests.support.servers import log_entries, new_server
from tests.support.time import UNCLAIMED_SEATS, ManualClock, wait_for_state

pytestmark = pytest.mark.asyncio

#: The servers' --unclaimed-seat-timeout: as long as a real one, as the tests move the clock.
TIMEOUT = 30.0


async def events_of(server: SpadesServer, table_id: str) -> list[ev.Event]:
    return [entry.event for entry in await log_entries(server, table_id)]


async def seat_occupied(client: Client, table_id: str, seat: int) -> bool:
    table = (await client.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id))).table
    return table.seats[seat].occupied


async def until_free(client: Client, table_id: str, seat: int) -> None:
    async def free() -> bool:
        return not await seat_occupied(client, table_id, seat)

    await wait_for_state(free, f"seat {seat} of {table_id} freed")


async def test_a_seat_whose_holder_never_opened_a_stream_is_freed_once(tmp_path: Path) -> None:
    clock = ManualClock()
    server = new_server(tmp_path / "log.db", clock, unclaimed_seat_timeout=TIMEOUT, house_bots=0)
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            client = Client(channel)
            table_id = (await client.create_table(Rules())).table.table_id
            request = uuid.uuid4().hex
            lost = await client.join(table_id, "lost reply", request_id=request)
            kept = await client.join(table_id, "streams")
            stream = client.seat_stream(kept.seat_token)
            await stream.start()
            await clock.pass_time(TIMEOUT - 1, UNCLAIMED_SEATS)  # a sweep before the deadline
            assert await seat_occupied(client, table_id, 0)
            await clock.pass_time(2, UNCLAIMED_SEATS)  # a sweep after it
            await until_free(client, table_id, 0)
            await clock.pass_time(TIMEOUT * 2, UNCLAIMED_SEATS)  # another: nothing more happens
            events = await events_of(server, table_id)
            assert [event for event in events if isinstance(event, ev.SeatLeft)] == [ev.SeatLeft(0)]
            table = (
                await client.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id))
            ).table
            assert table.seats[1].occupied  # its holder opened a stream
            # The freed seat's token is refused, and the retried join says why.
            refused = await rpc_error(client.seat_stream(lost.seat_token).start())
            assert refused.code() is grpc.StatusCode.UNAUTHENTICATED
            retried = await rpc_error(client.join(table_id, "lost reply", request_id=request))
            assert retried.code() is grpc.StatusCode.FAILED_PRECONDITION
            # The seat can be taken again (and that new holder gets a deadline of its own).
            again = await client.join(table_id, "newcomer")
            assert again.seat == lost.seat
            await stream.close()
    finally:
        await server.stop()


async def test_a_deadline_that_passed_while_the_server_was_down_frees_the_seat(
    tmp_path: Path,
) -> None:
    """A seat's deadline is its SeatTaken's stored time plus the timeout, so a restart computes
    the same one: East is taken an hour before North, the clock moves past East's deadline
    while no server runs, and the restarted server frees East at its first sweep (a deadline
    counted from the restart would be an hour away) and keeps North (within its hour)."""
    clock = ManualClock()
    database = tmp_path / "log.db"
    server = new_server(database, clock, unclaimed_seat_timeout=0, house_bots=0)
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            client = Client(channel)
            table_id = (await client.create_table(Rules())).table.table_id
            await client.join(table_id, "gone", seat=cards_pb2.SEAT_EAST)
            clock.advance(3600)
            await client.join(table_id, "recent", seat=cards_pb2.SEAT_NORTH)
    finally:
        await server.stop()
    clock.advance(60)  # East's deadline passes while no server runs
    server = new_server(database, clock, unclaimed_seat_timeout=3600, house_bots=0)
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            client = Client(channel)
            await clock.pass_time(1, UNCLAIMED_SEATS)  # the first sweep
            # A sweep judges North, then East: once East is free, North was judged too.
            await until_free(client, table_id, 1)
            assert await seat_occupied(client, table_id, 0)
            events = await events_of(server, table_id)
            assert [event for event in events if isinstance(event, ev.SeatLeft)] == [ev.SeatLeft(1)]
    finally:
        await server.stop()


async def test_a_started_table_keeps_its_seats(tmp_path: Path) -> None:
    clock = ManualClock()
    server = new_server(tmp_path / "log.db", clock, unclaimed_seat_timeout=TIMEOUT, house_bots=0)
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            client = Client(channel)
            table_id = (await client.create_table(Rules(max_hands=1))).table.table_id
            await client.seat_all(table_id)
            await clock.pass_time(TIMEOUT * 3, UNCLAIMED_SEATS)  # a sweep past every deadline
            events = await events_of(server, table_id)
            assert not any(isinstance(event, ev.SeatLeft) for event in events)
    finally:
        await server.stop()


async def test_replicas_on_a_shared_log_free_a_seat_once_and_keep_one_streamed_elsewhere(
    tmp_path: Path, postgres: None
) -> None:
    """The seat taken through replica A whose holder streams through replica B is kept (B's
    claim in the log says so); the one whose holder never streams is freed, once."""
    from tests.support.clients import clients
    from tests.support.servers import replicas

    require_postgres()
    clock = ManualClock()
    async with (
        replicas(tmp_path, 2, clock, unclaimed_seat_timeout=TIMEOUT) as servers,
        clients(servers) as (a, b),
    ):
        table_id = (await a.create_table(Rules())).table.table_id
        await a.join(table_id, "never streams")
        streams = await a.join(table_id, "streams elsewhere")
        stream = b.seat_stream(streams.seat_token)
        await stream.start()
        await clock.pass_time(TIMEOUT + 1, UNCLAIMED_SEATS, count=2)  # both replicas sweep
        await until_free(a, table_id, 0)
        # More sweeps, on both replicas: nothing more happens.
        await clock.pass_time(TIMEOUT * 3, UNCLAIMED_SEATS, count=2)
        events = await events_of(servers[0], table_id)
        assert [event for event in events if isinstance(event, ev.SeatLeft)] == [ev.SeatLeft(0)]
        table = (await a.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id))).table
        assert table.seats[1].occupied
        await stream.close()


async def test_a_stream_opened_before_a_restart_keeps_its_seat(tmp_path: Path) -> None:
    """The claim is in the log: a restarted server does not free the seat of a holder that
    streamed before the restart."""
    clock = ManualClock()
    database = tmp_path / "log.db"
    server = new_server(database, clock, unclaimed_seat_timeout=60, house_bots=0)
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            client = Client(channel)
            table_id = (await client.create_table(Rules())).table.table_id
            held = await client.join(table_id, "streamed")
            await client.join(table_id, "never streamed")
            stream = client.seat_stream(held.seat_token)
            await stream.start()
            await stream.close()
    finally:
        await server.stop()
    clock.advance(TIMEOUT)
    server = new_server(database, clock, unclaimed_seat_timeout=TIMEOUT, house_bots=0)
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            client = Client(channel)
            await clock.pass_time(1, UNCLAIMED_SEATS)  # both deadlines have passed
            await until_free(client, table_id, 1)
            await clock.pass_time(TIMEOUT * 2, UNCLAIMED_SEATS)
            assert await seat_occupied(client, table_id, 0)
    finally:
        await server.stop()
