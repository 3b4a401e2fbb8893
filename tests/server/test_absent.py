"""Absent players: a house bot takes the seat after a run of timeouts or a long disconnection,
and the player takes it back by reconnecting with its own seat token."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import random
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import grpc
import pytest

from spades.engine import Clock, MatchState, Rules
from spades.v1 import cards_pb2, events_pb2, lobby_pb2, play_pb2, record_pb2
from spades_server.app import config
from spades_server.app.server import SpadesServer
from spades_server.processes.house import HouseBot
from tests.support.backends import Storages
from tests.support.clients import Client, WatchStream, stream_error, watch
from tests.support.seats import own_moves, play_until_over
from tests.support.servers import log_entries, log_events, running_server
from tests.support.time import ABSENT_PLAYERS, TURN_CLOCK, ManualClock, wait_for_state

SOUTH = 2
SOUTH_PROTO = cards_pb2.SEAT_SOUTH
#: Turns long enough for a house bot to connect and act, short enough to time out quickly.
QUICK_CLOCK = Rules(max_hands=1, clock=Clock(turn_millis=500, extension_millis=0))


@asynccontextmanager
async def serving(
    storage: Storages, clock: ManualClock | None = None, /, **settings: object
) -> AsyncIterator[tuple[SpadesServer, Client]]:
    async with (
        running_server(storage("absent"), clock, shutdown_grace=0.2, **settings) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        yield server, Client(channel)


async def seat_south_and_house_bots(client: Client, rules: Rules) -> tuple[str, str]:
    """A table with the test's player at South (a person) and house bots everywhere else;
    returns the table id and the player's seat token."""
    table_id = (await client.create_table(rules)).table.table_id
    joined = await client.lobby.JoinTable(
        lobby_pb2.JoinTableRequest(table_id=table_id, player_name="away", seat=SOUTH_PROTO)
    )
    return table_id, joined.seat_token


async def add_house_bots(client: Client, table_id: str) -> None:
    for seat in (cards_pb2.SEAT_NORTH, cards_pb2.SEAT_EAST, cards_pb2.SEAT_WEST):
        await client.lobby.AddHouseBot(lobby_pb2.AddHouseBotRequest(table_id=table_id, seat=seat))


async def substitute_of(server: SpadesServer, table_id: str, seat: int) -> HouseBot:
    for _ in range(200):
        bot = server.house_bots.substitutes.get((table_id, seat))
        if bot is not None:
            return bot
        await asyncio.sleep(0.02)
    raise AssertionError("no substitute started")


def south_acted(event: events_pb2.Event) -> bool:
    kind = event.WhichOneof("kind")
    if kind == "card_played":
        return event.card_played.seat == SOUTH_PROTO
    if kind == "bid_made":
        return event.bid_made.seat == SOUTH_PROTO
    return False


def south_substituted(event: events_pb2.Event) -> bool:
    """South's SeatSubstituted (a house bot slowed past its own turn's time, or slow to connect,
    may be substituted too on a loaded machine: that is not what these tests are about)."""
    return event.WhichOneof("kind") == "seat_substituted" and (
        event.seat_substituted.seat == SOUTH_PROTO
    )


def timed_out(event: events_pb2.Event, seat: int | None = None) -> bool:
    """A TurnTimedOut (of ``seat``, when given)."""
    if event.WhichOneof("kind") != "turn_timed_out":
        return False
    return seat is None or event.turn_timed_out.seat == seat


async def events_until(spectator: WatchStream, done: object, timeout: float = 20) -> None:
    """Read the spectator's stream until ``done(events so far)`` holds."""
    deadline = time.monotonic() + timeout
    while not done(spectator.events()):  # type: ignore[operator]
        await spectator.next(max(0.1, deadline - time.monotonic()))


async def record_of(client: Client, table_id: str) -> record_pb2.GameRecord:
    response = await client.play.GetRecord(play_pb2.GetRecordRequest(table_id=table_id))
    return response.record


def assert_no_digest(digest: bytes, *messages: object, where: str) -> None:
    for message in messages:
        data = message.SerializeToString()  # type: ignore[attr-defined]
        assert digest not in data, f"{where}: the substitute's token digest leaked"


