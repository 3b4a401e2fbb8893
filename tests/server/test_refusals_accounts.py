"""Refusals of account keys, seats held by accounts, ratings and tournaments that no other test
provoked, over the wire on both log backends: each with its gRPC status, its reason code, and
no event written."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import grpc
import pytest
import pytest_asyncio

from spades import protocol
from spades.engine import Rules
from spades.v1 import (
    account_pb2,
    account_pb2_grpc,
    cards_pb2,
    lobby_pb2,
    play_pb2,
    rating_pb2,
    rating_pb2_grpc,
    tournament_pb2,
    tournament_pb2_grpc,
)
from spades_server.app.server import SpadesServer
from spades_server.domain.tournaments import MAX_ENTRANTS
from tests.support.accounts import bearer, new_account
from tests.support.backends import Storages
from tests.support.clients import Client
from tests.support.refusals import refused_unchanged
from tests.support.seats import bid
from tests.support.servers import running_server

Code = grpc.StatusCode
Metadata = tuple[tuple[str, str], ...]
OPERATOR = "operator token for the account refusal tests"


@pytest_asyncio.fixture
async def operated(storage: Storages) -> AsyncIterator[tuple[SpadesServer, Client]]:
    """A server with an operator token, and a client of it."""
    async with (
        running_server(storage(), operator_token=OPERATOR) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        yield server, Client(channel)


@pytest.mark.asyncio
async def test_account_calls_with_a_malformed_key_or_naming_the_wrong_way_are_refused(
    operated: tuple[SpadesServer, Client],
) -> None:
    server, client = operated
    accounts = account_pb2_grpc.AccountServiceStub(client.channel)
    created = await new_account(client.channel, "Keyed Bot")
    account_id = created.account.account_id
    both = account_pb2.GetAccountRequest(account_id=account_id, name="Keyed Bot")
    await refused_unchanged(
        server, accounts.GetAccount(both), Code.INVALID_ARGUMENT, "ACCOUNT_ID_OR_NAME"
    )
    await refused_unchanged(
        server,
        accounts.GetAccount(account_pb2.GetAccountRequest()),
        Code.INVALID_ARGUMENT,
        "ACCOUNT_ID_OR_NAME",
    )
    await refused_unchanged(
        server,
        accounts.RotateKey(
            account_pb2.RotateKeyRequest(), metadata=(("authorization", f"Basic {created.key}"),)
        ),
        Code.UNAUTHENTICATED,
        "KEY_NOT_BEARER",
    )
    # An account naming an account_id (its own, even) where only the operator may.
    await refused_unchanged(
        server,
        accounts.RotateKey(
            account_pb2.RotateKeyRequest(account_id=account_id), metadata=bearer(created.key)
        ),
        Code.PERMISSION_DENIED,
        "OPERATOR_ONLY",
    )


@pytest.mark.asyncio
async def test_a_rating_pool_no_server_has_is_pool_not_found(
    operated: tuple[SpadesServer, Client],
) -> None:
    server, client = operated
    ratings = rating_pb2_grpc.RatingServiceStub(client.channel)
    await refused_unchanged(
        server,
        ratings.ListLeaderboard(rating_pb2.ListLeaderboardRequest(pool="no such pool")),
        Code.NOT_FOUND,
        "POOL_NOT_FOUND",
    )


@pytest.mark.asyncio
async def test_an_account_key_on_a_seat_call_needs_the_table_and_the_seat_it_holds(
    operated: tuple[SpadesServer, Client],
) -> None:
    server, client = operated
    table_id = (await client.create_table(Rules())).table.table_id
    pair = await new_account(client.channel, "Pair Bot")
    stranger = await new_account(client.channel, "Stranger Bot")
    for seat in (cards_pb2.SEAT_NORTH, cards_pb2.SEAT_SOUTH):
        await client.lobby.JoinTable(
            lobby_pb2.JoinTableRequest(table_id=table_id, seat=seat, player_name="pair"),
            metadata=bearer(pair.key),
        )
    act = play_pb2.ActRequest(
        action=play_pb2.ActionRequest(action_id="an action of an account", action=bid(3))
    )

    def acting(metadata: Metadata) -> object:
        return client.play.Act(act, metadata=metadata)

    await refused_unchanged(
        server, acting(bearer(pair.key)), Code.INVALID_ARGUMENT, "TABLE_ID_REQUIRED"
    )
    await refused_unchanged(
        server, acting(bearer(pair.key, table_id)), Code.INVALID_ARGUMENT, "SEAT_REQUIRED"
    )
    await refused_unchanged(
        server, acting(bearer(stranger.key, table_id)), Code.PERMISSION_DENIED, "SEAT_NOT_HELD"
    )
    await refused_unchanged(
        server,
        acting(bearer(pair.key, table_id, "east")),
        Code.PERMISSION_DENIED,
        "SEAT_NOT_HELD",
    )


@pytest.mark.asyncio
async def test_a_tournament_with_its_sixteen_entrants_is_tournament_full(
    operated: tuple[SpadesServer, Client],
) -> None:
    server, client = operated
    service = tournament_pb2_grpc.TournamentServiceStub(client.channel)
    settings = tournament_pb2.TournamentSettings(
        name="Full Cup",
        format=tournament_pb2.TOURNAMENT_FORMAT_ROUND_ROBIN,
        rules=protocol.rules_to_proto(Rules()),
        boards=1,
    )
    settings.start_time.FromSeconds(int(time.time()) + 86_400)  # tomorrow: it will not start
    created = await service.CreateTournament(
        tournament_pb2.CreateTournamentRequest(settings=settings),
        metadata=(("spades-operator-token", OPERATOR),),
    )
    enter = tournament_pb2.EnterTournamentRequest(tournament_id=created.tournament.tournament_id)
    for number in range(MAX_ENTRANTS):
        entrant = await new_account(client.channel, f"Entrant {number}")
        await service.EnterTournament(enter, metadata=bearer(entrant.key))
    late = await new_account(client.channel, "Late Entrant")
    await refused_unchanged(
        server,
        service.EnterTournament(enter, metadata=bearer(late.key)),
        Code.FAILED_PRECONDITION,
        "TOURNAMENT_FULL",
    )
