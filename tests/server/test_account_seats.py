"""An account's key does what a seat token does: it joins (the seat is recorded as the
account's, under its name and kind) and plays the seats it holds, with the table id."""

from __future__ import annotations

import asyncio
import random

import grpc
import pytest

from spades.engine import Rules
from spades.v1 import account_pb2, account_pb2_grpc, cards_pb2, lobby_pb2, play_pb2
from spades_server.app.server import SpadesServer
from tests.support.accounts import BOT, PERSON, bearer, new_account
from tests.support.clients import TOKEN_KEY, Client, SeatStream, rpc_error, stream_error
from tests.support.seats import play_until_over
from tests.support.servers import lobby_caught_up, log_head

pytestmark = pytest.mark.asyncio
Code = grpc.StatusCode
Metadata = tuple[tuple[str, str], ...]


def play_stream(client: Client, metadata: Metadata) -> SeatStream:
    return SeatStream(client.play.Play(metadata=metadata))  # type: ignore[call-arg]


async def test_accounts_sit_under_their_names_and_play_their_seats_with_their_keys(
    server: SpadesServer, client: Client
) -> None:
    table = (await client.create_table(Rules(max_hands=1))).table
    # A bot account playing both seats of a side, a person, and a second bot.
    pair = (await new_account(client.channel, "Pair Bot", BOT)).key
    person = (await new_account(client.channel, "Ada", PERSON)).key
    solo = (await new_account(client.channel, "Solo Bot", BOT)).key
    north = await client.join(
        table.table_id, "ignored", seat=cards_pb2.SEAT_NORTH, bot=False, metadata=bearer(pair)
    )
    await client.join(
        table.table_id, "ignored", seat=cards_pb2.SEAT_EAST, bot=False, metadata=bearer(person)
    )
    await client.join(
        table.table_id, "ignored", seat=cards_pb2.SEAT_SOUTH, bot=False, metadata=bearer(pair)
    )
    await client.join(
        table.table_id, "ignored", seat=cards_pb2.SEAT_WEST, bot=False, metadata=bearer(solo)
    )
    assert north.account_id and north.seat_token
    listed = (await client.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table.table_id))).table
    assert [(s.player_name, s.bot) for s in listed.seats] == [
        ("Pair Bot", True),
        ("Ada", False),
        ("Pair Bot", True),
        ("Solo Bot", True),
    ]
    assert listed.seats[0].account_id == north.account_id == listed.seats[2].account_id
    assert len({s.account_id for s in listed.seats}) == 3

    streams = [
        play_stream(client, bearer(pair, table.table_id, "north")),
        play_stream(client, bearer(person, table.table_id)),
        play_stream(client, bearer(pair, table.table_id, "South")),
        play_stream(client, bearer(solo, table.table_id)),
    ]
    snapshots = [await stream.start() for stream in streams]
    assert [snapshot.view.viewer for snapshot in snapshots] == [
        cards_pb2.SEAT_NORTH,
        cards_pb2.SEAT_EAST,
        cards_pb2.SEAT_SOUTH,
        cards_pb2.SEAT_WEST,
    ]
    rng = random.Random(11)
    async with asyncio.timeout(60):
        await asyncio.gather(*(play_until_over(stream, rng) for stream in streams))
    for stream in streams:
        await stream.close()
    await lobby_caught_up(server, [table.table_id])
    final = (await client.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table.table_id))).table
    assert final.status == lobby_pb2.TABLE_STATUS_FINISHED


async def test_an_account_key_is_refused_for_seats_it_does_not_hold(
    server: SpadesServer, client: Client
) -> None:
    table = (await client.create_table()).table
    pair = (await new_account(client.channel, "Two Seats", BOT)).key
    stranger = (await new_account(client.channel, "Stranger", BOT)).key
    revoked = (await new_account(client.channel, "Gone", BOT)).key
    await client.join(
        table.table_id, "ignored", seat=cards_pb2.SEAT_NORTH, bot=False, metadata=bearer(pair)
    )
    await client.join(
        table.table_id, "ignored", seat=cards_pb2.SEAT_SOUTH, bot=False, metadata=bearer(pair)
    )
    await client.join(
        table.table_id, "ignored", seat=cards_pb2.SEAT_EAST, bot=False, metadata=bearer(revoked)
    )
    await account_pb2_grpc.AccountServiceStub(client.channel).RevokeKey(
        account_pb2.RevokeKeyRequest(), metadata=bearer(revoked)
    )
    start = play_pb2.PlayRequest(start=play_pb2.StartPlay())
    head = await log_head(server)
    cases: list[tuple[Metadata, grpc.StatusCode, str]] = [
        (bearer(pair), Code.INVALID_ARGUMENT, "spades-table-id"),
        (bearer(pair, table.table_id), Code.INVALID_ARGUMENT, "several seats"),
        (bearer(pair, table.table_id, "east"), Code.PERMISSION_DENIED, "does not hold"),
        (bearer(pair, table.table_id, "up"), Code.INVALID_ARGUMENT, "must be one of"),
        (bearer(stranger, table.table_id), Code.PERMISSION_DENIED, "no seat"),
        (bearer(revoked, table.table_id), Code.UNAUTHENTICATED, "revoked"),
        (bearer(pair, "0" * 20, "north"), Code.NOT_FOUND, "no table"),
        ((("authorization", "Basic abc"),), Code.UNAUTHENTICATED, "Bearer"),
    ]
    for metadata, code, words in cases:
        error = await stream_error(lambda sent=metadata: client.play.Play(metadata=sent), start)  # type: ignore[call-arg]
        assert error.code() == code, (metadata, error)
        assert words in (error.details() or ""), (words, error.details())
    # Act too, and a join with a revoked key changes nothing.
    error = await rpc_error(
        client.play.Act(play_pb2.ActRequest(), metadata=bearer(stranger, table.table_id))
    )
    assert error.code() == Code.PERMISSION_DENIED
    error = await rpc_error(
        client.join(
            table.table_id, "ignored", seat=cards_pb2.SEAT_WEST, bot=False, metadata=bearer(revoked)
        )
    )
    assert error.code() == Code.UNAUTHENTICATED
    # A seat token still works beside the account keys (anonymous seats stay anonymous).
    anonymous = await client.lobby.JoinTable(
        lobby_pb2.JoinTableRequest(table_id=table.table_id, player_name="anon", bot=True)
    )
    assert not anonymous.account_id
    assert await log_head(server) > head
    stream = SeatStream(client.play.Play(metadata=((TOKEN_KEY, anonymous.seat_token),)))  # type: ignore[call-arg]
    assert (await stream.start()).view.viewer == cards_pb2.SEAT_WEST
    await stream.close()


async def test_quick_match_with_an_account_key_seats_the_account(client: Client) -> None:
    key = (await new_account(client.channel, "Queue Bot", BOT)).key
    matched = await client.lobby.QuickMatch(
        lobby_pb2.QuickMatchRequest(player_name="whatever"), metadata=bearer(key)
    )
    assert matched.seat.account_id
    table = (
        await client.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=matched.seat.table_id))
    ).table
    seat = table.seats[matched.seat.seat - cards_pb2.SEAT_NORTH]
    assert (seat.player_name, seat.bot, seat.account_id) == (
        "Queue Bot",
        True,
        matched.seat.account_id,
    )
    stream = play_stream(client, bearer(key, table.table_id))
    assert (await stream.start()).view.viewer == matched.seat.seat
    await stream.close()
