"""PlayService.GetView: the current view of a table on demand, a seat's with its token and the
public one without, exactly what a stream's snapshot at the latest sequence would say; and its
refusals (unknown table, a bad token, another table's token), which change nothing."""

from __future__ import annotations

import random

import grpc
import pytest

from spades import protocol
from spades.engine import MatchState, Phase, Rules, view
from spades.v1 import lobby_pb2, play_pb2, view_pb2
from spades_server.app.server import SpadesServer
from tests.support.clients import (
    TOKEN_KEY,
    Client,
    cards_in,
    close_streams,
    current_view,
    rpc_error,
)
from tests.support.seats import play_turns
from tests.support.servers import log_entries, log_head


async def get_view(client: Client, table_id: str, token: str | None = None) -> play_pb2.Snapshot:
    metadata = ((TOKEN_KEY, token),) if token is not None else None
    response = await client.play.GetView(
        play_pb2.GetViewRequest(table_id=table_id), metadata=metadata
    )
    return response.snapshot


async def seated_table(client: Client, rules: Rules | None = None) -> tuple[str, list[str]]:
    created = await client.create_table(rules or Rules(max_hands=1))
    table_id = created.table.table_id
    return table_id, await client.seat_all(table_id, (rules or Rules()).players)


async def replayed(server: SpadesServer, table_id: str) -> MatchState:
    return MatchState.from_events(entry.event for entry in await log_entries(server, table_id))


@pytest.mark.asyncio
async def test_each_seat_and_the_public_get_the_view_of_the_log_at_its_latest_sequence(
    client: Client, server: SpadesServer
) -> None:
    table_id, tokens = await seated_table(client)
    streams = await client.started_streams(tokens)
    rng = random.Random(4)
    # Part way into the play: hands dealt, bids made, some cards out.
    await play_turns(
        client, table_id, streams, rng, until=lambda now: len(now.view.current_trick) == 2
    )
    state = await replayed(server, table_id)
    public = await get_view(client, table_id)
    assert public.sequence == len(await log_entries(server, table_id))
    assert public.view == protocol.view_to_proto(view(state, None))
    assert public == await current_view(client, table_id)  # what a Watch starts with
    assert not public.view.hand and not public.view.legal_actions
    for seat, token in enumerate(tokens):
        own = await get_view(client, table_id, token)
        assert own.sequence == public.sequence
        assert own.view == protocol.view_to_proto(view(state, seat))
        assert own.view.viewer == protocol.seat_to_proto(seat)
        hand = set(protocol.cards_from_proto(own.view.hand))
        assert hand and hand == set(state.hand_of(seat))
        played = {protocol.card_from_proto(p.card) for p in own.view.current_trick}
        assert set(cards_in(own.view)) <= hand | played  # nothing of another hand
        to_act = protocol.seat_from_proto(public.view.turn)
        assert bool(own.view.legal_actions) == (seat == to_act)
    await close_streams(streams)


@pytest.mark.asyncio
async def test_the_view_follows_the_table_and_reads_back_into_the_engine(
    client: Client, server: SpadesServer
) -> None:
    table_id, tokens = await seated_table(client)
    before = await get_view(client, table_id, tokens[1])
    assert before.view.phase == view_pb2.PHASE_BIDDING
    streams = await client.started_streams(tokens)
    await play_turns(client, table_id, streams, random.Random(8))
    after = await get_view(client, table_id, tokens[1])
    assert after.sequence > before.sequence
    seat_view = protocol.view_from_proto(after.view)
    assert seat_view.phase is Phase.ENDED and seat_view.viewer == 1
    assert seat_view.seed is not None  # revealed with the end
    assert seat_view == view(await replayed(server, table_id), 1)
    await close_streams(streams)


@pytest.mark.asyncio
async def test_refusals_name_the_problem_and_change_nothing(
    client: Client, server: SpadesServer
) -> None:
    table_id, tokens = await seated_table(client)
    other_id, other_tokens = await seated_table(client)
    head = await log_head(server)

    unknown = await rpc_error(get_view(client, "no-such-table"))
    assert unknown.code() == grpc.StatusCode.NOT_FOUND
    unknown_with_token = await rpc_error(get_view(client, "no-such-table", tokens[0]))
    assert unknown_with_token.code() == grpc.StatusCode.NOT_FOUND

    for bad in ("", "not a token", f"{table_id}.{'x' * 32}", tokens[0] + "x"):
        refused = await rpc_error(get_view(client, table_id, bad))
        assert refused.code() == grpc.StatusCode.UNAUTHENTICATED, bad
        assert "seat token" in (refused.details() or ""), bad

    elsewhere = await rpc_error(get_view(client, table_id, other_tokens[0]))
    assert elsewhere.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "another table" in (elsewhere.details() or "")
    assert other_id not in (elsewhere.details() or "")  # the other table's id is not echoed
    assert await log_head(server) == head


@pytest.mark.asyncio
async def test_a_given_up_seat_token_no_longer_shows_the_seat(client: Client) -> None:
    created = await client.create_table(Rules())
    table_id = created.table.table_id
    joined = await client.lobby.JoinTable(
        lobby_pb2.JoinTableRequest(table_id=table_id, player_name="leaving", bot=True)
    )
    assert (await get_view(client, table_id, joined.seat_token)).view.viewer == (joined.seat)
    await client.lobby.LeaveTable(
        lobby_pb2.LeaveTableRequest(), metadata=((TOKEN_KEY, joined.seat_token),)
    )
    refused = await rpc_error(get_view(client, table_id, joined.seat_token))
    assert refused.code() == grpc.StatusCode.UNAUTHENTICATED
    # Someone new sits there: the old token must never show the new player's cards.
    await client.seat_all(table_id, 4)
    refused = await rpc_error(get_view(client, table_id, joined.seat_token))
    assert refused.code() == grpc.StatusCode.UNAUTHENTICATED
