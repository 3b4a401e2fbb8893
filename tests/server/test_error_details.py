"""Errors a program can act on, over the wire, on both log backends: for each kind of refusal
the gRPC status, the google.rpc.Status details (ErrorInfo reason and domain, the field
violation, RetryInfo) on the call or in ActionResult.status, and that nothing changed."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import grpc
import pytest

from spades import protocol
from spades.client import InvalidArgument, NotFound, SpadesClient
from spades.engine import Rules
from spades.v1 import (
    actions_pb2,
    admin_pb2,
    admin_pb2_grpc,
    cards_pb2,
    lobby_pb2,
    play_pb2,
    rules_pb2,
    view_pb2,
)
from spades_server.app.server import SpadesServer
from tests.support.backends import Storages
from tests.support.clients import (
    TOKEN_KEY,
    Client,
    SeatStream,
    close_streams,
    current_view,
    rpc_error,
    stream_error,
)
from tests.support.refusals import (
    assert_action_refused,
    assert_call_refused,
    nothing_written,
    trailers,
)
from tests.support.seats import bid, heart_follow_seed, play, play_turns
from tests.support.servers import create_admin_table, running_server

Code = grpc.StatusCode
LONG_ID = "t" * 30_000
OPERATOR_TOKEN = "operator token for the error tests"


async def bidding_table(
    server: SpadesServer, client: Client
) -> tuple[str, list[str], dict[int, SeatStream]]:
    """A table in its first bidding round (the seed has a heart to follow): its id, the seat
    tokens, and every seat on a Play stream."""
    seed, *_ = heart_follow_seed()
    table_id = await create_admin_table(server, Rules(max_hands=1), seed=seed)
    tokens = await client.seat_all(table_id)
    streams = await client.started_streams(tokens)
    return table_id, tokens, streams


# -- unary calls -------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_an_unknown_table_is_not_found_with_its_id(
    client: Client, server: SpadesServer
) -> None:
    async with nothing_written(server, client):
        error = await rpc_error(client.lobby.GetTable(lobby_pb2.GetTableRequest(table_id="nope")))
        details = assert_call_refused(error, Code.NOT_FOUND, "TABLE_NOT_FOUND")
    assert details.metadata == {"table_id": "nope"}


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "call",
    [
        "GetTable",
        "JoinTable",
        "AddHouseBot",
        "GetRecord",
        "Watch",
    ],
)
async def test_an_over_long_id_is_refused_first_and_never_echoed(
    client: Client, server: SpadesServer, call: str
) -> None:
    calls: dict[str, Callable[[], Any]] = {
        "GetTable": lambda: client.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=LONG_ID)),
        "JoinTable": lambda: client.lobby.JoinTable(
            lobby_pb2.JoinTableRequest(table_id=LONG_ID, player_name="p")
        ),
        "AddHouseBot": lambda: client.lobby.AddHouseBot(
            lobby_pb2.AddHouseBotRequest(table_id=LONG_ID)
        ),
        "GetRecord": lambda: client.play.GetRecord(play_pb2.GetRecordRequest(table_id=LONG_ID)),
    }
    async with nothing_written(server, client):
        if call == "Watch":
            watch: Any = client.play.Watch(play_pb2.WatchRequest(table_id=LONG_ID))
            error = await rpc_error(watch.read())
        else:
            error = await rpc_error(calls[call]())
        details = assert_call_refused(error, Code.INVALID_ARGUMENT, "FIELD_TOO_LONG", "table_id")
    assert details.metadata == {"field": "table_id", "max_length": "64"}
    assert "30000 characters" in (error.details() or "")
    assert LONG_ID[:100] not in (error.details() or "")
    # The whole trailer stays far below the client's metadata limit (8 KiB by default).
    assert sum(len(value) for _, value in trailers(error)) < 1000


@pytest.mark.asyncio
async def test_a_taken_seat_is_seat_taken(client: Client, server: SpadesServer) -> None:
    created = await client.create_table(Rules())
    table_id = created.table.table_id
    join = lobby_pb2.JoinTableRequest(table_id=table_id, player_name="p", seat=cards_pb2.SEAT_NORTH)
    await client.lobby.JoinTable(join)
    async with nothing_written(server, client, table_id):
        error = await rpc_error(client.lobby.JoinTable(join))
        assert_call_refused(error, Code.FAILED_PRECONDITION, "SEAT_TAKEN")
        error = await rpc_error(
            client.lobby.JoinTable(
                lobby_pb2.JoinTableRequest(table_id=table_id, player_name="p", seat=9)  # type: ignore[arg-type]
            )
        )
        assert_call_refused(error, Code.INVALID_ARGUMENT, "NO_SUCH_SEAT", "seat")
        error = await rpc_error(
            client.lobby.JoinTable(lobby_pb2.JoinTableRequest(table_id=table_id, player_name=" "))
        )
        assert_call_refused(error, Code.INVALID_ARGUMENT, "INVALID_NAME", "player_name")
        error = await rpc_error(
            client.lobby.CreateTable(
                lobby_pb2.CreateTableRequest(name="t", rules=rules_pb2.RuleSet(target_score=50))
            )
        )
        assert_call_refused(error, Code.INVALID_ARGUMENT, "INVALID_RULES", "rules.target_score")


@pytest.mark.asyncio
async def test_a_bad_seat_token_is_unauthenticated(client: Client, server: SpadesServer) -> None:
    act = play_pb2.ActRequest(action=play_pb2.ActionRequest(action_id="a", action=bid(3)))
    async with nothing_written(server, client):
        error = await rpc_error(client.play.Act(act))
        assert_call_refused(error, Code.UNAUTHENTICATED, "SEAT_TOKEN_MISSING")
        for token in ("not a token", "0123456789abcdef0123.forged"):
            error = await rpc_error(client.play.Act(act, metadata=((TOKEN_KEY, token),)))
            assert_call_refused(error, Code.UNAUTHENTICATED, "SEAT_TOKEN_INVALID")


@pytest.mark.asyncio
async def test_the_operator_token_and_a_finished_match(storage: Storages) -> None:
    async with (
        running_server(storage(), operator_token=OPERATOR_TOKEN) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        client = Client(channel)
        admin = admin_pb2_grpc.AdminServiceStub(channel)
        table_id, tokens, streams = await bidding_table(server, client)
        close = admin_pb2.CloseTableRequest(table_id=table_id)
        async with nothing_written(server, client, table_id):
            error = await rpc_error(admin.CloseTable(close))
            assert_call_refused(error, Code.UNAUTHENTICATED, "OPERATOR_TOKEN_MISSING")
            wrong = (("spades-operator-token", OPERATOR_TOKEN + "!"),)
            error = await rpc_error(admin.CloseTable(close, metadata=wrong))
            assert_call_refused(error, Code.UNAUTHENTICATED, "OPERATOR_TOKEN_INVALID")
        operator = (("spades-operator-token", OPERATOR_TOKEN),)
        await admin.CloseTable(close, metadata=operator)
        over = await current_view(client, table_id)
        assert over.view.phase == view_pb2.PHASE_ENDED
        async with nothing_written(server, client, table_id):
            # The Play streams ended with the match; an action still comes through Act.
            act = play_pb2.ActRequest(
                action=play_pb2.ActionRequest(
                    action_id="late", sequence=over.sequence, action=bid(3)
                )
            )
            answered = await client.play.Act(act, metadata=((TOKEN_KEY, tokens[0]),))
            assert_action_refused(answered.result, Code.FAILED_PRECONDITION, "MATCH_OVER")
            error = await rpc_error(admin.CloseTable(close, metadata=operator))
            assert_call_refused(error, Code.FAILED_PRECONDITION, "MATCH_OVER")
            join = lobby_pb2.JoinTableRequest(table_id=table_id, player_name="late")
            error = await rpc_error(client.lobby.JoinTable(join))
            assert_call_refused(error, Code.FAILED_PRECONDITION, "MATCH_STARTED")
        await close_streams(streams)


# -- actions -----------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_action_refusals_carry_their_reason_code(
    client: Client, server: SpadesServer
) -> None:
    _, leader, heart, wrong_card = heart_follow_seed()
    table_id, tokens, streams = await bidding_table(server, client)
    now = await current_view(client, table_id)
    turn = protocol.seat_from_proto(now.view.turn)
    idle, stream, sequence = (turn + 1) % 4, streams[turn], now.sequence
    one_card = actions_pb2.Action(card_pass=actions_pb2.CardPass(cards=[heart]))
    same_twice = actions_pb2.Action(card_pass=actions_pb2.CardPass(cards=[heart, heart]))

    async with nothing_written(server, client, table_id):
        assert_action_refused(
            await streams[idle].act(bid(3), sequence), Code.FAILED_PRECONDITION, "NOT_YOUR_TURN"
        )
        # Input no rule set accepts is INVALID_ARGUMENT, whoever's turn it is.
        for seat_stream in (stream, streams[idle]):
            assert_action_refused(
                await seat_stream.act(bid(1_000_000), sequence),
                Code.INVALID_ARGUMENT,
                "IMPOSSIBLE_BID",
                "action.bid.tricks",
            )
            for card_pass in (one_card, same_twice):
                assert_action_refused(
                    await seat_stream.act(card_pass, sequence),
                    Code.INVALID_ARGUMENT,
                    "IMPOSSIBLE_PASS",
                    "action.card_pass.cards",
                )
        # A bid the table's hand size rules out (a cutthroat table could take it).
        assert_action_refused(
            await stream.act(bid(14), sequence),
            Code.FAILED_PRECONDITION,
            "BID_OUT_OF_RANGE",
            "action.bid.tricks",
        )
        assert_action_refused(
            await stream.act(play(heart), sequence), Code.FAILED_PRECONDITION, "WRONG_PHASE"
        )
        assert_action_refused(
            await stream.act(actions_pb2.Action(), sequence),
            Code.INVALID_ARGUMENT,
            "INVALID_ACTION",
            "action",
        )
        stale = assert_action_refused(
            await stream.act(bid(3), sequence - 1), Code.ABORTED, "STALE_SEQUENCE"
        )
        assert stale.metadata == {"sequence": str(sequence - 1), "table_sequence": str(sequence)}
        ahead = assert_action_refused(
            await stream.act(bid(3), sequence + 3), Code.OUT_OF_RANGE, "SEQUENCE_AHEAD", "sequence"
        )
        assert ahead.metadata == {"sequence": str(sequence + 3), "table_sequence": str(sequence)}
        for action_id, reason_code in (("", "MISSING_FIELD"), ("x" * 30_000, "FIELD_TOO_LONG")):
            await stream.call.write(
                play_pb2.PlayRequest(
                    action=play_pb2.ActionRequest(
                        action_id=action_id, sequence=sequence, action=bid(3)
                    )
                )
            )
            result = await stream.act_result(action_id)
            assert_action_refused(result, Code.INVALID_ARGUMENT, reason_code, "action_id")
            assert len(result.reason) < 120
        await stream.call.write(play_pb2.PlayRequest(start=play_pb2.StartPlay()))
        assert_action_refused(await stream.act_result(""), Code.INVALID_ARGUMENT, "START_AGAIN")
        # Act (the unary form) answers the same ActionResult, status included.
        act = play_pb2.ActRequest(
            action=play_pb2.ActionRequest(action_id="by act", sequence=sequence, action=bid(3))
        )
        response = await client.play.Act(act, metadata=((TOKEN_KEY, tokens[idle]),))
        assert_action_refused(response.result, Code.FAILED_PRECONDITION, "NOT_YOUR_TURN")

    # The bidding round, then a card off the led suit and a card not held.
    def playing(snapshot: play_pb2.Snapshot) -> bool:
        return snapshot.view.phase == view_pb2.PHASE_PLAYING

    now = await play_turns(client, table_id, streams, random.Random(2), until=playing)
    assert (await streams[leader].act(play(heart), now.sequence)).accepted
    second = (leader + 1) % 4
    now = await current_view(client, table_id)
    async with nothing_written(server, client, table_id):
        assert_action_refused(
            await streams[second].act(play(wrong_card), now.sequence),
            Code.FAILED_PRECONDITION,
            "MUST_FOLLOW_SUIT",
        )
        assert_action_refused(
            await streams[second].act(play(heart), now.sequence),
            Code.FAILED_PRECONDITION,
            "CARD_NOT_HELD",
            "action.play_card",
        )
    await close_streams(streams)


@pytest.mark.asyncio
async def test_a_stream_refusal_carries_its_details(client: Client, server: SpadesServer) -> None:
    table_id, tokens, streams = await bidding_table(server, client)
    latest = (await current_view(client, table_id)).sequence
    # A resume point from the future, and a first message that is not `start`.
    fresh = client.seat_stream(tokens[0])
    async with nothing_written(server):
        error = await stream_error(
            fresh.call, play_pb2.PlayRequest(start=play_pb2.StartPlay(after_sequence=latest + 5))
        )
        assert_call_refused(error, Code.OUT_OF_RANGE, "SEQUENCE_AHEAD", "after_sequence")
    fresh = client.seat_stream(tokens[0])
    async with nothing_written(server):
        error = await stream_error(
            fresh.call, play_pb2.PlayRequest(action=play_pb2.ActionRequest(action_id="early"))
        )
        assert_call_refused(error, Code.INVALID_ARGUMENT, "START_EXPECTED")
    await close_streams(streams)


# -- the SDK -----------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_the_sdk_exposes_reason_code_field_and_metadata(server: SpadesServer) -> None:
    async with SpadesClient(f"127.0.0.1:{server.port}") as sdk:
        with pytest.raises(NotFound) as not_found:
            await sdk.get_table("nope")
        assert not_found.value.reason_code == "TABLE_NOT_FOUND"
        assert not_found.value.metadata == {"table_id": "nope"}
        assert not_found.value.retry_delay is None
        with pytest.raises(InvalidArgument) as too_long:
            await sdk.get_table(LONG_ID)
        assert (too_long.value.reason_code, too_long.value.field) == ("FIELD_TOO_LONG", "table_id")
        assert too_long.value.field_violations[0].description == too_long.value.reason
