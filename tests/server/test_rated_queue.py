"""The rated queue through a real server (both log backends): the server's house-bot accounts
fill a lone rated player's table after the wait and are rated like anyone, and leaderboards show
them marked; bots and people on shared or separate boards."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from spades.bot import play_match
from spades.client import SpadesClient
from spades.v1 import account_pb2, account_pb2_grpc, rating_pb2, rating_pb2_grpc
from spades_bots.heuristic import HeuristicBot
from spades_server.app.server import SpadesServer
from spades_server.domain import accounts, ratings
from spades_server.processes import house_accounts
from spades_server.store import account_store, codecs, rating_store
from tests.support.backends import Storages
from tests.support.clients import rpc_error
from tests.support.refusals import assert_call_refused, nothing_written
from tests.support.servers import log_head, running_server

pytestmark = pytest.mark.asyncio
Code = grpc.StatusCode


def address(server: SpadesServer) -> str:
    return f"127.0.0.1:{server.port}"


async def rated(server: SpadesServer, table_id: str) -> rating_pb2.MatchRated:
    """The pool's MatchRated of ``table_id``, once the server has rated it."""
    async with asyncio.timeout(30):
        while True:
            await server.ratings.idle()
            pool = await server.pools.load(ratings.PARTNERSHIP)
            if table_id in pool.rated_tables:
                return next(m for m in pool.matches if m.table_id == table_id)
            await asyncio.sleep(0.02)


async def test_a_lone_rated_player_gets_house_accounts_and_everyone_is_rated(
    storage: Storages,
) -> None:
    async with running_server(storage(), shutdown_grace=0.2, rated_fill_after=0.3) as server:
        # The heuristic and the random bot: a quick match (the search bot thinks 100 ms a card).
        server.house_bots.rated_kinds = ("heuristic", "random")
        assert server.house_bots.house_accounts == {}  # made when first needed
        async with SpadesClient(address(server)) as sdk:
            key = (await sdk.create_account("Lonely Rated", kind="person")).key
        async with SpadesClient(address(server), account_key=key) as player:
            ticket = await player.quick_match("x", rated=True)
            assert (await player.get_table(ticket.table_id)).status == "waiting"
            outcome = await asyncio.wait_for(
                play_match(player, HeuristicBot(), ticket.token, table_id=ticket.table_id), 90
            )
            assert outcome.end is not None
            table = await player.get_table(ticket.table_id)
            match = await rated(server, ticket.table_id)
            board = await player.leaderboard("partnership")
        # North is the player; its partner is House Heuristic, both opponents House Random.
        assert ticket.seat == 0
        assert [seat.player_name for seat in table.seats] == [
            "Lonely Rated",
            "House Random",
            "House Heuristic",
            "House Random",
        ]
        assert all(seat.bot for seat in table.seats[1:]) and not table.seats[0].bot
        changed = {change.account_id: change for change in match.changes}
        expected = {accounts.account_id_for(name) for name in ("House Heuristic", "House Random")}
        assert set(changed) == expected | {accounts.account_id_for("Lonely Rated")}
        assert all(change.after.matches == 1 for change in changed.values())
        assert all(change.after.mu != change.before.mu for change in changed.values())
        lines = {line.name: line for line in board.lines}
        assert set(lines) == {"Lonely Rated", "House Heuristic", "House Random"}
        assert lines["House Heuristic"].house and lines["House Random"].house
        assert not lines["Lonely Rated"].house and not lines["Lonely Rated"].bot
        assert all(line.rating.provisional for line in board.lines)
        house = server.house_bots.house_accounts
        assert {kind: account.name for kind, account in house.items()} == house_accounts.NAMES
        assert all(account.house and account.bot for account in house.values())
    # Started again: the house accounts are found, not made twice (nor refused as taken).
    async with running_server(storage(), rated_fill_after=0.3) as again:
        found = await again.house_bots.ensure_house_accounts()
        assert {account.account_id for account in found.values()} == {
            account.account_id for account in house.values()
        }
        for account in found.values():
            rows = await again.log.read(account_store.stream_of(account.account_id))
            created = [
                r for r in rows if codecs.decode_account(r).message.HasField("account_created")
            ]
            assert len(created) == 1


