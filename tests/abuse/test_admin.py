"""AdminService: the operator token guards every call; detailed listing, tables with given
deals, closing a table through the engine."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import pytest

from spades import protocol
from spades.engine import Rules
from spades.v1 import actions_pb2, admin_pb2, cards_pb2, events_pb2, lobby_pb2, play_pb2, rules_pb2
from spades_server.app import config
from tests.support.admin import (
    OPERATOR_TOKEN,
    Code,
    admin_stub,
    assert_log_replays,
    deal_messages,
    deals_of,
    operator,
    serving,
)
from tests.support.backends import Storages
from tests.support.clients import TOKEN_KEY, Client, rpc_error
from tests.support.refusals import assert_status, nothing_written
from tests.support.servers import log_events

SEATS = [cards_pb2.SEAT_NORTH, cards_pb2.SEAT_EAST, cards_pb2.SEAT_SOUTH, cards_pb2.SEAT_WEST]
METHODS = list(admin_pb2.DESCRIPTOR.services_by_name["AdminService"].methods_by_name)


def calls(client: Client) -> dict[str, Callable[..., Awaitable[Any]]]:
    """Every AdminService method with a request that would be accepted."""
    stub = admin_stub(client)
    return {
        "CloseTable": lambda **kw: stub.CloseTable(
            admin_pb2.CloseTableRequest(table_id="nope"), **kw
        ),
        "ListTablesDetailed": lambda **kw: stub.ListTablesDetailed(
            admin_pb2.ListTablesDetailedRequest(), **kw
        ),
        "CreateTableWithDeals": lambda **kw: stub.CreateTableWithDeals(
            admin_pb2.CreateTableWithDealsRequest(name="deals"), **kw
        ),
    }


# -- the operator token --------------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize("method", METHODS)
async def test_with_no_operator_token_configured_every_admin_call_is_refused(
    storage: Storages, method: str
) -> None:
    async with serving(storage) as (server, client), nothing_written(server):
        call = calls(client)[method]
        for metadata in ((), operator(), operator("")):
            error = await rpc_error(call(metadata=metadata))
            assert_status(error, Code.PERMISSION_DENIED, "no operator token is configured")


@pytest.mark.asyncio
@pytest.mark.parametrize("method", METHODS)
async def test_a_missing_or_wrong_operator_token_is_refused(storage: Storages, method: str) -> None:
    async with serving(storage, operator_token=OPERATOR_TOKEN) as (server, client):
        created = await client.create_table(Rules())
        seat = (await client.seat_all(created.table.table_id, players=1))[0]
        call = calls(client)[method]
        async with nothing_written(server):
            error = await rpc_error(call())
            assert_status(error, Code.UNAUTHENTICATED, "'spades-operator-token' metadata")
            error = await rpc_error(call(metadata=operator("")))
            assert_status(error, Code.UNAUTHENTICATED, "'spades-operator-token' metadata")
            for wrong in ("operator", OPERATOR_TOKEN + "x", OPERATOR_TOKEN[:-1], "x" * 400):
                error = await rpc_error(call(metadata=operator(wrong)))
                # A wrong credential is UNAUTHENTICATED, as gRPC's guide has it.
                assert_status(error, Code.UNAUTHENTICATED, "not the operator token")
            # A seat token is not an operator token either.
            error = await rpc_error(call(metadata=(("spades-seat-token", seat),)))
            assert_status(error, Code.UNAUTHENTICATED)


def test_the_operator_token_is_a_flag_and_an_environment_variable() -> None:
    # Tokens of at least 16 characters: shorter ones are refused (tests/first_contact).
    env_token, flag_token = "s3cret-4f9a0c1e7b2d", "flag-8e1b5c2a9d0f4e"
    assert config.from_args([], {"SPADES_OPERATOR_TOKEN": env_token}).operator_token == env_token
    assert config.from_args(["--operator-token", flag_token], {}).operator_token == flag_token
    assert env_token not in repr(config.from_args([], {"SPADES_OPERATOR_TOKEN": env_token}))


# -- ListTablesDetailed --------------------------------------------------------------------


@pytest.mark.asyncio
async def test_the_detailed_listing_shows_every_table_private_ones_too(storage: Storages) -> None:
    async with serving(storage, operator_token=OPERATOR_TOKEN) as (server, client):
        admin = admin_stub(client)
        public = await client.create_table(Rules(), name="open table")
        private = await client.create_table(Rules(), name="hidden table", private=True)
        await client.lobby.JoinTable(
            lobby_pb2.JoinTableRequest(
                table_id=private.table.table_id,
                player_name="Ada",
                seat=cards_pb2.SEAT_SOUTH,
                join_code=private.join_code,
            )
        )
        dealt = await admin.CreateTableWithDeals(
            admin_pb2.CreateTableWithDealsRequest(
                name="dealt", deals=deal_messages(deals_of(b"\x01" * 32, 3))
            ),
            metadata=operator(),
        )
        lobby = await client.lobby.ListTables(lobby_pb2.ListTablesRequest())
        assert private.table.table_id not in {table.table_id for table in lobby.tables}

        listed = await admin.ListTablesDetailed(
            admin_pb2.ListTablesDetailedRequest(), metadata=operator()
        )
        by_id = {detail.table.table_id: detail for detail in listed.tables}
        assert set(by_id) == {
            public.table.table_id,
            private.table.table_id,
            dealt.table.table_id,
        }
        hidden = by_id[private.table.table_id].table
        assert hidden.private and hidden.name == "hidden table"
        assert hidden.status == lobby_pb2.TABLE_STATUS_WAITING
        assert [(seat.occupied, seat.player_name) for seat in hidden.seats] == [
            (False, ""),
            (False, ""),
            (True, "Ada"),
            (False, ""),
        ]
        assert hidden.sequence == 2 and hidden.create_time.seconds > 0
        assert list(hidden.scores) == [0, 0]
        assert by_id[dealt.table.table_id].preset_deals == 3
        assert by_id[public.table.table_id].preset_deals == 0
        newest_first = [detail.table.create_time.ToNanoseconds() for detail in listed.tables]
        assert newest_first == sorted(newest_first, reverse=True)

        # Paging and the status filter.
        first = await admin.ListTablesDetailed(
            admin_pb2.ListTablesDetailedRequest(page_size=2), metadata=operator()
        )
        assert len(first.tables) == 2 and first.next_page_token
        rest = await admin.ListTablesDetailed(
            admin_pb2.ListTablesDetailedRequest(page_size=2, page_token=first.next_page_token),
            metadata=operator(),
        )
        assert len(rest.tables) == 1 and not rest.next_page_token
        playing = await admin.ListTablesDetailed(
            admin_pb2.ListTablesDetailedRequest(status=lobby_pb2.TABLE_STATUS_PLAYING),
            metadata=operator(),
        )
        assert not playing.tables
        for bad in (
            admin_pb2.ListTablesDetailedRequest(page_size=1001),
            admin_pb2.ListTablesDetailedRequest(page_token="-1"),
            admin_pb2.ListTablesDetailedRequest(page_token="abc"),
        ):
            async with nothing_written(server):
                error = await rpc_error(admin.ListTablesDetailed(bad, metadata=operator()))
                assert_status(error, Code.INVALID_ARGUMENT)


# -- CreateTableWithDeals ------------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "rules",
    [Rules(), Rules(players=3, jokers=True)],
    ids=["default", "cutthroat-jokers"],
)
async def test_a_table_with_deals_deals_exactly_those_cards(
    storage: Storages, rules: Rules
) -> None:
    deals = deals_of(b"\x07" * 32, 2, rules)
    async with serving(storage, operator_token=OPERATOR_TOKEN) as (server, client):
        created = await admin_stub(client).CreateTableWithDeals(
            admin_pb2.CreateTableWithDealsRequest(
                name="duplicate board 1",
                rules=protocol.rules_to_proto(rules),
                deals=deal_messages(deals),
            ),
            metadata=operator(),
        )
        table_id = created.table.table_id
        assert created.table.name == "duplicate board 1" and not created.join_code
        tokens = await client.seat_all(table_id, rules.players)
        # Each seat's own view holds exactly its hand of the first deal.
        for seat, token in enumerate(tokens):
            stream = client.seat_stream(token)
            snapshot = await stream.start()
            hand = sorted(protocol.card_from_proto(card) for card in snapshot.view.hand)
            assert hand == sorted(deals[0][seat]), seat
            await stream.close()
        # And the log dealt exactly those cards, to those seats.
        logged = await log_events(server, table_id)
        dealt = {
            protocol.seat_from_proto(event.cards_dealt.seat): sorted(
                protocol.card_from_proto(card) for card in event.cards_dealt.cards
            )
            for event in logged
            if event.WhichOneof("kind") == "cards_dealt"
        }
        assert dealt == {seat: sorted(hand) for seat, hand in enumerate(deals[0])}
        # The deals are secret like the seed until the match ends.
        record = (await client.play.GetRecord(play_pb2.GetRecordRequest(table_id=table_id))).record
        assert record.events[0].WhichOneof("kind") == "table_created"
        assert not record.preset_deals
        assert "preset_deals" not in record.events[0].table_created.DESCRIPTOR.fields_by_name
        assert await assert_log_replays(server, client) == 1


@pytest.mark.asyncio
async def test_the_same_seed_and_deals_make_the_same_match(storage: Storages) -> None:
    deals = deal_messages(deals_of(b"\x02" * 32, 1))
    seed = b"\x09" * 32
    async with serving(storage, operator_token=OPERATOR_TOKEN) as (server, client):
        dealers = []
        for copy in range(2):
            created = await admin_stub(client).CreateTableWithDeals(
                admin_pb2.CreateTableWithDealsRequest(
                    name=f"copy {copy}", deals=deals, seed=seed, private=True
                ),
                metadata=operator(),
            )
            assert created.table.private and created.join_code
            await client.seat_all(created.table.table_id, join_code=created.join_code)
            logged = await log_events(server, created.table.table_id)
            started = next(e for e in logged if e.WhichOneof("kind") == "hand_started")
            dealers.append(started.hand_started.dealer)
        assert dealers[0] == dealers[1]


@pytest.mark.asyncio
async def test_bad_deals_are_invalid_argument_and_write_nothing(storage: Storages) -> None:
    good = deals_of(b"\x03" * 32, 1)[0]
    twice = [list(good[0]), list(good[0]), list(good[2]), list(good[3])]
    short = [hand[:12] for hand in good]
    async with serving(storage, operator_token=OPERATOR_TOKEN) as (server, client):
        admin = admin_stub(client)
        bad_requests = {
            "a card is dealt twice": admin_pb2.CreateTableWithDealsRequest(
                name="x", deals=deal_messages([good, twice])
            ),
            "must get 13 different cards": admin_pb2.CreateTableWithDealsRequest(
                name="x", deals=deal_messages([short])
            ),
            "deal one hand to each of the 4 seats": admin_pb2.CreateTableWithDealsRequest(
                name="x", deals=deal_messages([good[:3]])
            ),
            "deals[0].hands[0].cards[0]": admin_pb2.CreateTableWithDealsRequest(
                name="x",
                deals=[
                    events_pb2.Deal(
                        hands=[
                            events_pb2.DealtHand(
                                cards=[
                                    cards_pb2.Card(
                                        suit=cards_pb2.Suit.ValueType(9),
                                        rank=cards_pb2.Rank.ValueType(99),
                                    )
                                ]
                            )
                        ]
                    )
                ],
            ),
            "seed must be 32 bytes": admin_pb2.CreateTableWithDealsRequest(name="x", seed=b"short"),
            "the table name": admin_pb2.CreateTableWithDealsRequest(name=""),
            "rules.": admin_pb2.CreateTableWithDealsRequest(
                name="x", rules=rules_pb2.RuleSet(players=7)
            ),
        }
        async with nothing_written(server):
            for reason, request in bad_requests.items():
                error = await rpc_error(admin.CreateTableWithDeals(request, metadata=operator()))
                assert_status(error, Code.INVALID_ARGUMENT, reason)
        # A preset deal's hand number is named ("preset deal 2").
        error = await rpc_error(
            admin.CreateTableWithDeals(bad_requests["a card is dealt twice"], metadata=operator())
        )
        assert "preset deal 2" in (error.details() or "")


# -- CloseTable ----------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_closing_a_table_ends_its_match_through_the_engine(storage: Storages) -> None:
    async with serving(storage, operator_token=OPERATOR_TOKEN) as (server, client):
        admin = admin_stub(client)
        created = await client.create_table(Rules())
        table_id = created.table.table_id
        tokens = await client.seat_all(table_id)
        streams = [client.seat_stream(token) for token in tokens]
        for stream in streams:
            await stream.start()

        closed = await admin.CloseTable(
            admin_pb2.CloseTableRequest(table_id=table_id), metadata=operator()
        )
        assert closed.table.status == lobby_pb2.TABLE_STATUS_FINISHED
        logged = await log_events(server, table_id)
        ended, revealed = logged[-2:]
        assert ended.match_ended.reason == events_pb2.MATCH_END_REASON_CLOSED
        assert not ended.match_ended.winners
        assert revealed.WhichOneof("kind") == "seed_revealed"
        # Every seat's stream sees the end, then ends with OK.
        for stream in streams:
            assert await stream.until_end() == Code.OK
            assert stream.events()[-1].event.WhichOneof("kind") == "seed_revealed"
        # No action is taken after it.
        late = play_pb2.ActRequest(
            action=play_pb2.ActionRequest(
                action_id="late",
                sequence=len(logged),
                action=actions_pb2.Action(concession=actions_pb2.Concession()),
            )
        )
        result = (await client.play.Act(late, metadata=((TOKEN_KEY, tokens[0]),))).result
        assert not result.accepted and result.code == Code.FAILED_PRECONDITION.value[0]
        for stream in streams:
            await stream.close()

        listed = await admin.ListTablesDetailed(
            admin_pb2.ListTablesDetailedRequest(), metadata=operator()
        )
        assert listed.tables[0].end_reason == events_pb2.MATCH_END_REASON_CLOSED

        async with nothing_written(server):
            error = await rpc_error(
                admin.CloseTable(
                    admin_pb2.CloseTableRequest(table_id=table_id), metadata=operator()
                )
            )
            assert_status(error, Code.FAILED_PRECONDITION, "already over")
            error = await rpc_error(
                admin.CloseTable(admin_pb2.CloseTableRequest(table_id="nope"), metadata=operator())
            )
            assert_status(error, Code.NOT_FOUND)
            error = await rpc_error(
                admin.CloseTable(admin_pb2.CloseTableRequest(), metadata=operator())
            )
            assert_status(error, Code.INVALID_ARGUMENT, "table_id is required")

        # A table nobody sat at can be closed too; both replay from their logs.
        waiting = await client.create_table(Rules())
        await admin.CloseTable(
            admin_pb2.CloseTableRequest(table_id=waiting.table.table_id), metadata=operator()
        )
        assert await assert_log_replays(server, client) == 2


@pytest.mark.asyncio
async def test_admin_calls_are_listed_by_reflection_and_health(storage: Storages) -> None:
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    async with serving(storage) as (server, client):
        health = health_pb2_grpc.HealthStub(client.channel)
        reply = await health.Check(health_pb2.HealthCheckRequest(service="spades.v1.AdminService"))
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
        assert isinstance(server.server, grpc.aio.Server)
