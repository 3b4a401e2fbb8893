"""Rated play through a real server (both log backends): rated tables seat only accounts, each
rated match is rated once in its pool, ratings separate a strong bot from a weak one, an absent
player's substitution is its loss alone, and the account stream tells each rating change."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import grpc
import pytest

from spades.bot import play_match
from spades.client import SpadesClient
from spades.engine import Clock, Rules
from spades.v1 import cards_pb2, lobby_pb2, rating_pb2, rating_pb2_grpc
from spades_bots.registry import bot_class
from spades_server.app.server import SpadesServer
from spades_server.domain import ratings
from spades_server.eventlog.base import StoredEvent
from spades_server.store import codecs, rating_store
from tests.support.accounts import play_rated_match
from tests.support.backends import Storages
from tests.support.clients import Client, rpc_error
from tests.support.servers import log_head, running_server

pytestmark = pytest.mark.asyncio
Code = grpc.StatusCode
#: Short matches: two hands (the pool ignores the match's length and clock).
SHORT = Rules(max_hands=2)
RATED_MATCHES = 24


@asynccontextmanager
async def serving(storage: Storages, **settings: object) -> AsyncIterator[SpadesServer]:
    async with running_server(storage("rated"), shutdown_grace=0.2, **settings) as server:
        yield server


def address(server: SpadesServer) -> str:
    return f"127.0.0.1:{server.port}"


def change_of(match: rating_pb2.MatchRated, account_id: str) -> rating_pb2.RatingChange:
    (change,) = [change for change in match.changes if change.account_id == account_id]
    return change


async def test_over_rated_matches_heuristic_ends_above_random(storage: Storages) -> None:
    async with serving(storage) as server, SpadesClient(address(server)) as client:
        strong = await client.create_account("Heuristic Pair", kind="bot")
        weak = await client.create_account("Random Pair", kind="bot")
        for number in range(RATED_MATCHES):
            # Each bot plays both seats of its side (one entrant); the sides swap each match.
            north_south, east_west = (strong, weak) if number % 2 == 0 else (weak, strong)
            await play_rated_match(
                server,
                {
                    north_south.key: (
                        "heuristic" if north_south is strong else "random",
                        "north,south",
                    ),
                    east_west.key: ("heuristic" if east_west is strong else "random", "east,west"),
                },
            )
        board = await client.leaderboard("partnership")
        assert [line.name for line in board.lines] == ["Heuristic Pair", "Random Pair"]
        best, worst = board.lines
        assert best.rating.matches == worst.rating.matches == RATED_MATCHES
        assert not best.rating.provisional and best.bot
        assert best.rating.score > worst.rating.score
        # The history is paged, newest first, and the account stream told every change.
        stub = rating_pb2_grpc.RatingServiceStub(grpc.aio.insecure_channel(address(server)))
        page = await stub.GetRatings(
            rating_pb2.GetRatingsRequest(account_id=strong.account.account_id, page_size=10)
        )
        assert len(page.history) == 10 and page.next_page_token == "10"
        times = [match.time.ToNanoseconds() for match in page.history]
        assert times == sorted(times, reverse=True)
        history = list(page.history)
        while page.next_page_token:
            page = await stub.GetRatings(
                rating_pb2.GetRatingsRequest(
                    account_id=strong.account.account_id,
                    page_size=10,
                    page_token=page.next_page_token,
                )
            )
            history += page.history
        assert len(history) == RATED_MATCHES
        # Each match moved the strong bot's mu the way its result says (random wins a short
        # match now and then, so how far apart the two end is luck; the direction is not), and
        # it won most of them.
        outcomes = []
        strong_id = strong.account.account_id
        for match in history:
            change = change_of(match, strong_id)
            outcomes.append(change.outcome)
            if change.outcome == rating_pb2.MATCH_OUTCOME_WON:
                assert change.after.mu > change.before.mu, change
            else:
                assert change.outcome == rating_pb2.MATCH_OUTCOME_LOST, change
                assert change.after.mu < change.before.mu, change
        assert outcomes.count(rating_pb2.MATCH_OUTCOME_WON) > RATED_MATCHES // 2, outcomes
        assert change_of(history[0], strong_id).after.mu == best.rating.mu
        seen = []
        async with SpadesClient(address(server), account_key=strong.key) as account:
            async with asyncio.timeout(20):
                async for event in account.connect():
                    if event.WhichOneof("kind") == "rating_changed":
                        seen.append(event.rating_changed.match.table_id)
                    if len(seen) == RATED_MATCHES:
                        break
        assert len(set(seen)) == RATED_MATCHES


async def test_a_cutthroat_match_rates_three_players_in_its_own_pool(storage: Storages) -> None:
    async with serving(storage) as server, SpadesClient(address(server)) as client:
        keys = [(await client.create_account(f"Cut {n}", kind="bot")).key for n in range(3)]
        async with SpadesClient(address(server)) as lobby:
            rules = Rules(players=3, max_hands=1)
            table_id = (await lobby.create_table("cutthroat", rules, rated=True)).table_id
        players = [SpadesClient(address(server), account_key=key) for key in keys]
        try:
            tickets = [await player.join_table(table_id, "x") for player in players]
            async with asyncio.timeout(60):
                outcomes = await asyncio.gather(
                    *(
                        play_match(player, bot_class("random")(), ticket.token)
                        for player, ticket in zip(players, tickets, strict=True)
                    )
                )
                while True:
                    await server.ratings.idle()
                    pool = await server.pools.load(ratings.CUTTHROAT)
                    if table_id in pool.rated_tables:
                        break
                    await asyncio.sleep(0.02)
        finally:
            for player in players:
                await player.close()
        assert (await server.pools.load(ratings.PARTNERSHIP)).matches == []
        (match,) = pool.matches
        assert len(match.changes) == 3 and match.pool == "cutthroat"
        won = {o.seat for o in outcomes if o.won}
        for change, ticket in zip(match.changes, tickets, strict=True):
            expected = (
                rating_pb2.MATCH_OUTCOME_WON
                if ticket.seat in won
                else rating_pb2.MATCH_OUTCOME_LOST
            )
            assert change.outcome == expected and change.after.matches == 1
        board = await client.leaderboard("cutthroat")
        assert len(board.lines) == 3 and all(line.rating.provisional for line in board.lines)


async def test_a_substituted_player_alone_takes_a_loss(storage: Storages) -> None:
    quick = Rules(max_hands=1, clock=Clock(turn_millis=300, extension_millis=0))
    async with (
        serving(storage, substitute_after_timeouts=2, disconnect_grace=0) as server,
        SpadesClient(address(server)) as client,
    ):
        keys = {
            name: (await client.create_account(name, kind="bot")).key
            for name in ("North", "East", "Away", "West")
        }
        table_id = (await client.create_table("rated", quick, rated=True)).table_id
        plays = []
        clients = []
        for name, seat in (
            ("North", "north"),
            ("East", "east"),
            ("Away", "south"),
            ("West", "west"),
        ):
            player = SpadesClient(address(server), account_key=keys[name])
            clients.append(player)
            ticket = await player.join_table(table_id, name, seat=seat)
            if name != "Away":  # South never connects: two timeouts, then a house bot
                plays.append(play_match(player, bot_class("random")(), ticket.token))
        try:
            async with asyncio.timeout(90):
                await asyncio.gather(*plays)
                while True:
                    await server.ratings.idle()
                    pool = await server.pools.load(ratings.PARTNERSHIP)
                    if table_id in pool.rated_tables:
                        break
                    await asyncio.sleep(0.02)
        finally:
            for player in clients:
                await player.close()
        match = next(m for m in pool.matches if m.table_id == table_id)
        outcomes = {
            (await client.get_account(change.account_id)).name: change for change in match.changes
        }
        away = outcomes.pop("Away")
        assert away.outcome == rating_pb2.MATCH_OUTCOME_SUBSTITUTED
        assert away.after.mu < away.before.mu and away.after.matches == 1
        for change in outcomes.values():  # its partner and the opponents: nothing changes
            assert change.outcome == rating_pb2.MATCH_OUTCOME_NOT_RATED
            assert change.after == change.before and change.after.matches == 0
        # The server restarted: the match is not rated again.
        version = pool.version
    async with serving(storage, substitute_after_timeouts=2, disconnect_grace=0) as server:
        assert (await server.pools.load(ratings.PARTNERSHIP)).version == version


async def test_rated_tables_refuse_what_is_not_an_accounts_and_change_nothing(
    server: SpadesServer, client: Client
) -> None:
    head = await log_head(server)
    error = await rpc_error(
        client.create_table(Rules(jokers=True), rated=True)  # no pool rates jokers
    )
    assert error.code() == Code.FAILED_PRECONDITION and "rating pool" in (error.details() or "")
    error = await rpc_error(
        client.lobby.QuickMatch(lobby_pb2.QuickMatchRequest(player_name="anon", rated=True))
    )
    assert error.code() == Code.PERMISSION_DENIED
    assert await log_head(server) == head
    table = (await client.create_table(rated=True)).table
    assert table.rated
    head = await log_head(server)
    error = await rpc_error(
        client.lobby.JoinTable(
            lobby_pb2.JoinTableRequest(table_id=table.table_id, player_name="anon", bot=True)
        )
    )
    assert error.code() == Code.PERMISSION_DENIED and "only accounts" in (error.details() or "")
    # One account may hold both seats of a side, never a seat of each side.
    async with SpadesClient(f"127.0.0.1:{server.port}") as sdk:
        key = (await sdk.create_account("Both Sides", kind="bot")).key
    head = await log_head(server)
    async with SpadesClient(f"127.0.0.1:{server.port}", account_key=key) as player:
        await player.join_table(table.table_id, "x", seat="north")
        await player.join_table(table.table_id, "x", seat="south")
        try:
            await player.join_table(table.table_id, "x", seat="east")
        except Exception as refused:
            assert "one side only" in str(refused)
        else:
            raise AssertionError("an account sat on both sides of a rated table")
    listed = (await client.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table.table_id))).table
    assert [seat.occupied for seat in listed.seats] == [True, False, True, False]
    assert await log_head(server) > head


async def test_the_rated_queue_seats_accounts_and_tells_their_stream(
    server: SpadesServer, client: Client
) -> None:
    async with SpadesClient(f"127.0.0.1:{server.port}") as sdk:
        key = (await sdk.create_account("Queued", kind="person")).key
    async with SpadesClient(f"127.0.0.1:{server.port}", account_key=key) as player:
        ticket = await player.quick_match("x", rated=True)
        async with SpadesClient(f"127.0.0.1:{server.port}") as anonymous:
            unrated = await anonymous.quick_match("anon")
        assert unrated.table_id != ticket.table_id  # the two queues are apart
        table = await player.get_table(ticket.table_id)
        assert table.message.rated and table.seats[ticket.seat].player_name == "Queued"
        assert not table.seats[ticket.seat].bot
        events = []
        async with asyncio.timeout(10):
            async for event in player.connect():
                events.append(event)
                if event.WhichOneof("kind") == "table_assigned":
                    break
        assigned = events[-1].table_assigned
        assert assigned.table_id == ticket.table_id and assigned.rated
        assert list(assigned.seats) == [cards_pb2.SEAT_NORTH + ticket.seat]
        # Resumed after the assignment: nothing is sent again.
        resumed = player.connect(after_sequence=events[-1].sequence)
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.5):
                await anext(resumed)
        await resumed.aclose()


async def test_a_newer_connect_stream_closes_the_older(
    server: SpadesServer, client: Client
) -> None:
    async with SpadesClient(f"127.0.0.1:{server.port}") as sdk:
        key = (await sdk.create_account("Twice", kind="bot")).key
    async with (
        SpadesClient(f"127.0.0.1:{server.port}", account_key=key) as first,
        SpadesClient(f"127.0.0.1:{server.port}", account_key=key) as second,
    ):
        older = first.connect()
        assert (await anext(older)).WhichOneof("kind") == "account_created"
        newer = second.connect()
        assert (await anext(newer)).WhichOneof("kind") == "account_created"
        with pytest.raises(Exception, match="newer Connect stream"):
            async with asyncio.timeout(10):
                while True:
                    await anext(older)
        await newer.aclose()


async def test_pools_and_the_model_rate_sides_and_absences() -> None:
    assert ratings.pool_of(Rules(max_hands=3, clock=Clock(turn_millis=100))) == "partnership"
    assert ratings.pool_of(Rules(players=3, max_hands=3)) == "cutthroat"
    assert ratings.pool_of(Rules(blind_nil=True)) is None
    pool = ratings.Pool("partnership")
    # A bot on both seats of a side is one entrant: three changes for four seats.
    result = ratings.MatchResult("t1", "partnership", [["bot"], ["e", "w"]], [0, 1])
    match = ratings.rate(pool, result)
    assert [change.account_id for change in match.changes] == ["bot", "e", "w"]
    assert match.changes[0].after.mu > match.changes[0].before.mu
    assert all(change.after.mu < change.before.mu for change in match.changes[1:])
    # Substitution, both ways: on the winning side and on the losing side it is a loss for the
    # substituted player alone; its partner and the opponents do not move.
    for ranks in ([0, 1], [1, 0]):
        absent = ratings.MatchResult(
            "t2", "partnership", [["n", "s"], ["e", "w"]], ranks, frozenset({"s"})
        )
        changes = {c.account_id: c for c in ratings.rate(pool, absent).changes}
        assert changes["s"].outcome == rating_pb2.MATCH_OUTCOME_SUBSTITUTED
        assert changes["s"].after.mu < changes["s"].before.mu
        for other in ("n", "e", "w"):
            assert changes[other].outcome == rating_pb2.MATCH_OUTCOME_NOT_RATED
            assert changes[other].after == changes[other].before
    # The pools are a fold of the results: recomputing gives the same ratings.
    results = [result, ratings.MatchResult("t3", "partnership", [["e", "w"], ["bot"]], [0, 1])]
    recomputed = ratings.recompute(results)["partnership"]
    folded = ratings.Pool("partnership")
    for number, each in enumerate(results, start=1):
        folded.fold(number, ratings.rate(folded, each))
    assert recomputed.standings == folded.standings
    board = recomputed.leaderboard()
    scores = [standing.mu - 3 * standing.sigma for _, standing in board]
    assert {account for account, _ in board} == {"bot", "e", "w"}
    assert scores == sorted(scores, reverse=True)


async def test_accounts_are_told_of_a_match_rated_just_before_a_kill(storage: Storages) -> None:
    async with serving(storage) as server, SpadesClient(address(server)) as client:
        winner = (await client.create_account("Told Winner", kind="bot")).account.account_id
        loser = (await client.create_account("Told Loser", kind="bot")).account.account_id
    # What a server killed between the pool's append and the accounts' left behind.
    result = ratings.MatchResult("ab" * 10, ratings.PARTNERSHIP, [[winner], [loser]], [0, 1])
    log = storage("rated").new_log()
    await log.open()
    try:
        match = ratings.rate(ratings.Pool(ratings.PARTNERSHIP), result)
        await log.append(
            rating_store.stream_of(ratings.PARTNERSHIP), 0, [codecs.encode_pool(match)]
        )
    finally:
        await log.close()
    for _ in range(2):  # told once, however often the server starts
        async with serving(storage) as server:
            for account_id in (winner, loser):
                rows = await server.log.read(f"account-{account_id}")
                told = [row for row in rows if rated_table_of(row) == "ab" * 10]
                assert len(told) == 1


def rated_table_of(row: StoredEvent) -> str:
    """The table an account's row says was rated, or ""."""
    message = codecs.decode_account(row).message
    return message.rating_changed.match.table_id if message.HasField("rating_changed") else ""