async def test_house_names_are_the_servers_and_a_squatted_name_is_not_the_houses(
    storage: Storages,
) -> None:
    database = storage()
    async with running_server(database, rated_fill_after=0) as server:
        assert server.house_bots.make_house_accounts is None  # no rated filling: no house accounts
        async with grpc.aio.insecure_channel(address(server)) as channel:
            service = account_pb2_grpc.AccountServiceStub(channel)
            head = await log_head(server)
            for name in ("House Heuristic", "house search", "HOUSE of cards"):
                async with nothing_written(server):
                    error = await rpc_error(service.CreateAccount(creation(name)))
                    assert_call_refused(error, Code.INVALID_ARGUMENT, "NAME_RESERVED", "name")
            assert await log_head(server) == head
            assert (await service.CreateAccount(creation("Housebound"))).account.name
        # An account of a house name made before the name was reserved (straight into the log).
        made = await server.accounts.create("House Search", account_pb2.ACCOUNT_KIND_PERSON)
        assert not made[0].house
    async with running_server(database, rated_fill_after=5) as server:
        house = await server.house_bots.ensure_house_accounts()
        assert "search" not in house  # a person's account is never taken for the house's
        assert house["heuristic"].house and house["random"].house


def creation(name: str) -> account_pb2.CreateAccountRequest:
    return account_pb2.CreateAccountRequest(name=name, kind=account_pb2.ACCOUNT_KIND_BOT)


async def give_ratings(
    storage: Storages, mus: dict[str, float], people: frozenset[str] = frozenset()
) -> dict[str, str]:
    """Accounts named as ``mus``'s keys (bots, but ``people``), each rated in the partnership
    pool at its mu with sigma 4 (a rated match in the pool's stream, as a server would have
    appended it); their keys, by name."""
    database = storage()
    async with (
        running_server(database, rated_fill_after=0) as server,
        SpadesClient(address(server)) as sdk,
    ):
        keys = {
            name: (await sdk.create_account(name, kind="person" if name in people else "bot")).key
            for name in mus
        }
    match = rating_pb2.MatchRated(table_id="cd" * 10, pool=ratings.PARTNERSHIP)
    for name, mu in mus.items():
        after = ratings.Standing(mu, 4.0, 1).to_proto()
        before = ratings.Standing().to_proto()
        match.changes.add(account_id=accounts.account_id_for(name), before=before, after=after)
    log = database.new_log()
    await log.open()
    try:
        await log.append(
            rating_store.stream_of(ratings.PARTNERSHIP), 0, [codecs.encode_pool(match)]
        )
    finally:
        await log.close()
    return keys


async def test_the_rated_queue_seats_a_player_at_the_table_nearest_its_rating(
    storage: Storages,
) -> None:
    mus = {"Strong": 38.0, "Weak": 10.0, "Middling": 24.0, "Strong Too": 36.0, "Near Middle": 22.5}
    keys = await give_ratings(storage, mus)
    async with running_server(storage(), rated_fill_after=0) as server:
        pool = await server.pools.load(ratings.PARTNERSHIP)
        assert pool.standing(accounts.account_id_for("Strong")).mu == 38.0
        tables: dict[str, str] = {}
        for name in ("Strong", "Weak", "Middling", "Strong Too", "Near Middle"):
            async with SpadesClient(address(server), account_key=keys[name]) as player:
                tables[name] = (await player.quick_match("x", rated=True)).table_id
        # Strong, Weak and Middling are too far apart for the window (5 mu, widening 0.25 a
        # second a table waits): a table each. Strong Too (36) is 2 from Strong's table (38) and
        # 12 from Middling's; Near Middle (22.5) is 1.5 from Middling's, 12.5 from Weak's.
        assert len({tables["Strong"], tables["Weak"], tables["Middling"]}) == 3
        assert tables["Strong Too"] == tables["Strong"]
        assert tables["Near Middle"] == tables["Middling"]
        # A newcomer (25) is nearest Middling's table (mean 23.25), not the strong one (37).
        async with SpadesClient(address(server)) as sdk:
            newcomer = (await sdk.create_account("Newcomer", kind="bot")).key
        async with SpadesClient(address(server), account_key=newcomer) as player:
            assert (await player.quick_match("x", rated=True)).table_id == tables["Middling"]