@pytest.mark.asyncio
async def test_timeouts_bring_a_substitute_until_the_player_reconnects(storage: Storages) -> None:
    async with serving(storage, substitute_after_timeouts=2, disconnect_grace=0) as (
        server,
        client,
    ):
        table_id, token = await seat_south_and_house_bots(client, QUICK_CLOCK)
        spectator = watch(client, table_id)
        await spectator.snapshot()
        await add_house_bots(client, table_id)  # South never connects: its turns time out

        def substituted(events: list[events_pb2.Event]) -> bool:
            return any(south_substituted(e) for e in events)

        await events_until(spectator, substituted)
        event = next(e for e in spectator.events() if south_substituted(e))
        assert event.seat_substituted.reason == events_pb2.SUBSTITUTION_REASON_TIMEOUTS
        # A server secret: spades.v1 has no field for it any more.
        assert "substitute_token_sha256" not in event.seat_substituted.DESCRIPTOR.fields_by_name
        # Every turn South had timed out (its player never came), and the substitute came once
        # two had in a row. (The clock acts for any seat: a house bot slowed past its turn's
        # time by a loaded machine times out too, and that is no absence of South's.)
        before = [e for e in spectator.events() if e.sequence < event.sequence]
        south_timeouts = sum(timed_out(e, SOUTH_PROTO) for e in before)
        assert south_timeouts >= 2
        assert sum(south_acted(e) for e in before) == south_timeouts  # each the clock's move
        bot = await substitute_of(server, table_id, SOUTH)
        assert bot.substitute and bot.name == "House Heuristic (for South)"

        # The house bot plays South: two of South's turns go by with its own moves.
        def substitute_moved_twice(events: list[events_pb2.Event]) -> bool:
            moves = own_moves(events).get(SOUTH_PROTO, [])
            return sum(sequence > event.sequence for sequence in moves) >= 2

        await events_until(spectator, substitute_moved_twice)
        snapshot = (await watch(client, table_id).snapshot()).view
        assert SOUTH_PROTO in snapshot.substituted

        # The player comes back with its own token and takes the seat again.
        player = client.seat_stream(token)
        await player.start(after_sequence=event.sequence)
        while not any(
            message.event.WhichOneof("kind") == "seat_reclaimed" for message in player.events()
        ):
            await player.next()
        reclaimed = next(
            m.event for m in player.events() if m.event.WhichOneof("kind") == "seat_reclaimed"
        )
        assert reclaimed.seat_reclaimed.seat == SOUTH_PROTO
        # The substitute's stream ends and its token is refused from now on.
        assert bot.task is not None
        await asyncio.wait([bot.task], timeout=10)
        assert bot.finished and (table_id, SOUTH) not in server.house_bots.substitutes
        refused = await stream_error(
            lambda: client.seat_stream(bot.token).call,
            play_pb2.PlayRequest(start=play_pb2.StartPlay()),
        )
        assert refused.code() == grpc.StatusCode.UNAUTHENTICATED
        # The player's actions work: it plays the match to its end.
        await asyncio.wait_for(play_until_over(player, random.Random(5)), 60)
        await player.close()

        logged = await log_events(server, table_id)
        kinds = [e.WhichOneof("kind") for e in logged]
        assert kinds.count("seat_reclaimed") == 1
        # Each of South's substitutes came after two of its turns had timed out in a row (a
        # player or substitute slowed past the turn's time by a loaded machine may bring another).
        state = MatchState()
        for entry in await log_entries(server, table_id):
            if south_substituted(entry.message):
                assert state.timeout_streaks[SOUTH] >= 2, entry.sequence
            state.evolve(entry.event)
        digest = next(
            entry.secrets.substitute_token_sha256
            for entry in await log_entries(server, table_id)
            if south_substituted(entry.message)
        )
        assert digest == hashlib.sha256(bot.token.encode()).digest()
        # The first hand is marked: South's play was partly automatic (with any other seat the
        # clock acted for in it; a tied match plays on, and only the first hand had South's).
        record = await record_of(client, table_id)
        first_hand = list(
            itertools.takewhile(lambda e: e.WhichOneof("kind") != "hand_scored", logged)
        )
        clock_acted = {e.turn_timed_out.seat for e in first_hand if timed_out(e)}
        scored = [e.hand_scored for e in record.events if e.WhichOneof("kind") == "hand_scored"]
        assert SOUTH_PROTO in clock_acted
        assert set(scored[0].automatic_play) == clock_acted
        # The substitute's digest is in no stream, record or lobby answer.
        table = await client.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id))
        listed = await client.lobby.ListTables(lobby_pb2.ListTablesRequest())
        assert_no_digest(digest, *spectator.received, where="the spectator's stream")
        assert_no_digest(digest, *player.received, where="the player's stream")
        assert_no_digest(digest, record, table, listed, where="the record and the lobby")
        spectator.close()


@pytest.mark.asyncio
async def test_a_connected_player_who_times_out_is_substituted_and_refused(
    storage: Storages,
) -> None:
    async with serving(storage, substitute_after_timeouts=1, disconnect_grace=0) as (
        server,
        client,
    ):
        table_id, token = await seat_south_and_house_bots(client, QUICK_CLOCK)
        player = client.seat_stream(token)
        await player.start()
        await add_house_bots(client, table_id)
        prompt = (await player.next_of("prompt")).prompt  # South lets it time out
        while not any(south_substituted(m.event) for m in player.events()):
            await player.next()
        # No prompt for the player while the substitute plays; its action is refused.
        assert all(
            m.prompt.sequence <= prompt.sequence
            for m in player.received
            if m.WhichOneof("kind") == "prompt"
        )
        now = max(m.event.sequence for m in player.events())
        result = await player.act(prompt.legal_actions[0], now)
        assert not result.accepted
        assert result.code == grpc.StatusCode.FAILED_PRECONDITION.value[0]
        assert "house bot plays this seat" in result.reason
        await substitute_of(server, table_id, SOUTH)
        await player.close()


