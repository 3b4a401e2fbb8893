"""LobbyService.ListGames ("my games") through a real server, on both log backends: every
account's finished matches, newest first, each with its outcome, players and (rated) rating
change; the filters (rated, opponents' kind, one opponent); private tables only for the account
itself; pages and their tokens; bad filters and tokens refused; and the index kept across a
restart and rebuilt for a log from before it."""

from __future__ import annotations

import grpc
import pytest

from spades.client import SpadesClient
from spades.reasons import Reason
from spades.v1 import games_pb2, lobby_pb2_grpc, rating_pb2
from spades_server.app.server import SpadesServer
from spades_server.processes import games as games_index
from tests.support.backends import LogStorage, Storages
from tests.support.games import play_accounts_match
from tests.support.refusals import refused_unchanged
from tests.support.servers import running_server

pytestmark = pytest.mark.asyncio
Code = grpc.StatusCode
SELF, PARTNER, OPPONENT = (
    games_pb2.GAME_RELATION_SELF,
    games_pb2.GAME_RELATION_PARTNER,
    games_pb2.GAME_RELATION_OPPONENT,
)


def address(server: SpadesServer) -> str:
    return f"127.0.0.1:{server.port}"


async def three_matches(server: SpadesServer) -> dict[str, str]:
    """Alpha (a bot) plays a rated match against Beta (a bot), an unrated one against Pat (a
    person, both seats of a side) and a private one against two anonymous players; the keys and
    table ids by name."""
    async with SpadesClient(address(server)) as client:
        alpha = await client.create_account("Alpha", kind="bot")
        beta = await client.create_account("Beta", kind="bot")
        pat = await client.create_account("Pat", kind="person")
    rated = await play_accounts_match(
        server,
        [(alpha.key, "heuristic", "north,south"), (beta.key, "random", "east,west")],
        rated=True,
    )
    people = await play_accounts_match(
        server, [(pat.key, "heuristic", "north,south"), (alpha.key, "heuristic", "east,west")]
    )
    private = await play_accounts_match(
        server,
        [(alpha.key, "heuristic", "north,south"), ("", "random", "east"), ("", "random", "west")],
        private=True,
    )
    return {
        "alpha": alpha.key,
        "alpha_id": alpha.account.account_id,
        "beta_id": beta.account.account_id,
        "pat_id": pat.account.account_id,
        "rated": rated,
        "people": people,
        "private": private,
    }


def ids(response: games_pb2.ListGamesResponse) -> list[str]:
    return [game.table_id for game in response.games]


async def test_an_accounts_games_filtered_paged_and_private_only_to_itself(
    storage: Storages,
) -> None:
    async with running_server(storage("games"), shutdown_grace=0.2) as server:
        made = await three_matches(server)
        async with (
            SpadesClient(address(server)) as anyone,
            SpadesClient(address(server), account_key=made["alpha"]) as alpha,
        ):
            # Anyone sees the listed tables' games, newest first; the account sees its private one.
            assert ids(await anyone.games("Alpha")) == [made["people"], made["rated"]]
            mine = await alpha.games(made["alpha_id"])
            assert ids(mine) == [made["private"], made["people"], made["rated"]]
            assert mine.account_id == made["alpha_id"] and not mine.next_page_token
            private, people, rated = mine.games
            assert private.private and not private.rated
            assert [p.relation for p in private.players] == [SELF, OPPONENT, SELF, OPPONENT]
            assert [p.account_id for p in private.players if p.relation == OPPONENT] == ["", ""]
            # Alpha sat East-West against Pat: its side is the second.
            assert people.side == 1 and [p.relation for p in people.players] == [
                OPPONENT,
                SELF,
                OPPONENT,
                SELF,
            ]
            assert {p.name for p in people.players if p.relation == OPPONENT} == {"Pat"}
            assert not people.HasField("rating_change") and not people.pool
            # The rated game carries Alpha's change from its pool, agreeing with its outcome.
            assert rated.rated and rated.pool == "partnership"
            change = rated.rating_change
            assert change.account_id == made["alpha_id"]
            won = games_pb2.GAME_OUTCOME_WON
            assert (rated.outcome == won) == (change.outcome == rating_pb2.MATCH_OUTCOME_WON)
            assert change.after.matches == 1 and rated.end_time.ToNanoseconds() > 0
            assert rated.end_time.ToNanoseconds() >= rated.create_time.ToNanoseconds()
            # The filters.
            assert ids(await alpha.games("Alpha", rated="rated")) == [made["rated"]]
            assert ids(await alpha.games("Alpha", rated="unrated")) == [
                made["private"],
                made["people"],
            ]
            assert ids(await alpha.games("Alpha", opponents="people")) == [made["people"]]
            assert ids(await alpha.games("Alpha", opponents="bots")) == [
                made["private"],
                made["rated"],
            ]
            assert ids(await anyone.games("Alpha", opponent="beta")) == [made["rated"]]
            assert ids(await anyone.games("Alpha", opponent=made["pat_id"])) == [made["people"]]
            assert ids(await anyone.games("Pat")) == [made["people"]]
            assert ids(await anyone.games("Beta", opponent="Pat")) == []
            # Pages of one, each token going on where the last page ended.
            first = await alpha.games("Alpha", page_size=1)
            second = await alpha.games("Alpha", page_size=1, page_token=first.next_page_token)
            third = await alpha.games("Alpha", page_size=1, page_token=second.next_page_token)
            assert ids(first) + ids(second) + ids(third) == ids(mine)
            rest = await alpha.games("Alpha", page_size=1, page_token=third.next_page_token)
            assert ids(rest) == [] and not rest.next_page_token