async def test_boards_are_shared_or_separate_by_kind_as_the_operator_sets(
    storage: Storages,
) -> None:
    mus = {"Bot A": 30.0, "Person B": 28.0, "Bot C": 20.0, "Person D": 35.0}
    await give_ratings(storage, mus, people=frozenset({"Person B", "Person D"}))

    def lines(page: Any) -> list[tuple[int, str]]:
        return [(line.rank, line.name) for line in page.lines]

    async with (
        running_server(storage(), rated_fill_after=0) as server,
        SpadesClient(address(server)) as sdk,
    ):
        shared = await sdk.leaderboard("partnership")
        assert lines(shared) == [(1, "Person D"), (2, "Bot A"), (3, "Person B"), (4, "Bot C")]
        assert not shared.separate_boards and all(line.rating.provisional for line in shared.lines)
        # A kind keeps its lines of the shared board, with their ranks there.
        bots = await sdk.leaderboard("partnership", kind="bot")
        assert lines(bots) == [(2, "Bot A"), (4, "Bot C")]
        people = await sdk.leaderboard("partnership", kind="person")
        assert lines(people) == [(1, "Person D"), (3, "Person B")]
    async with (
        running_server(storage(), rated_fill_after=0, leaderboards="separate") as server,
        SpadesClient(address(server)) as sdk,
        grpc.aio.insecure_channel(address(server)) as channel,
    ):
        bots = await sdk.leaderboard("partnership", kind="bot")
        assert bots.separate_boards and lines(bots) == [(1, "Bot A"), (2, "Bot C")]
        people = await sdk.leaderboard("partnership", kind="person", page_size=1)
        assert lines(people) == [(1, "Person D")] and people.next_page_token
        rest = await sdk.leaderboard(
            "partnership", kind="person", page_token=people.next_page_token
        )
        assert lines(rest) == [(2, "Person B")]
        service = rating_pb2_grpc.RatingServiceStub(channel)
        async with nothing_written(server):
            error = await rpc_error(
                service.ListLeaderboard(rating_pb2.ListLeaderboardRequest(pool="partnership"))
            )
            assert_call_refused(error, Code.INVALID_ARGUMENT, "LEADERBOARD_KIND_REQUIRED", "kind")
        async with nothing_written(server):
            error = await rpc_error(
                service.ListLeaderboard(
                    rating_pb2.ListLeaderboardRequest(pool="partnership", kind=7)  # type: ignore[arg-type]
                )
            )
            assert_call_refused(error, Code.INVALID_ARGUMENT, "UNKNOWN_ACCOUNT_KIND", "kind")


async def test_the_fill_plan_gives_each_side_one_house_account_of_no_other_side() -> None:
    names = house_accounts.NAMES
    house = {kind: accounts.account_id_for(name) for kind, name in names.items()}
    sides = [(0, 2), (1, 3)]
    kinds = ["heuristic", "search", "random"]
    # Two players of one side: both opponents' seats go to the first house account.
    assert house_accounts.fill_plan(["a", "", "b", ""], sides, kinds, names) == [
        (1, "heuristic"),
        (3, "heuristic"),
    ]
    # A side half filled by a house account keeps it; the other side gets the next one.
    seats = ["a", house["heuristic"], "", ""]
    assert house_accounts.fill_plan(seats, sides, kinds, names) == [
        (2, "search"),
        (3, "heuristic"),
    ]
    # With one house account only, and it on the other side, a side is left for later.
    assert house_accounts.fill_plan(seats, sides, ["heuristic"], names) == [(3, "heuristic")]
    # Cutthroat: every seat is a side, each its own house account.
    assert house_accounts.fill_plan(["a", "", ""], [(0,), (1,), (2,)], kinds, names) == [
        (1, "heuristic"),
        (2, "search"),
    ]
