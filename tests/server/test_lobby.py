"""The lobby: create, list, get, join, leave, private tables and the quick-match queue."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import grpc
import pytest

from spades import protocol
from spades.engine import Rules
from spades.v1 import actions_pb2, cards_pb2, lobby_pb2, play_pb2, rules_pb2, view_pb2
from spades_server.api import auth, lobby, play
from spades_server.app.server import SpadesServer
from spades_server.domain.tables import Table
from spades_server.store.table_store import TableStore
from tests.support.clients import TOKEN_KEY, Client, current_view, rpc_error, stream_error
from tests.support.servers import lobby_caught_up
from tests.support.time import wait_for_state

SEATS = [cards_pb2.SEAT_NORTH, cards_pb2.SEAT_EAST, cards_pb2.SEAT_SOUTH, cards_pb2.SEAT_WEST]


async def get(client: Client, table_id: str) -> lobby_pb2.Table:
    return (await client.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id))).table


async def list_ids(client: Client, **fields: object) -> list[str]:
    listed = await client.lobby.ListTables(lobby_pb2.ListTablesRequest(**fields))  # type: ignore[arg-type]
    return [table.table_id for table in listed.tables]


@pytest.mark.asyncio
async def test_create_and_get_a_table(client: Client) -> None:
    rules = Rules(target_score=300, jokers=True)
    created = await client.create_table(rules, name="  Friday night  ")
    table = created.table
    assert len(table.table_id) >= 16
    assert table.name == "Friday night"
    assert table.rules == protocol.rules_to_proto(rules)
    assert list(table.badges) == ["to 300", "big joker, little joker"]
    assert not table.private and not table.quick_match and not created.join_code
    assert table.status == lobby_pb2.TABLE_STATUS_WAITING
    assert [seat.seat for seat in table.seats] == SEATS
    assert not any(seat.occupied for seat in table.seats)
    assert list(table.scores) == [0, 0]
    assert table.hand_number == 0 and table.sequence == 1
    assert table.create_time.seconds > 0
    assert await get(client, table.table_id) == table

    # Every RuleSet field at zero is the default game, written out in full.
    default = await client.lobby.CreateTable(
        lobby_pb2.CreateTableRequest(name="plain", rules=rules_pb2.RuleSet())
    )
    assert default.table.rules == protocol.rules_to_proto(Rules())
    assert list(default.table.badges) == []
    cutthroat = (await client.create_table(Rules(players=3))).table
    assert [seat.seat for seat in cutthroat.seats] == SEATS[:3]
    assert list(cutthroat.scores) == [0, 0, 0]
    assert list(cutthroat.badges) == ["cutthroat (3 players)"]


@pytest.mark.asyncio
async def test_list_tables_newest_first_without_private_ones(client: Client) -> None:
    public = [(await client.create_table(Rules(), name=f"t{n}")).table.table_id for n in range(3)]
    hidden = (await client.create_table(Rules(), name="hidden", private=True)).table
    assert hidden.private
    assert await list_ids(client) == public[::-1]
    assert hidden.table_id not in await list_ids(client, status=lobby_pb2.TABLE_STATUS_WAITING)
    assert (await get(client, hidden.table_id)).private, "a private table is found by its id"


@pytest.mark.asyncio
async def test_list_tables_by_status(client: Client, server: SpadesServer) -> None:
    waiting = (await client.create_table(Rules(), name="waiting")).table.table_id
    playing = (await client.create_table(Rules(), name="playing")).table.table_id
    finished = (await client.create_table(Rules(players=3), name="finished")).table.table_id
    await client.join(waiting)
    await client.seat_all(playing)
    tokens = await client.seat_all(finished, 3)
    stream = client.seat_stream(tokens[1])
    await stream.start()
    sequence = (await current_view(client, finished)).sequence
    concede = actions_pb2.Action(concession=actions_pb2.Concession())
    assert (await stream.act(concede, sequence)).accepted
    await stream.close()
    await lobby_caught_up(server)  # how soon it lists it: the test after this one

    assert await list_ids(client, status=lobby_pb2.TABLE_STATUS_WAITING) == [waiting]
    assert await list_ids(client, status=lobby_pb2.TABLE_STATUS_PLAYING) == [playing]
    assert await list_ids(client, status=lobby_pb2.TABLE_STATUS_FINISHED) == [finished]
    assert await list_ids(client) == [finished, playing, waiting]
    table = await get(client, playing)
    assert table.status == lobby_pb2.TABLE_STATUS_PLAYING and table.hand_number == 1
    assert all(seat.occupied and seat.bot for seat in table.seats)
    assert table.sequence > 5
    done = await get(client, finished)
    assert done.status == lobby_pb2.TABLE_STATUS_FINISHED
    assert list(done.scores) == [0, 0, 0]


@pytest.mark.asyncio
async def test_the_lobby_shows_an_acknowledged_action_at_once(client: Client) -> None:
    """A client whose action was acknowledged on its Play stream and then asks the lobby sees
    that action: here a concession, which ends the match. (On PostgreSQL the lobby follows the
    whole log a few milliseconds behind; GetTable waits for it to reach what this replica's
    table cache has, see ``LobbyServicer._lobby_reaches_cache``.)"""
    concede = actions_pb2.Action(concession=actions_pb2.Concession())
    for _ in range(5):  # a lag is a race: give it several chances to show
        table_id = (await client.create_table(Rules())).table.table_id
        tokens = await client.seat_all(table_id)
        stream = client.seat_stream(tokens[0])
        await stream.start()
        sequence = (await current_view(client, table_id)).sequence
        result = await stream.act(concede, sequence)
        assert result.accepted, result
        table = await get(client, table_id)
        await stream.close()
        assert table.status == lobby_pb2.TABLE_STATUS_FINISHED, table
        assert table.sequence >= result.sequence, (table.sequence, result.sequence)


@pytest.mark.asyncio
async def test_list_tables_in_pages(client: Client) -> None:
    ids = [(await client.create_table(Rules(), name=f"t{n}")).table.table_id for n in range(5)]
    pages: list[list[str]] = []
    token = ""
    while True:
        listed = await client.lobby.ListTables(
            lobby_pb2.ListTablesRequest(page_size=2, page_token=token)
        )
        pages.append([table.table_id for table in listed.tables])
        token = listed.next_page_token
        if not token:
            break
        assert len(pages) < 10
    assert [len(page) for page in pages] == [2, 2, 1]
    assert [table_id for page in pages for table_id in page] == ids[::-1]
    exact = await client.lobby.ListTables(lobby_pb2.ListTablesRequest(page_size=5))
    assert len(exact.tables) == 5 and not exact.next_page_token
    assert len(await list_ids(client, page_size=100)) == 5


@pytest.mark.asyncio
async def test_join_any_seat_and_a_given_seat(client: Client) -> None:
    table_id = (await client.create_table(Rules())).table.table_id
    south = await client.join(table_id, seat=cards_pb2.SEAT_SOUTH, name=" Sam ")
    assert south.seat == cards_pb2.SEAT_SOUTH and south.table_id == table_id
    taken = [south.seat]
    tokens = [south.seat_token]
    for _ in range(3):
        joined = await client.join(table_id)
        taken.append(joined.seat)
        tokens.append(joined.seat_token)
    assert taken == [
        cards_pb2.SEAT_SOUTH,
        cards_pb2.SEAT_NORTH,
        cards_pb2.SEAT_EAST,
        cards_pb2.SEAT_WEST,
    ]
    assert len(set(tokens)) == 4
    for token in tokens:
        seat_table, _, secret = token.partition(".")
        assert seat_table == table_id
        assert len(secret) >= 22, "at least 128 random bits"
    table = await get(client, table_id)
    assert table.seats[2].player_name == "Sam" and table.seats[2].bot
    assert table.status == lobby_pb2.TABLE_STATUS_PLAYING

    three = (await client.create_table(Rules(players=3))).table.table_id
    seats = [(await client.join(three)).seat for _ in range(3)]
    assert seats == SEATS[:3]


@pytest.mark.asyncio
async def test_leave_before_the_start_frees_the_seat(client: Client) -> None:
    table_id = (await client.create_table(Rules())).table.table_id
    north = await client.join(table_id, "north")
    await client.join(table_id, "east")
    before = await get(client, table_id)
    left = await client.lobby.LeaveTable(
        lobby_pb2.LeaveTableRequest(), metadata=((TOKEN_KEY, north.seat_token),)
    )
    assert left.table_id == table_id and left.seat == cards_pb2.SEAT_NORTH
    after = await get(client, table_id)
    assert not after.seats[0].occupied and not after.seats[0].player_name
    assert after.seats[1].occupied
    assert after.sequence == before.sequence + 1
    assert after.status == lobby_pb2.TABLE_STATUS_WAITING

    # The token stops working everywhere.
    error = await rpc_error(
        client.lobby.LeaveTable(
            lobby_pb2.LeaveTableRequest(), metadata=((TOKEN_KEY, north.seat_token),)
        )
    )
    assert error.code() == grpc.StatusCode.UNAUTHENTICATED
    error = await stream_error(
        lambda: client.play.Play(metadata=((TOKEN_KEY, north.seat_token),)),  # type: ignore[call-arg]
        play_pb2.PlayRequest(start=play_pb2.StartPlay()),
    )
    assert error.code() == grpc.StatusCode.UNAUTHENTICATED

    # The seat is free again: any-seat takes it first, with a new token.
    again = await client.join(table_id, "newcomer")
    assert again.seat == cards_pb2.SEAT_NORTH and again.seat_token != north.seat_token
    assert (await get(client, table_id)).seats[0].player_name == "newcomer"
    stream = client.seat_stream(again.seat_token)
    snapshot = await stream.start()
    assert snapshot.view.viewer == cards_pb2.SEAT_NORTH
    assert snapshot.view.phase == view_pb2.PHASE_WAITING_FOR_PLAYERS
    await stream.close()


@pytest.mark.asyncio
async def test_a_private_table_is_joined_with_its_code(client: Client) -> None:
    created = await client.create_table(Rules(), name="friends", private=True)
    table_id = created.table.table_id
    assert created.table.private and len(created.join_code) >= 8
    assert created.join_code not in (await get(client, table_id)).SerializeToString().decode(
        errors="replace"
    )
    joined = await client.join(table_id, seat=cards_pb2.SEAT_WEST, join_code=created.join_code)
    assert joined.seat == cards_pb2.SEAT_WEST
    tokens = await client.seat_all(table_id, 3, join_code=created.join_code)
    assert len(tokens) == 3
    table = await get(client, table_id)
    assert table.status == lobby_pb2.TABLE_STATUS_PLAYING
    assert table_id not in await list_ids(client)


@pytest.mark.asyncio
async def test_quick_match_seats_four_players_at_one_table(
    client: Client, server: SpadesServer
) -> None:
    joined = [
        (
            await client.lobby.QuickMatch(
                lobby_pb2.QuickMatchRequest(player_name=f"quick {n}", bot=n % 2 == 0)
            )
        ).seat
        for n in range(4)
    ]
    table_id = joined[0].table_id
    assert all(seat.table_id == table_id for seat in joined)
    assert [seat.seat for seat in joined] == SEATS
    table = await get(client, table_id)
    assert table.quick_match and not table.private
    # RULES.md section 1: the default rules with a 25-hand cap, shown as the table's one badge.
    assert table.rules == protocol.rules_to_proto(Rules(max_hands=25))
    assert list(table.badges) == ["25 hands"]
    assert table.status == lobby_pb2.TABLE_STATUS_PLAYING
    assert [seat.player_name for seat in table.seats] == [f"quick {n}" for n in range(4)]
    assert [seat.bot for seat in table.seats] == [True, False, True, False]
    stream = client.seat_stream(joined[0].seat_token)
    snapshot = await stream.start()
    assert snapshot.view.phase == view_pb2.PHASE_BIDDING and len(snapshot.view.hand) == 13
    await stream.close()

    fifth = (await client.lobby.QuickMatch(lobby_pb2.QuickMatchRequest(player_name="fifth"))).seat
    assert fifth.table_id != table_id
    waiting = await get(client, fifth.table_id)
    assert waiting.quick_match and waiting.status == lobby_pb2.TABLE_STATUS_WAITING
    assert [seat.occupied for seat in waiting.seats] == [True, False, False, False]
    sixth = (await client.lobby.QuickMatch(lobby_pb2.QuickMatchRequest(player_name="sixth"))).seat
    assert sixth.table_id == fifth.table_id and sixth.seat == cards_pb2.SEAT_EAST

    error = await rpc_error(client.lobby.QuickMatch(lobby_pb2.QuickMatchRequest(player_name="")))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT


@pytest.mark.asyncio
async def test_quick_match_players_arriving_at_once(client: Client) -> None:
    """Eight players at the same moment make exactly two full tables."""
    arrived = await asyncio.gather(
        *(
            client.lobby.QuickMatch(lobby_pb2.QuickMatchRequest(player_name=f"p{n}"))
            for n in range(8)
        )
    )
    by_table: dict[str, list[int]] = {}
    for response in arrived:
        by_table.setdefault(response.seat.table_id, []).append(response.seat.seat)
    assert len(by_table) == 2
    for table_id, seats in by_table.items():
        assert sorted(seats) == SEATS
        assert (await get(client, table_id)).status == lobby_pb2.TABLE_STATUS_PLAYING


@pytest.mark.asyncio
async def test_a_stream_opened_before_leaving_stops_with_the_seat(
    client: Client, server: SpadesServer
) -> None:
    """A player opens its stream, then leaves; someone else takes the seat and the match
    starts. The old stream must not see the new player's cards, nor act for the seat."""
    table_id = (await client.create_table(Rules())).table.table_id
    leaver = await client.join(table_id, seat=cards_pb2.SEAT_NORTH, name="leaver")
    old = client.seat_stream(leaver.seat_token)
    await old.start()
    await client.lobby.LeaveTable(
        lobby_pb2.LeaveTableRequest(), metadata=((TOKEN_KEY, leaver.seat_token),)
    )
    newcomer = await client.join(table_id, seat=cards_pb2.SEAT_NORTH, name="newcomer")
    assert newcomer.seat == cards_pb2.SEAT_NORTH
    await client.seat_all(table_id, 3)  # the match starts; the newcomer has no stream yet
    now = await current_view(client, table_id)
    assert now.view.phase == view_pb2.PHASE_BIDDING

    ended: grpc.aio.AioRpcError | None = None
    received: list[play_pb2.PlayResponse] = []
    try:  # read up to the deal (or until the server ends the stream)
        while not any(m.event.sequence >= now.sequence for m in received):
            received.append(await old.next())
    except grpc.aio.AioRpcError as error:
        ended = error
    north_cards = [
        m.event.cards_dealt.cards
        for m in received
        if m.WhichOneof("kind") == "event"
        and m.event.WhichOneof("kind") == "cards_dealt"
        and m.event.cards_dealt.seat == cards_pb2.SEAT_NORTH
        and m.event.cards_dealt.cards
    ]
    conceded_for_newcomer = False
    if ended is None:  # the stream is still open: it must not act for the newcomer
        action = actions_pb2.Action(concession=actions_pb2.Concession())
        with contextlib.suppress(grpc.aio.AioRpcError):
            conceded_for_newcomer = (await old.act(action, now.sequence)).accepted
    else:
        assert ended.code() in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.ABORTED)
    await old.close()
    assert not north_cards and not conceded_for_newcomer, (
        f"the departed player's stream was shown the newcomer's cards: {bool(north_cards)}; "
        f"it conceded the match for the newcomer: {conceded_for_newcomer}"
    )