async def test_bad_filters_and_tokens_are_refused(server: SpadesServer) -> None:
    async with SpadesClient(address(server)) as client:
        await client.create_account("Alpha", kind="bot")
    stub = lobby_pb2_grpc.LobbyServiceStub(grpc.aio.insecure_channel(address(server)))
    request = games_pb2.ListGamesRequest
    await refused_unchanged(
        server,
        stub.ListGames(request(name="Alpha", rated=7)),  # type: ignore[arg-type]
        Code.INVALID_ARGUMENT,
        Reason.INVALID_GAMES_FILTER,
        "rated",
    )
    await refused_unchanged(
        server,
        stub.ListGames(request(name="Alpha", opponents=5)),  # type: ignore[arg-type]
        Code.INVALID_ARGUMENT,
        Reason.INVALID_GAMES_FILTER,
        "opponents",
    )
    await refused_unchanged(
        server,
        stub.ListGames(request(name="Alpha", opponent="alpha")),
        Code.INVALID_ARGUMENT,
        Reason.INVALID_GAMES_FILTER,
        "opponent",
    )
    await refused_unchanged(
        server,
        stub.ListGames(request(name="Alpha", opponent="Nobody")),
        Code.NOT_FOUND,
        Reason.ACCOUNT_NOT_FOUND,
    )
    await refused_unchanged(
        server,
        stub.ListGames(request(name="Nobody")),
        Code.NOT_FOUND,
        Reason.ACCOUNT_NOT_FOUND,
    )
    await refused_unchanged(
        server,
        stub.ListGames(request(name="Alpha", account_id="x")),
        Code.INVALID_ARGUMENT,
        Reason.ACCOUNT_ID_OR_NAME,
    )
    await refused_unchanged(
        server,
        stub.ListGames(request(name="Alpha", page_token="7.zz")),
        Code.INVALID_ARGUMENT,
        Reason.INVALID_PAGE_TOKEN,
        "page_token",
    )
    await refused_unchanged(
        server,
        stub.ListGames(request(name="Alpha", page_size=101)),
        Code.INVALID_ARGUMENT,
        Reason.INVALID_PAGE_SIZE,
        "page_size",
    )
    # A token of another listing (its digest is not this query's) is not this one's.
    await refused_unchanged(
        server,
        stub.ListGames(
            request(name="Alpha", rated=games_pb2.RATED_FILTER_RATED, page_token="1.00000000")
        ),
        Code.INVALID_ARGUMENT,
        Reason.PAGE_TOKEN_MISMATCH,
        "page_token",
    )


async def test_games_outlive_a_restart_and_a_log_from_before_the_index_is_indexed(
    storage: Storages,
) -> None:
    where: LogStorage = storage("games-restart")
    async with running_server(where, shutdown_grace=0.2) as server:
        made = await three_matches(server)
    # A log from before the index: no rows and no marker (the lobby's checkpoint is there).
    log = where.new_log()
    await log.open()
    try:
        for account in ("alpha_id", "beta_id", "pat_id"):
            await log.drop_projection(games_index.projection_of(made[account]))
        await log.drop_projection(games_index.MARKER)
        assert await log.load_projection("lobby") is not None
    finally:
        await log.close()
    async with (
        running_server(where, shutdown_grace=0.2) as server,
        SpadesClient(address(server), account_key=made["alpha"]) as alpha,
    ):
        listed = ids(await alpha.games("Alpha"))
        assert listed == [made["private"], made["people"], made["rated"]]
        assert ids(await alpha.games("Beta")) == [made["rated"]]
    async with (  # and kept as it is
        running_server(where, shutdown_grace=0.2) as server,
        SpadesClient(address(server)) as anyone,
    ):
        assert ids(await anyone.games("Pat")) == [made["people"]]
