"""House bots: a host fills seats, quick match completes itself, and the pool supervises."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
import pytest_asyncio

from spades import protocol
from spades.bot import Backoff, Bot, BotView, play_match
from spades.client import (
    FailedPrecondition,
    PermissionDenied,
    ResourceExhausted,
    SpadesClient,
    SpadesError,
)
from spades.engine import Card, Rules
from spades.engine import events as ev
from spades_bots.heuristic import HeuristicBot
from spades_server.app.server import SpadesServer
from spades_server.processes.house import make_house_bot, own_address
from tests.support.servers import log_entries, running_server

SHORT = Rules(max_hands=2)
asynchronous = pytest.mark.asyncio


@pytest_asyncio.fixture
async def server(tmp_path: Path) -> AsyncIterator[SpadesServer]:
    async with running_server(
        tmp_path / "tables.db", shutdown_grace=0.2, quick_match_fill_after=0.3
    ) as running:
        yield running


@pytest_asyncio.fixture
async def client(server: SpadesServer) -> AsyncIterator[SpadesClient]:
    async with SpadesClient(f"127.0.0.1:{server.port}") as connected:
        yield connected


async def record_events(client: SpadesClient, table_id: str) -> list[ev.Event]:
    record = await client.get_record(table_id)
    return [protocol.event_from_proto(message) for message in record.events]


@asynchronous
async def test_a_host_fills_three_seats_and_plays_to_the_end(client: SpadesClient) -> None:
    created = await client.create_table("house test", SHORT)
    table_id = created.table_id
    added = [
        await client.add_house_bot(table_id, seat="east", kind="heuristic"),
        await client.add_house_bot(table_id, kind="random"),  # any free seat: the first, north
        await client.add_house_bot(table_id, seat="west"),  # the default kind: heuristic
    ]
    assert [(bot.seat, bot.player_name) for bot in added] == [
        (1, "House Heuristic 1"),
        (0, "House Random 1"),
        (3, "House Heuristic 2"),
    ]
    ticket = await client.join_table(table_id, "me", seat="south", bot=False)
    outcome = await asyncio.wait_for(play_match(client, HeuristicBot(), ticket.token), 60)
    assert outcome.end is not None

    table = await client.get_table(table_id)
    assert table.status == "finished"
    assert [(seat.player_name, seat.bot) for seat in table.seats] == [
        ("House Random 1", True),
        ("House Heuristic 1", True),
        ("me", False),
        ("House Heuristic 2", True),
    ]
    events = await record_events(client, table_id)
    seated = {event.seat: event for event in events if isinstance(event, ev.SeatTaken)}
    assert [seated[seat].bot for seat in range(4)] == [True, True, False, True]
    assert any(isinstance(event, ev.MatchEnded) for event in events)
    # Every house seat acted itself: the turn clock never played for anyone.
    assert not any(isinstance(event, ev.TurnTimedOut) for event in events)


@asynchronous
async def test_adding_a_house_bot_follows_the_tables_rules(client: SpadesClient) -> None:
    private = await client.create_table("private", SHORT, private=True)
    with pytest.raises(PermissionDenied, match="join code"):
        await client.add_house_bot(private.table_id)
    bot = await client.add_house_bot(private.table_id, seat=0, join_code=private.join_code)
    assert bot.player_name == "House Heuristic 1"
    with pytest.raises(FailedPrecondition, match="already taken"):
        await client.add_house_bot(private.table_id, seat=0, join_code=private.join_code)
    for _ in range(3):
        await client.add_house_bot(private.table_id, join_code=private.join_code)
    with pytest.raises(FailedPrecondition, match="started"):
        await client.add_house_bot(private.table_id, join_code=private.join_code)
    with pytest.raises(ValueError, match="not a house bot"):
        await client.add_house_bot(private.table_id, kind="genius")


@asynchronous
async def test_a_lone_quick_match_player_gets_three_house_bots(
    server: SpadesServer, client: SpadesClient
) -> None:
    ticket = await client.quick_match("lonely")
    waiting = await client.get_table(ticket.table_id)
    assert waiting.status == "waiting"
    outcome = await asyncio.wait_for(
        play_match(client, HeuristicBot(), ticket.token, table_id=ticket.table_id), 60
    )
    assert outcome.end is not None
    # Nobody is added before the fill delay (0.3 s): by the log's own times, not the test's.
    joined_at = {
        entry.event.seat: entry.recorded_at
        for entry in await log_entries(server, ticket.table_id)
        if isinstance(entry.event, ev.SeatTaken)
    }
    lonely = joined_at.pop(ticket.seat)
    assert len(joined_at) == 3 and min(joined_at.values()) >= lonely + 0.3
    table = await client.get_table(ticket.table_id)
    assert table.status == "finished"
    house = [seat for seat in table.seats if seat.seat != ticket.seat]
    assert all(
        seat.bot and (seat.player_name or "").startswith("House Heuristic") for seat in house
    )
    assert len({seat.player_name for seat in house}) == 3


class FailsOnce(Bot):
    """A heuristic player whose first instance fails on the first bid it sees."""

    instances = 0

    def __init__(self) -> None:
        type(self).instances += 1
        self.first = type(self).instances == 1
        self.inner = HeuristicBot()

    def bid(self, view: BotView) -> int:
        return self.inner.bid(view).answer

    def play(self, view: BotView) -> Card:
        return self.inner.play(view)

    def on_event(self, event: ev.Event, view: BotView) -> None:
        if self.first and isinstance(event, ev.BidMade):
            raise RuntimeError("this house bot crashed")


@asynchronous
async def test_the_pool_restarts_a_house_bot_whose_task_failed(
    server: SpadesServer, client: SpadesClient
) -> None:
    pool = server.house_bots
    FailsOnce.instances = 0
    pool.make_bot = lambda kind: FailsOnce() if kind == "random" else make_house_bot(kind)
    pool.restart_backoff = Backoff(initial=0.05, maximum=0.1)
    created = await client.create_table("restart", SHORT)
    await client.add_house_bot(created.table_id, seat="east", kind="random")
    bot = pool.bots[(created.table_id, 1)]
    for seat in ("south", "west"):
        await client.add_house_bot(created.table_id, seat=seat)
    ticket = await client.join_table(created.table_id, "me", seat="north")
    outcome = await asyncio.wait_for(play_match(client, HeuristicBot(), ticket.token), 60)
    assert outcome.end is not None
    assert bot.restarts == 1 and FailsOnce.instances == 2
    assert bot.task is not None
    await asyncio.wait_for(bot.task, 10)
    assert bot.finished and (created.table_id, 1) not in pool.bots
    events = await record_events(client, created.table_id)
    assert not any(isinstance(event, ev.TurnTimedOut) for event in events)


@asynchronous
async def test_the_pool_is_bounded_and_can_be_off(tmp_path: Path) -> None:
    async with running_server(tmp_path / "one.db", house_bots=1, shutdown_grace=0.2) as server:
        client = SpadesClient(f"127.0.0.1:{server.port}")
        created = await client.create_table("full", SHORT)
        await client.add_house_bot(created.table_id)
        with pytest.raises(ResourceExhausted, match="already runs 1 house bots"):
            await client.add_house_bot(created.table_id)
        await client.close()
        # Stopping the server stops its bots.
    assert not server.house_bots.bots
    async with running_server(tmp_path / "none.db", house_bots=0, shutdown_grace=0.2) as server:
        client = SpadesClient(f"127.0.0.1:{server.port}")
        created = await client.create_table("none", SHORT)
        with pytest.raises(SpadesError) as refused:
            await client.add_house_bot(created.table_id)
        assert refused.value.code is grpc.StatusCode.FAILED_PRECONDITION
        await client.close()


def test_house_bots_reach_the_server_on_its_own_address() -> None:
    assert own_address("0.0.0.0:50051", 50051) == "127.0.0.1:50051"
    assert own_address("[::]:0", 4321) == "127.0.0.1:4321"
    assert own_address("127.0.0.1:0", 4321) == "127.0.0.1:4321"
    assert own_address("10.1.2.3:50051", 50051) == "10.1.2.3:50051"
