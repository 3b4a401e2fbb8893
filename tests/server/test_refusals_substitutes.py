"""A player's action while a house bot substitutes for the seat is refused (SEAT_SUBSTITUTED),
over the wire on both log backends: the status, the reason code, and no event of the action.

The table plays on meanwhile (the substitute and the other house bots act), so "nothing changed"
is read as the action left no trace: no event in the log carries its action id."""

from __future__ import annotations

import uuid

import grpc
import pytest

from spades.engine import Clock, Rules
from spades.v1 import cards_pb2, lobby_pb2
from tests.support.backends import Storages
from tests.support.clients import Client
from tests.support.refusals import assert_action_refused
from tests.support.servers import log_events, running_server

Code = grpc.StatusCode
#: Turns short enough that the test's player times out soon.
QUICK_CLOCK = Rules(max_hands=1, clock=Clock(turn_millis=300, extension_millis=0))


@pytest.mark.asyncio
async def test_a_players_action_while_a_substitute_plays_the_seat_is_seat_substituted(
    storage: Storages,
) -> None:
    async with (
        running_server(
            storage(), substitute_after_timeouts=1, disconnect_grace=0, shutdown_grace=0.2
        ) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        client = Client(channel)
        table_id = (await client.create_table(QUICK_CLOCK)).table.table_id
        joined = await client.lobby.JoinTable(
            lobby_pb2.JoinTableRequest(
                table_id=table_id, player_name="away", seat=cards_pb2.SEAT_SOUTH
            )
        )
        player = client.seat_stream(joined.seat_token)
        await player.start()
        for seat in (cards_pb2.SEAT_NORTH, cards_pb2.SEAT_EAST, cards_pb2.SEAT_WEST):
            await client.lobby.AddHouseBot(
                lobby_pb2.AddHouseBotRequest(table_id=table_id, seat=seat)
            )
        prompt = (await player.next_of("prompt")).prompt  # the player lets it time out
        while not any(
            m.event.WhichOneof("kind") == "seat_substituted"
            and m.event.seat_substituted.seat == cards_pb2.SEAT_SOUTH
            for m in player.events()
        ):
            await player.next()
        action_id = uuid.uuid4().hex
        result = await player.act(prompt.legal_actions[0], prompt.sequence, action_id)
        assert_action_refused(result, Code.FAILED_PRECONDITION, "SEAT_SUBSTITUTED")
        assert all(event.action_id != action_id for event in await log_events(server, table_id))
        await player.close()
