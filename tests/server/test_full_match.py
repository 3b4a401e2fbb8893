"""Whole matches played by four real clients through their streams."""

from __future__ import annotations

import asyncio
import random

import pytest

from spades import protocol
from spades.engine import MatchState, Rules
from spades.v1 import lobby_pb2, play_pb2
from spades_server.app.server import SpadesServer
from tests.support.clients import Client
from tests.support.seats import play_until_over
from tests.support.servers import lobby_caught_up

RULE_SETS = [
    Rules(max_hands=2),
    Rules(players=3, jokers=True, max_hands=2),
    Rules(blind_nil=True, blind_nil_deficit=0, blind_nil_pass_cards=2, max_hands=2),
]


@pytest.mark.asyncio
@pytest.mark.parametrize("rules", RULE_SETS, ids=["default", "cutthroat-jokers", "blind-nil-pass"])
async def test_four_clients_play_a_whole_match(
    client: Client, server: SpadesServer, rules: Rules
) -> None:
    created = await client.create_table(rules)
    table_id = created.table.table_id
    tokens = await client.seat_all(table_id, rules.players)
    streams = [client.seat_stream(token) for token in tokens]
    for stream in streams:
        await stream.start()
    rng = random.Random(7)
    await asyncio.gather(*(play_until_over(stream, rng) for stream in streams))

    record = (await client.play.GetRecord(play_pb2.GetRecordRequest(table_id=table_id))).record
    assert record.seed, "the finished match's record reveals the seed"
    replayed = MatchState.from_events(protocol.event_from_proto(event) for event in record.events)
    assert replayed.is_over
    await lobby_caught_up(server, [table_id])
    table = (await client.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id))).table
    assert table.status == lobby_pb2.TABLE_STATUS_FINISHED
    assert list(table.scores) == replayed.scores
    for stream in streams:
        scored = [
            m.event.hand_scored
            for m in stream.events()
            if m.event.WhichOneof("kind") == "hand_scored"
        ]
        assert [side.total_score for side in scored[-1].sides] == replayed.scores
        await stream.close()
