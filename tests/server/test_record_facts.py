"""A record and the Watch stream say what the lobby says: who sat where (the account holding
each seat) and what table it was (its name, privacy, whether it was rated), on both backends.

The engine's events do not carry these (the server adds them to the stored public messages), so
a spectator's TableCreated (its seed hidden, so converted anew) and a record built from the
engine's events used to lose them: an offline verifier could not tell who sat where or whether
a match counted.
"""

from __future__ import annotations

import asyncio

import grpc
import pytest

from spades.bot import play_match
from spades.client import SpadesClient
from spades.engine import Rules
from spades.v1 import cards_pb2, events_pb2, lobby_pb2, lobby_pb2_grpc, play_pb2, play_pb2_grpc
from spades_bots.registry import bot_class
from tests.support.backends import Storages
from tests.support.servers import running_server

pytestmark = pytest.mark.asyncio

SHORT = Rules(max_hands=1)


async def watched(channel: grpc.aio.Channel, table_id: str) -> list[events_pb2.Event]:
    """Every event of the table's Watch stream (one message an event), to its end."""
    stub = play_pb2_grpc.PlayServiceStub(channel)
    request = play_pb2.WatchRequest(table_id=table_id, after_sequence=0)
    return [message.event async for message in stub.Watch(request) if message.HasField("event")]


def facts(events: list[events_pb2.Event]) -> list[tuple[object, ...]]:
    """What each TableCreated and SeatTaken says of the table and its seats."""
    said: list[tuple[object, ...]] = []
    for event in events:
        if event.HasField("table_created"):
            created = event.table_created
            said.append(
                ("table", created.name, created.private, created.quick_match, created.rated)
            )
        elif event.HasField("seat_taken"):
            taken = event.seat_taken
            said.append(("seat", taken.player.seat, taken.player.name, taken.account_id))
    return said


@pytest.mark.parametrize("kind", ["rated", "private"])
async def test_records_and_watch_name_the_accounts_and_the_table_as_the_lobby_does(
    storage: Storages, kind: str
) -> None:
    async with running_server(storage("facts"), shutdown_grace=0.2) as server:
        address = f"127.0.0.1:{server.port}"
        async with SpadesClient(address) as lobby:
            north_south = await lobby.create_account("Facts North South", kind="bot")
            east_west = await lobby.create_account("Facts East West", kind="bot")
            created = await lobby.create_table(
                f"Facts {kind}", SHORT, rated=kind == "rated", private=kind == "private"
            )
        table_id = created.table.table_id
        holders = [(north_south, "north,south"), (east_west, "east,west")]
        clients = [SpadesClient(address, account_key=holder.key) for holder, _ in holders]
        try:
            plays = [
                play_match(client, bot_class("random")(), ticket.token)
                for client, (_, seats) in zip(clients, holders, strict=True)
                for ticket in [
                    await client.join_table(
                        table_id, "ignored", seat=seat, join_code=created.join_code
                    )
                    for seat in seats.split(",")
                ]
            ]
            async with asyncio.timeout(120):
                await asyncio.gather(*plays)
        finally:
            for client in clients:
                await client.close()

        async with grpc.aio.insecure_channel(address) as channel:
            record = (
                await play_pb2_grpc.PlayServiceStub(channel).GetRecord(
                    play_pb2.GetRecordRequest(table_id=table_id)
                )
            ).record
            watch = await watched(channel, table_id)
            table = (
                await lobby_pb2_grpc.LobbyServiceStub(channel).GetTable(
                    lobby_pb2.GetTableRequest(table_id=table_id)
                )
            ).table

    accounts = {
        seat: holder.account.account_id for holder, seats in holders for seat in seats.split(",")
    }
    assert facts(list(record.events)) == facts(watch)
    said = facts(watch)
    assert said[0] == ("table", table.name, table.private, table.quick_match, table.rated)
    assert said[0][1:] == (f"Facts {kind}", kind == "private", False, kind == "rated")
    seated = {
        cards_pb2.Seat.Name(event.seat_taken.player.seat).removeprefix("SEAT_").lower(): (
            event.seat_taken.account_id
        )
        for event in watch
        if event.HasField("seat_taken")
    }
    assert seated == accounts
