"""The search bot as a house bot: a host seats one by its kind and it plays a match through."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from spades import protocol
from spades.bot import play_match
from spades.client import HOUSE_BOT_KINDS, SpadesClient
from spades.engine import Rules
from spades.engine import events as ev
from spades.wire import house_bot_kind
from spades_bots.heuristic import HeuristicBot
from spades_bots.search import SearchBot
from spades_server.processes.house import make_house_bot
from tests.support.servers import running_server


def test_search_is_a_house_bot_kind() -> None:
    assert house_bot_kind(HOUSE_BOT_KINDS["search"]) == "search"
    assert isinstance(make_house_bot("search"), SearchBot)


@pytest.mark.asyncio
async def test_a_search_house_bot_plays_a_match_through(tmp_path: Path) -> None:
    async with (
        running_server(tmp_path / "tables.db", shutdown_grace=0.2) as server,
        SpadesClient(f"127.0.0.1:{server.port}") as client,
    ):
        created = await client.create_table("search house", Rules(max_hands=1))
        added = await client.add_house_bot(created.table_id, seat="east", kind="search")
        assert added.player_name == "House Search 1"
        for seat in ("south", "west"):
            await client.add_house_bot(created.table_id, seat=seat, kind="heuristic")
        ticket = await client.join_table(created.table_id, "me", seat="north", bot=True)
        outcome = await asyncio.wait_for(play_match(client, HeuristicBot(), ticket.token), 90)
        assert outcome.end is not None
        record = await client.get_record(created.table_id)
    events = [protocol.event_from_proto(message) for message in record.events]
    assert not any(isinstance(event, ev.TurnTimedOut) for event in events)
    # East played its 13 cards each hand itself: one hand, or more when the match was tied
    # after it (the rules play on to a clear leader).
    hands = sum(isinstance(e, ev.HandScored) for e in events)
    assert hands >= 1
    assert sum(isinstance(e, ev.CardPlayed) and e.seat == 1 for e in events) == 13 * hands
