"""The lobby's and the operator's refusals that no other test provoked, over the wire on both
log backends: each with its gRPC status, its reason code, and no event written."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import grpc
import pytest

from spades import protocol
from spades.engine import Rules
from spades.v1 import admin_pb2, admin_pb2_grpc, cards_pb2, events_pb2, lobby_pb2
from spades_server.api.admin import MAX_DEALS
from spades_server.app.server import SpadesServer
from tests.support.backends import LogStorage, Storages
from tests.support.clients import Client
from tests.support.refusals import refused_unchanged
from tests.support.servers import running_server

Code = grpc.StatusCode
OPERATOR = "operator token for the refusal tests"
OPERATOR_KEY = "spades-operator-token"


@asynccontextmanager
async def serving(
    storage: LogStorage, **settings: object
) -> AsyncIterator[tuple[SpadesServer, grpc.aio.Channel]]:
    """A server on ``storage`` with ``settings``, and a channel to it."""
    async with (
        running_server(storage, **settings) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        yield server, channel


def request_id() -> str:
    return uuid.uuid4().hex


@pytest.mark.asyncio
async def test_admin_calls_without_a_configured_operator_token_are_admin_disabled(
    storage: Storages,
) -> None:
    async with serving(storage()) as (server, channel):
        admin = admin_pb2_grpc.AdminServiceStub(channel)
        call = admin.CloseTable(
            admin_pb2.CloseTableRequest(table_id="t"),
            metadata=((OPERATOR_KEY, "anything"),),
        )
        await refused_unchanged(server, call, Code.PERMISSION_DENIED, "ADMIN_DISABLED")


@pytest.mark.asyncio
async def test_preset_deals_and_seeds_that_cannot_be_dealt_are_refused(storage: Storages) -> None:
    async with serving(storage(), operator_token=OPERATOR) as (server, channel):
        admin = admin_pb2_grpc.AdminServiceStub(channel)
        operator = ((OPERATOR_KEY, OPERATOR),)
        rules = protocol.rules_to_proto(Rules())

        def create(**fields: object) -> object:
            request = admin_pb2.CreateTableWithDealsRequest(name="t", rules=rules, **fields)  # type: ignore[arg-type]
            return admin.CreateTableWithDeals(request, metadata=operator)

        await refused_unchanged(
            server, create(seed=b"\x01" * 31), Code.INVALID_ARGUMENT, "INVALID_SEED", "seed"
        )
        too_many = [events_pb2.Deal() for _ in range(MAX_DEALS + 1)]
        await refused_unchanged(
            server, create(deals=too_many), Code.INVALID_ARGUMENT, "TOO_MANY_DEALS", "deals"
        )
        # A deal whose hands hold a card twice is no deal of the deck.
        same_card = [cards_pb2.Card(rank=cards_pb2.RANK_ACE, suit=cards_pb2.SUIT_SPADES)] * 13
        one_deal = events_pb2.Deal(hands=[events_pb2.DealtHand(cards=same_card)] * 4)
        await refused_unchanged(
            server, create(deals=[one_deal]), Code.INVALID_ARGUMENT, "INVALID_DEALS", "deals"
        )


@pytest.mark.asyncio
async def test_a_page_size_or_token_out_of_range_is_refused(
    client: Client, server: SpadesServer
) -> None:
    await client.create_table(Rules())
    await refused_unchanged(
        server,
        client.lobby.ListTables(lobby_pb2.ListTablesRequest(page_size=100_000)),
        Code.INVALID_ARGUMENT,
        "INVALID_PAGE_SIZE",
        "page_size",
    )
    await refused_unchanged(
        server,
        client.lobby.ListTables(lobby_pb2.ListTablesRequest(page_token="not a token of ours")),
        Code.INVALID_ARGUMENT,
        "INVALID_PAGE_TOKEN",
        "page_token",
    )


@pytest.mark.asyncio
async def test_house_bots_off_busy_or_of_no_kind_are_refused(storage: Storages) -> None:
    async with serving(storage("off"), house_bots=0) as (server, channel):
        client = Client(channel)
        table_id = (await client.create_table(Rules())).table.table_id
        call = client.lobby.AddHouseBot(lobby_pb2.AddHouseBotRequest(table_id=table_id))
        await refused_unchanged(server, call, Code.FAILED_PRECONDITION, "HOUSE_BOTS_OFF")
    async with serving(storage("one bot"), house_bots=1) as (server, channel):
        client = Client(channel)
        table_id = (await client.create_table(Rules())).table.table_id
        call = client.lobby.AddHouseBot(
            lobby_pb2.AddHouseBotRequest(table_id=table_id, kind=99)  # type: ignore[arg-type]
        )
        await refused_unchanged(server, call, Code.INVALID_ARGUMENT, "UNKNOWN_HOUSE_BOT", "kind")
        await client.lobby.AddHouseBot(lobby_pb2.AddHouseBotRequest(table_id=table_id))
        call = client.lobby.AddHouseBot(lobby_pb2.AddHouseBotRequest(table_id=table_id))
        await refused_unchanged(server, call, Code.RESOURCE_EXHAUSTED, "HOUSE_BOTS_BUSY")


@pytest.mark.asyncio
async def test_a_private_table_refuses_a_join_without_its_code_or_with_another(
    client: Client, server: SpadesServer
) -> None:
    created = await client.create_table(Rules(), private=True)
    table_id = created.table.table_id
    join = lobby_pb2.JoinTableRequest(table_id=table_id, player_name="p")
    await refused_unchanged(
        server,
        client.lobby.JoinTable(join),
        Code.PERMISSION_DENIED,
        "JOIN_CODE_REQUIRED",
        "join_code",
    )
    join.join_code = created.join_code + "x"
    await refused_unchanged(
        server, client.lobby.JoinTable(join), Code.PERMISSION_DENIED, "WRONG_JOIN_CODE", "join_code"
    )


@pytest.mark.asyncio
async def test_a_malformed_request_id_is_refused(client: Client, server: SpadesServer) -> None:
    call = client.lobby.CreateTable(
        lobby_pb2.CreateTableRequest(
            name="t", rules=protocol.rules_to_proto(Rules()), request_id="too short"
        )
    )
    await refused_unchanged(server, call, Code.INVALID_ARGUMENT, "REQUEST_ID_INVALID")


@pytest.mark.asyncio
async def test_a_retried_join_whose_seat_was_left_is_request_seat_given_up(
    client: Client, server: SpadesServer
) -> None:
    table_id = (await client.create_table(Rules())).table.table_id
    join = lobby_pb2.JoinTableRequest(table_id=table_id, player_name="p", request_id=request_id())
    joined = await client.lobby.JoinTable(join)
    await client.lobby.LeaveTable(
        lobby_pb2.LeaveTableRequest(), metadata=(("spades-seat-token", joined.seat_token),)
    )
    await refused_unchanged(
        server, client.lobby.JoinTable(join), Code.FAILED_PRECONDITION, "REQUEST_SEAT_GIVEN_UP"
    )


@pytest.mark.asyncio
async def test_the_quick_match_queue_holds_so_many_players_from_one_address(
    storage: Storages,
) -> None:
    async with serving(storage(), quick_match_per_address=1) as (server, channel):
        client = Client(channel)
        await client.lobby.QuickMatch(lobby_pb2.QuickMatchRequest(player_name="first"))
        call = client.lobby.QuickMatch(lobby_pb2.QuickMatchRequest(player_name="second"))
        await refused_unchanged(server, call, Code.RESOURCE_EXHAUSTED, "QUICK_MATCH_QUEUE_FULL")


@pytest.mark.asyncio
async def test_the_rated_queue_without_an_account_is_rated_needs_account(
    client: Client, server: SpadesServer
) -> None:
    call = client.lobby.QuickMatch(lobby_pb2.QuickMatchRequest(player_name="p", rated=True))
    await refused_unchanged(server, call, Code.PERMISSION_DENIED, "RATED_NEEDS_ACCOUNT")
