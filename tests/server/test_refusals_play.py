"""Refusals at a table in play that no other test provoked, over the wire on both log backends:
an action refused on its seat's Play stream (or a stream refused as it starts), each with its
gRPC status, its reason code, and no event written."""

from __future__ import annotations

import random

import grpc
import pytest

from spades import protocol
from spades.engine import Card, Clock, Rules
from spades.v1 import actions_pb2, lobby_pb2, play_pb2, view_pb2
from spades_server.app.server import SpadesServer
from tests.support.backends import Storages
from tests.support.clients import (
    TOKEN_KEY,
    Client,
    SeatStream,
    close_streams,
    current_view,
    stream_error,
)
from tests.support.refusals import (
    action_refused_unchanged,
    assert_action_refused,
    nothing_written,
    refused_unchanged,
)
from tests.support.seats import bid, play, play_turns
from tests.support.servers import create_admin_table, log_head, running_server

Code = grpc.StatusCode
NIL = actions_pb2.Action(bid=actions_pb2.Bid(kind=actions_pb2.Bid.KIND_NIL))


async def on_turn(client: Client, table_id: str) -> tuple[int, int]:
    """The seat to act and the table's sequence."""
    now = await current_view(client, table_id)
    return protocol.seat_from_proto(now.view.turn), now.sequence


@pytest.mark.asyncio
async def test_an_action_before_every_seat_is_taken_is_match_not_started(
    client: Client, server: SpadesServer
) -> None:
    table_id = (await client.create_table(Rules())).table.table_id
    joined = await client.lobby.JoinTable(
        lobby_pb2.JoinTableRequest(table_id=table_id, player_name="early")
    )
    stream = client.seat_stream(joined.seat_token)
    snapshot = await stream.start()
    await action_refused_unchanged(
        server, stream, bid(3), snapshot.sequence, Code.FAILED_PRECONDITION, "MATCH_NOT_STARTED"
    )
    await stream.close()


@pytest.mark.asyncio
async def test_nil_where_the_rules_forbid_it_is_nil_not_allowed(
    client: Client, server: SpadesServer
) -> None:
    table_id, _, streams = await client.seated(Rules(nil_allowed=False))
    seat, sequence = await on_turn(client, table_id)
    await action_refused_unchanged(
        server, streams[seat], NIL, sequence, Code.FAILED_PRECONDITION, "NIL_NOT_ALLOWED"
    )
    await close_streams(streams)


@pytest.mark.asyncio
async def test_a_bid_that_leaves_the_team_under_its_minimum_is_refused(
    client: Client, server: SpadesServer
) -> None:
    table_id, _, streams = await client.seated(Rules(minimum_team_bid=5))
    first, sequence = await on_turn(client, table_id)
    for _ in range(2):  # the first bidder and the next (of the other team) bid 1
        seat, sequence = await on_turn(client, table_id)
        assert (await streams[seat].act(bid(1), sequence)).accepted
    partner, sequence = await on_turn(client, table_id)
    assert partner == (first + 2) % 4
    await action_refused_unchanged(
        server,
        streams[partner],
        bid(1),
        sequence,
        Code.FAILED_PRECONDITION,
        "BID_BELOW_TEAM_MINIMUM",
    )
    await close_streams(streams)


@pytest.mark.asyncio
async def test_a_second_extension_claim_and_one_without_an_extension_are_refused(
    client: Client, server: SpadesServer
) -> None:
    claim = actions_pb2.Action(extension_claim=actions_pb2.ExtensionClaim())
    table_id, _, streams = await client.seated(Rules())
    seat, sequence = await on_turn(client, table_id)
    assert (await streams[seat].act(claim, sequence)).accepted
    seat, sequence = await on_turn(client, table_id)
    await action_refused_unchanged(
        server,
        streams[seat],
        claim,
        sequence,
        Code.FAILED_PRECONDITION,
        "EXTENSION_ALREADY_CLAIMED",
    )
    await close_streams(streams)
    table_id, _, streams = await client.seated(Rules(clock=Clock(extension_millis=0)))
    seat, sequence = await on_turn(client, table_id)
    await action_refused_unchanged(
        server, streams[seat], claim, sequence, Code.FAILED_PRECONDITION, "NO_EXTENSION"
    )
    await close_streams(streams)


def playing(snapshot: play_pb2.Snapshot) -> bool:
    return snapshot.view.phase == view_pb2.PHASE_PLAYING


async def first_trick(
    server: SpadesServer, client: Client, rules: Rules
) -> tuple[int, list[Card], SeatStream, dict[int, SeatStream]]:
    """A table of ``rules`` dealt from a fixed seed, bid through to its first lead: the
    sequence of the first lead, the leader's hand, the leader's stream, and every stream."""
    table_id = await create_admin_table(server, rules, seed=bytes(range(32)))
    tokens = await client.seat_all(table_id)
    streams = await client.started_streams(tokens)
    now = await play_turns(client, table_id, streams, random.Random(1), until=playing)
    leader = protocol.seat_from_proto(now.view.turn)
    view = await client.play.GetView(
        play_pb2.GetViewRequest(table_id=table_id), metadata=((TOKEN_KEY, tokens[leader]),)
    )
    hand = [protocol.card_from_proto(card) for card in view.snapshot.view.hand]
    return now.sequence, hand, streams[leader], streams


@pytest.mark.asyncio
async def test_the_first_lead_must_be_the_two_of_clubs_at_a_table_that_says_so(
    client: Client, server: SpadesServer
) -> None:
    sequence, hand, leader, streams = await first_trick(
        server, client, Rules(two_of_clubs_leads=True)
    )
    assert Card.parse("2C") in hand
    other = next(card for card in hand if card != Card.parse("2C"))
    await action_refused_unchanged(
        server,
        leader,
        play(protocol.card_to_proto(other)),
        sequence,
        Code.FAILED_PRECONDITION,
        "MUST_LEAD_TWO_OF_CLUBS",
    )
    await close_streams(streams)