@pytest.mark.asyncio
async def test_a_long_disconnection_brings_a_substitute(storage: Storages) -> None:
    async with serving(storage, substitute_after_timeouts=0, disconnect_grace=0.4) as (
        server,
        client,
    ):
        table_id, token = await seat_south_and_house_bots(client, Rules(max_hands=1))
        player = client.seat_stream(token)
        await player.start()
        spectator = watch(client, table_id)
        await spectator.snapshot()
        await add_house_bots(client, table_id)
        await player.next_of("prompt")  # the match is on (South bids second at most)
        await player.close()
        left = time.monotonic()

        def substituted(events: list[events_pb2.Event]) -> bool:
            return any(south_substituted(e) for e in events)

        await events_until(spectator, substituted, timeout=10)
        assert time.monotonic() - left >= 0.4
        event = next(e for e in spectator.events() if south_substituted(e))
        assert event.seat_substituted.reason == events_pb2.SUBSTITUTION_REASON_DISCONNECTED
        await substitute_of(server, table_id, SOUTH)

        def south_played(events: list[events_pb2.Event]) -> bool:
            return any(south_acted(e) for e in events if e.sequence > event.sequence)

        await events_until(spectator, south_played)  # the house bot plays South
        back = client.seat_stream(token)
        await back.start(after_sequence=event.sequence)
        while not any(m.event.WhichOneof("kind") == "seat_reclaimed" for m in back.events()):
            await back.next()
        await back.close()
        spectator.close()


@pytest.mark.asyncio
async def test_a_reconnection_within_the_grace_brings_no_substitute(storage: Storages) -> None:
    grace = 60.0
    clock = ManualClock()
    async with serving(storage, clock, substitute_after_timeouts=0, disconnect_grace=grace) as (
        server,
        client,
    ):
        table_id, token = await seat_south_and_house_bots(client, Rules(max_hands=1))
        player = client.seat_stream(token)
        await player.start()
        await add_house_bots(client, table_id)
        await player.next_of("prompt")
        for _ in range(3):  # three drops, each a second shorter than the grace
            await player.close()
            await wait_for_state(
                lambda: not server.absent.connected(table_id, SOUTH), "the server saw the drop"
            )
            await clock.pass_time(grace - 1, ABSENT_PLAYERS)  # a sweep within the grace
            player = client.seat_stream(token)
            await player.start()  # the server sees the new stream before its snapshot comes
        await clock.pass_time(2 * grace, ABSENT_PLAYERS)  # a sweep twice the grace later
        assert not any(map(south_substituted, await log_events(server, table_id)))
        assert (table_id, SOUTH) not in server.house_bots.substitutes
        await player.close()


@pytest.mark.asyncio
async def test_no_substitutes_when_both_are_off(storage: Storages) -> None:
    clock = ManualClock()
    async with serving(storage, clock, substitute_after_timeouts=0, disconnect_grace=0) as (
        server,
        client,
    ):
        turn = 30.0
        rules = Rules(max_hands=1, clock=Clock(turn_millis=int(turn * 1000), extension_millis=0))
        table_id = (await client.create_table(rules)).table.table_id
        await client.seat_all(table_id)
        for _ in range(6):
            await clock.pass_time(turn, TURN_CLOCK)
        kinds = [e.WhichOneof("kind") for e in await log_events(server, table_id)]
        assert kinds.count("turn_timed_out") >= 6 and "seat_substituted" not in kinds


def test_the_flags_and_their_environment_variables() -> None:
    defaults = config.from_args([], environ={})
    assert (defaults.substitute_after_timeouts, defaults.disconnect_grace) == (2, 60.0)
    environ = {"SPADES_SUBSTITUTE_AFTER_TIMEOUTS": "3", "SPADES_DISCONNECT_GRACE": "0.5"}
    from_env = config.from_args([], environ=environ)
    assert (from_env.substitute_after_timeouts, from_env.disconnect_grace) == (3, 0.5)
    flags = ["--substitute-after-timeouts", "0", "--disconnect-grace", "0"]
    off = config.from_args(flags, environ=environ)
    assert (off.substitute_after_timeouts, off.disconnect_grace) == (0, 0.0)
    with pytest.raises(SystemExit):
        config.from_args(["--disconnect-grace", "-1"], environ={})