@pytest.mark.asyncio
async def test_a_late_leave_never_frees_a_seat_someone_else_took(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two LeaveTable calls with one token: the second is authenticated, then (held back
    here) runs only after the first has freed the seat and a newcomer has taken it. It must
    be refused, and the newcomer keeps the seat."""
    authenticated = asyncio.Event()
    go_on = asyncio.Event()
    real_authenticate = auth.authenticate
    held: list[bool] = []

    async def held_back(store: TableStore, token: str) -> tuple[Table, int]:
        found = await real_authenticate(store, token)
        if not held:  # only the first call through here waits
            held.append(True)
            authenticated.set()
            await go_on.wait()
        return found

    table_id = (await client.create_table(Rules())).table.table_id
    leaver = await client.join(table_id, seat=cards_pb2.SEAT_NORTH, name="leaver")
    metadata = ((TOKEN_KEY, leaver.seat_token),)
    monkeypatch.setattr(lobby, "authenticate", held_back)
    late = asyncio.ensure_future(
        client.lobby.LeaveTable(lobby_pb2.LeaveTableRequest(), metadata=metadata)
    )
    await asyncio.wait_for(authenticated.wait(), 10)
    await client.lobby.LeaveTable(lobby_pb2.LeaveTableRequest(), metadata=metadata)
    newcomer = await client.join(table_id, seat=cards_pb2.SEAT_NORTH, name="newcomer")
    assert newcomer.seat == cards_pb2.SEAT_NORTH
    go_on.set()
    outcome = await asyncio.gather(late, return_exceptions=True)
    table = await get(client, table_id)
    assert table.seats[0].occupied and table.seats[0].player_name == "newcomer", outcome
    assert isinstance(outcome[0], grpc.aio.AioRpcError), outcome
    assert outcome[0].code() == grpc.StatusCode.UNAUTHENTICATED, outcome


@pytest.mark.asyncio
async def test_a_stream_that_starts_after_its_seat_was_given_up_gets_no_snapshot(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stream is opened (its token still good), but sends `start` only after the player
    left and a newcomer's match was dealt: it must get no view of the newcomer's cards."""
    authenticated: list[tuple[Table, int, bytes]] = []
    real_seat_holder = auth.seat_holder

    async def noted(*arguments: Any) -> tuple[Table, int, bytes]:
        found = await real_seat_holder(*arguments)
        authenticated.append(found)
        return found

    table_id = (await client.create_table(Rules())).table.table_id
    leaver = await client.join(table_id, seat=cards_pb2.SEAT_NORTH, name="leaver")
    monkeypatch.setattr(play, "seat_holder", noted)
    early = client.seat_stream(leaver.seat_token)
    await wait_for_state(lambda: authenticated, "the server authenticated the early stream")
    await client.lobby.LeaveTable(
        lobby_pb2.LeaveTableRequest(), metadata=((TOKEN_KEY, leaver.seat_token),)
    )
    await client.join(table_id, seat=cards_pb2.SEAT_NORTH, name="newcomer")
    await client.seat_all(table_id, 3)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await early.start()
    assert refused.value.code() is grpc.StatusCode.UNAUTHENTICATED
    assert not early.received, "nothing, not even a snapshot, reached the old stream"