@pytest.mark.asyncio
async def test_a_spade_led_before_spades_are_broken_is_refused(
    client: Client, server: SpadesServer
) -> None:
    sequence, hand, leader, streams = await first_trick(server, client, Rules())
    spades = [card for card in hand if str(card).endswith("S")]
    assert spades and len(spades) < len(hand), hand  # (the seed deals the leader both)
    await action_refused_unchanged(
        server,
        leader,
        play(protocol.card_to_proto(spades[0])),
        sequence,
        Code.FAILED_PRECONDITION,
        "SPADES_NOT_BROKEN",
    )
    await close_streams(streams)


@pytest.mark.asyncio
async def test_a_start_both_after_a_sequence_and_at_the_latest_is_conflicting_start(
    client: Client, server: SpadesServer
) -> None:
    _, tokens, streams = await client.seated(Rules())
    start = play_pb2.StartPlay(after_sequence=1, latest=True)
    call = stream_error(
        lambda: client.play.Play(metadata=((TOKEN_KEY, tokens[0]),)),  # type: ignore[call-arg]
        play_pb2.PlayRequest(start=start),
    )
    await refused_unchanged(server, call, Code.INVALID_ARGUMENT, "CONFLICTING_START", "latest")
    await close_streams(streams)


@pytest.mark.asyncio
async def test_a_play_message_with_neither_start_nor_action_is_empty_message(
    client: Client, server: SpadesServer
) -> None:
    _, _, streams = await client.seated(Rules())
    stream = streams[0]
    head = await log_head(server)
    await stream.call.write(play_pb2.PlayRequest())
    async with nothing_written(server):
        result = await stream.act_result("")
        assert_action_refused(result, Code.INVALID_ARGUMENT, "EMPTY_MESSAGE")
    assert await log_head(server) == head
    await close_streams(streams)


@pytest.mark.asyncio
async def test_a_seat_token_sent_with_another_tables_id_is_refused(
    client: Client, server: SpadesServer
) -> None:
    table_id = (await client.create_table(Rules())).table.table_id
    other = (await client.create_table(Rules())).table.table_id
    joined = await client.lobby.JoinTable(
        lobby_pb2.JoinTableRequest(table_id=table_id, player_name="p")
    )
    call = client.play.GetView(
        play_pb2.GetViewRequest(table_id=other), metadata=((TOKEN_KEY, joined.seat_token),)
    )
    await refused_unchanged(server, call, Code.PERMISSION_DENIED, "SEAT_TOKEN_OTHER_TABLE")


async def stream_end(stream: SeatStream) -> grpc.aio.AioRpcError:
    """The error status a seat's stream ends with (reading what it still sends)."""
    try:
        while True:
            await stream.next()
    except grpc.aio.AioRpcError as error:
        return error


@pytest.mark.asyncio
async def test_a_stream_a_newer_one_took_over_ends_with_stream_replaced(
    client: Client, server: SpadesServer
) -> None:
    _, tokens, streams = await client.seated(Rules())

    async def replaced() -> grpc.aio.AioRpcError:
        newer = client.seat_stream(tokens[0])
        await newer.start()
        streams[4] = newer
        return await stream_end(streams[0])

    await refused_unchanged(server, replaced(), Code.ABORTED, "STREAM_REPLACED")
    await close_streams(streams)


@pytest.mark.asyncio
async def test_one_more_play_stream_than_a_token_may_have_open_is_too_many_streams(
    storage: Storages,
) -> None:
    async with (
        running_server(storage(), max_play_streams=1) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        client = Client(channel)
        _, tokens, streams = await client.seated(Rules())
        call = stream_error(
            lambda: client.play.Play(metadata=((TOKEN_KEY, tokens[0]),)),  # type: ignore[call-arg]
            play_pb2.PlayRequest(start=play_pb2.StartPlay()),
        )
        await refused_unchanged(server, call, Code.RESOURCE_EXHAUSTED, "TOO_MANY_STREAMS")
        await close_streams(streams)


@pytest.mark.asyncio
async def test_blind_nil_after_the_partners_blind_nil_under_a_team_minimum_is_refused(
    client: Client, server: SpadesServer
) -> None:
    # Every team trails by at least 0 at the first hand: each seat may choose Blind Nil.
    rules = Rules(blind_nil=True, blind_nil_deficit=0, minimum_team_bid=4)
    table_id, _, streams = await client.seated(rules)
    blind = actions_pb2.Action(blind_nil_choice=actions_pb2.BlindNilChoice(blind=True))
    look = actions_pb2.Action(blind_nil_choice=actions_pb2.BlindNilChoice(blind=False))
    first, sequence = await on_turn(client, table_id)
    assert (await streams[first].act(blind, sequence)).accepted
    partner = (first + 2) % 4
    for _ in range(4):  # the other team looks and bids, until the partner is on turn
        seat, sequence = await on_turn(client, table_id)
        if seat == partner:
            break
        choices = (await streams[seat].next_of("prompt")).prompt.legal_actions
        kinds = {choice.WhichOneof("kind") for choice in choices}
        result = await streams[seat].act(look if "blind_nil_choice" in kinds else bid(4), sequence)
        assert result.accepted, result
    assert seat == partner
    await action_refused_unchanged(
        server,
        streams[partner],
        blind,
        sequence,
        Code.FAILED_PRECONDITION,
        "BLIND_NIL_NOT_OPEN",
    )
    await close_streams(streams)
