"""Client request ids: a retried CreateTable, JoinTable, QuickMatch or AddHouseBot gets the first
call's outcome (the same table, the same seat and a seat token that works), on the same server,
after a restart that came between the commit and the reply, and from another replica; the log
keeps only the request id's digest, in the server's envelope, never in a public event."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import grpc
import pytest

from spades.engine import Rules
from spades.engine import events as ev
from spades.v1 import admin_pb2, cards_pb2, lobby_pb2
from spades_server.app.server import SpadesServer
from spades_server.domain import tokens
from spades_server.eventlog.base import StoredEvent
from spades_server.v1 import log_pb2
from tests.support.backends import Storages
from tests.support.clients import Client, rpc_error
from tests.support.servers import log_entries, log_events, new_server

pytestmark = pytest.mark.asyncio

INVALID_ARGUMENT = grpc.StatusCode.INVALID_ARGUMENT
FAILED_PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION


def request_id() -> str:
    return uuid.uuid4().hex


async def seats_taken(server: SpadesServer, table_id: str) -> list[int]:
    entries = await log_entries(server, table_id)
    return [entry.event.seat for entry in entries if isinstance(entry.event, ev.SeatTaken)]


async def token_works(client: Client, token: str) -> bool:
    stream = client.seat_stream(token)
    try:
        snapshot = await stream.start()
        return snapshot.sequence > 0
    finally:
        await stream.close()


async def test_a_retried_join_gets_the_same_seat_and_a_working_token(
    client: Client, server: SpadesServer
) -> None:
    table_id = (await client.create_table(Rules(max_hands=1))).table.table_id
    request = request_id()
    first = await client.join(table_id, "retrying", request_id=request)
    again = await client.join(table_id, "retrying", request_id=request)
    assert (again.seat, again.seat_token) == (first.seat, first.seat_token)
    assert await seats_taken(server, table_id) == [0]
    assert await token_works(client, again.seat_token)
    # Another request takes another seat; a third retry still answers the first seat.
    other = await client.join(table_id, "other", request_id=request_id())
    assert other.seat != first.seat
    third = await client.join(table_id, "retrying", request_id=request)
    assert third.seat_token == first.seat_token


async def test_the_request_id_stays_in_the_servers_envelope_as_a_digest(
    client: Client, server: SpadesServer
) -> None:
    request = request_id()
    created = await client.create_table(Rules(), request_id=request)
    table_id = created.table.table_id
    joined = await client.join(table_id, "retrying", request_id=request)
    entries = await log_entries(server, table_id)
    assert entries[0].secrets.request_id_sha256 == tokens.digest(request)
    assert entries[1].secrets.request_id_sha256 == tokens.digest(request)
    rows: list[StoredEvent] = await server.log.read(table_id)
    for row in rows:  # neither the id nor the token is stored; no public event has the digest
        assert request.encode() not in row.data
        assert joined.seat_token.encode() not in row.data
        envelope = log_pb2.LogEntry.FromString(row.data[1:])
        assert tokens.digest(request) not in envelope.event.SerializeToString()


async def test_a_retried_join_after_the_seat_was_left_is_refused(client: Client) -> None:
    table_id = (await client.create_table(Rules())).table.table_id
    request = request_id()
    joined = await client.join(table_id, "retrying", request_id=request)
    await client.lobby.LeaveTable(
        lobby_pb2.LeaveTableRequest(),
        metadata=(("spades-seat-token", joined.seat_token),),
    )
    error = await rpc_error(client.join(table_id, "retrying", request_id=request))
    assert error.code() is FAILED_PRECONDITION
    assert "given up" in (error.details() or "")


async def test_the_retry_of_the_join_that_started_the_match_gets_its_seat(
    client: Client, server: SpadesServer
) -> None:
    table_id = (await client.create_table(Rules(max_hands=1))).table.table_id
    await client.seat_all(table_id, 3)
    request = request_id()
    last = await client.join(table_id, "retrying", request_id=request)
    again = await client.join(table_id, "retrying", request_id=request)
    assert again.seat_token == last.seat_token and again.seat == cards_pb2.SEAT_WEST
    assert await token_works(client, again.seat_token)


@pytest.mark.parametrize("bad", ["short", "x" * 65, "has space in it!!", "é" * 20])
async def test_a_malformed_request_id_is_refused_and_changes_nothing(
    client: Client, server: SpadesServer, bad: str
) -> None:
    table_id = (await client.create_table(Rules())).table.table_id
    for call in (
        client.join(table_id, "retrying", request_id=bad),
        client.lobby.QuickMatch(lobby_pb2.QuickMatchRequest(player_name="q", request_id=bad)),
        client.create_table(Rules(), request_id=bad),
    ):
        error = await rpc_error(call)
        assert error.code() is INVALID_ARGUMENT
        assert "request_id" in (error.details() or "")
    assert await seats_taken(server, table_id) == []


async def test_a_retried_create_table_makes_one_table_with_the_same_join_code(
    client: Client, server: SpadesServer
) -> None:
    request = request_id()
    first = await client.create_table(Rules(), name="once", private=True, request_id=request)
    again = await client.create_table(Rules(), name="once", private=True, request_id=request)
    assert again.table.table_id == first.table.table_id
    assert again.join_code == first.join_code and len(first.join_code) == 10
    assert await log_events(server, first.table.table_id)
    # The code works, a wrong one does not; only one table was made.
    joined = await client.join(
        first.table.table_id, "retrying", request_id=request_id(), join_code=again.join_code
    )
    assert joined.seat_token
    listed = [table for table in server.projection.tables.values() if table.name == "once"]
    assert len(listed) == 1
    # Without a request id, two calls are two tables.
    a = await client.create_table(Rules(), name="twice")
    b = await client.create_table(Rules(), name="twice")
    assert a.table.table_id != b.table.table_id


async def test_a_retried_quick_match_gets_the_same_seat(
    client: Client, server: SpadesServer
) -> None:
    request = request_id()
    ask = lobby_pb2.QuickMatchRequest(player_name="quick", bot=True, request_id=request)
    first = await client.lobby.QuickMatch(ask)
    again = await client.lobby.QuickMatch(ask)
    assert again.seat == first.seat
    assert await seats_taken(server, first.seat.table_id) == [0]
    assert await token_works(client, again.seat.seat_token)
    # Someone else joins the same table; the retry still answers the first seat.
    other = await client.lobby.QuickMatch(
        lobby_pb2.QuickMatchRequest(player_name="other", bot=True, request_id=request_id())
    )
    assert other.seat.table_id == first.seat.table_id and other.seat.seat != first.seat.seat
    assert (await client.lobby.QuickMatch(ask)).seat == first.seat


async def test_a_join_committed_before_a_restart_is_answered_after_it(storage: Storages) -> None:
    """The server went away after the commit and before the client read the reply."""
    database = storage()
    request, create_request, quick_request = request_id(), request_id(), request_id()
    server = new_server(database)
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            client = Client(channel)
            created = await client.create_table(Rules(max_hands=1), request_id=create_request)
            table_id = created.table.table_id
            first = await client.join(table_id, "retrying", request_id=request)
            quick = await client.lobby.QuickMatch(
                lobby_pb2.QuickMatchRequest(player_name="q", request_id=quick_request)
            )
    finally:
        await server.stop()
    server = new_server(database)
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            client = Client(channel)
            again = await client.join(table_id, "retrying", request_id=request)
            assert (again.seat, again.seat_token) == (first.seat, first.seat_token)
            assert await token_works(client, again.seat_token)
            recreated = await client.create_table(Rules(max_hands=1), request_id=create_request)
            assert recreated.table.table_id == table_id
            requick = await client.lobby.QuickMatch(
                lobby_pb2.QuickMatchRequest(player_name="q", request_id=quick_request)
            )
            assert requick.seat == quick.seat
            assert await seats_taken(server, table_id) == [0]
    finally:
        await server.stop()


async def test_a_retried_add_house_bot_seats_one_bot(storage: Storages) -> None:
    server = new_server(storage(), house_bots=4, quick_match_fill_after=0)
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            client = Client(channel)
            table_id = (await client.create_table(Rules())).table.table_id
            request = request_id()
            ask = lobby_pb2.AddHouseBotRequest(table_id=table_id, request_id=request)
            first = await client.lobby.AddHouseBot(ask)
            again = await client.lobby.AddHouseBot(ask)
            assert (again.seat, again.player_name) == (first.seat, first.player_name)
            assert await seats_taken(server, table_id) == [0]
    finally:
        await server.stop()


async def test_one_request_through_two_replicas_at_once_has_one_outcome(
    tmp_path: Path, postgres: None
) -> None:
    from tests.support.clients import clients
    from tests.support.servers import replicas

    async with replicas(tmp_path, 2) as servers, clients(servers) as (a, b):
        create_request = request_id()
        made = await asyncio.gather(
            a.create_table(Rules(max_hands=1), request_id=create_request),
            b.create_table(Rules(max_hands=1), request_id=create_request),
        )
        assert made[0].table.table_id == made[1].table.table_id
        table_id = made[0].table.table_id
        for _ in range(3):
            request = request_id()
            joined = await asyncio.gather(
                a.join(table_id, "retrying", request_id=request),
                b.join(table_id, "retrying", request_id=request),
            )
            assert joined[0].seat_token == joined[1].seat_token
            assert joined[0].seat == joined[1].seat
        assert sorted(await seats_taken(servers[0], table_id)) == [0, 1, 2]
        quick_request = request_id()
        ask = lobby_pb2.QuickMatchRequest(player_name="q", request_id=quick_request)
        first = await a.lobby.QuickMatch(ask)
        again = await b.lobby.QuickMatch(ask)
        assert again.seat == first.seat
        assert await seats_taken(servers[1], first.seat.table_id) == [0]


async def test_a_retried_create_table_with_deals_makes_one_table(storage: Storages) -> None:
    from tests.support.admin import (
        OPERATOR_TOKEN,
        admin_stub,
        deal_messages,
        deals_of,
        operator,
        serving,
    )

    async with serving(storage, operator_token=OPERATOR_TOKEN) as (server, client):
        ask = admin_pb2.CreateTableWithDealsRequest(
            name="dealt once",
            deals=deal_messages(deals_of(bytes(32), 2)),
            private=True,
            request_id=request_id(),
        )
        first = await admin_stub(client).CreateTableWithDeals(ask, metadata=operator())
        again = await admin_stub(client).CreateTableWithDeals(ask, metadata=operator())
        assert again.table.table_id == first.table.table_id
        assert again.join_code == first.join_code != ""
        listed = [
            table for table in server.projection.tables.values() if table.name == "dealt once"
        ]
        assert len(listed) == 1
