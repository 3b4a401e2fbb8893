"""Every bad input gets its precise gRPC status and a reason, and writes nothing."""

from __future__ import annotations

import random
import uuid
from collections.abc import Awaitable, Callable

import grpc
import pytest

from spades import protocol
from spades.engine import Rules
from spades.v1 import (
    actions_pb2,
    cards_pb2,
    lobby_pb2,
    play_pb2,
    rules_pb2,
    view_pb2,
)
from spades_server.app.server import SpadesServer
from tests.support.clients import TOKEN_KEY, Client, current_view, rpc_error, stream_error
from tests.support.refusals import assert_status, nothing_written
from tests.support.seats import CONCEDE, bid, heart_follow_seed, play, play_turns
from tests.support.servers import create_admin_table

Code = grpc.StatusCode


def assert_refused(result: play_pb2.ActionResult, code: grpc.StatusCode, *reason: str) -> None:
    assert not result.accepted, result
    assert result.code == code.value[0], result
    assert result.reason, result
    for part in reason:
        assert part in result.reason, (part, result.reason)


START = play_pb2.PlayRequest(start=play_pb2.StartPlay())


# ------------------------------------------------------------------------------ CreateTable

BAD_RULES = [
    (rules_pb2.RuleSet(players=5), "rules.players"),
    (rules_pb2.RuleSet(players=2), "rules.players"),
    (rules_pb2.RuleSet(target_score=50), "rules.target_score"),
    (rules_pb2.RuleSet(target_score=1001), "rules.target_score"),
    (rules_pb2.RuleSet(jokers=True, two_of_clubs_leads=True), "rules.two_of_clubs_leads"),
    (rules_pb2.RuleSet(blind_nil=True, nil_disabled=True), "rules.blind_nil"),
    (rules_pb2.RuleSet(blind_nil=True, blind_nil_pass_cards=1), "rules.blind_nil_pass_cards"),
    (rules_pb2.RuleSet(blind_nil_pass_cards=2), "rules.blind_nil_pass_cards"),
    (
        rules_pb2.RuleSet(players=3, blind_nil=True, blind_nil_pass_cards=2),
        "rules.blind_nil_pass_cards",
    ),
    (
        rules_pb2.RuleSet(nil_disabled=True, nil_tricks_count_for_partner=True),
        "rules.nil_tricks_count_for_partner",
    ),
    (rules_pb2.RuleSet(minimum_team_bid=14), "rules.minimum_team_bid"),
    (rules_pb2.RuleSet(players=3, minimum_team_bid=4), "rules.minimum_team_bid"),
    (rules_pb2.RuleSet(loss_threshold=100), "rules.loss_threshold"),
    (rules_pb2.RuleSet(direction=7), "rules.direction"),  # type: ignore[arg-type]
]


@pytest.mark.asyncio
@pytest.mark.parametrize(("rules", "field"), BAD_RULES, ids=[field for _, field in BAD_RULES])
async def test_create_table_with_invalid_rules_names_the_field(
    client: Client, server: SpadesServer, rules: rules_pb2.RuleSet, field: str
) -> None:
    async with nothing_written(server, client):
        error = await rpc_error(
            client.lobby.CreateTable(lobby_pb2.CreateTableRequest(name="bad", rules=rules))
        )
        assert_status(error, Code.INVALID_ARGUMENT, f"{field}:")


@pytest.mark.asyncio
@pytest.mark.parametrize("name", ["", "   ", "x" * 65, "two\nlines", "bell\x07", "del\x7f"])
async def test_create_table_with_a_bad_name(
    client: Client, server: SpadesServer, name: str
) -> None:
    async with nothing_written(server, client):
        error = await rpc_error(client.lobby.CreateTable(lobby_pb2.CreateTableRequest(name=name)))
        assert_status(error, Code.INVALID_ARGUMENT, "table name")


# ------------------------------------------------------------------------------ JoinTable


@pytest.mark.asyncio
async def test_join_table_refusals(client: Client, server: SpadesServer) -> None:
    table_id = (await client.create_table(Rules())).table.table_id
    three = (await client.create_table(Rules(players=3))).table.table_id
    await client.join(table_id, seat=cards_pb2.SEAT_NORTH)

    async with nothing_written(server, client):
        error = await rpc_error(client.join("no-such-table"))
        assert_status(error, Code.NOT_FOUND, "no-such-table")

    async with nothing_written(server, client):
        error = await rpc_error(client.join(""))
        assert_status(error, Code.INVALID_ARGUMENT, "table_id")

    async with nothing_written(server, client, table_id):
        error = await rpc_error(client.join(table_id, seat=cards_pb2.SEAT_NORTH))
        assert_status(error, Code.FAILED_PRECONDITION, "North is already taken")

    async with nothing_written(server, client, three):
        error = await rpc_error(client.join(three, seat=cards_pb2.SEAT_WEST))
        assert_status(error, Code.INVALID_ARGUMENT, "3 seats")

    async with nothing_written(server, client, table_id):
        error = await rpc_error(client.join(table_id, seat=9))
        assert_status(error, Code.INVALID_ARGUMENT, "seat")

    for name in ("", "  ", "n" * 33, "tab\there"):
        async with nothing_written(server, client, table_id):
            error = await rpc_error(client.join(table_id, name))
            assert_status(error, Code.INVALID_ARGUMENT, "player name")


@pytest.mark.asyncio
async def test_join_a_full_or_started_table(client: Client, server: SpadesServer) -> None:
    table_id = (await client.create_table(Rules())).table.table_id
    await client.seat_all(table_id)  # the fourth seat starts the match
    for seat in (cards_pb2.SEAT_UNSPECIFIED, cards_pb2.SEAT_EAST):
        async with nothing_written(server, client, table_id):
            error = await rpc_error(client.join(table_id, seat=seat))
            assert_status(error, Code.FAILED_PRECONDITION, "already started")


@pytest.mark.asyncio
async def test_join_a_private_table_without_or_with_a_wrong_code(
    client: Client, server: SpadesServer
) -> None:
    created = await client.create_table(Rules(), private=True)
    table_id = created.table.table_id
    async with nothing_written(server, client, table_id):
        error = await rpc_error(client.join(table_id))
        assert_status(error, Code.PERMISSION_DENIED, "join code")
    wrong = "A" * len(created.join_code)
    async with nothing_written(server, client, table_id):
        error = await rpc_error(client.join(table_id, join_code=wrong))
        assert_status(error, Code.PERMISSION_DENIED, "not this table's join code")
    await client.join(table_id, join_code=created.join_code)


# ------------------------------------------------------------------------------ LeaveTable


@pytest.mark.asyncio
async def test_leave_table_refusals(client: Client, server: SpadesServer) -> None:
    table_id = (await client.create_table(Rules())).table.table_id
    other_id = (await client.create_table(Rules())).table.table_id
    token = (await client.join(table_id)).seat_token
    _, secret = token.split(".", 1)

    async with nothing_written(server, client, table_id):
        error = await rpc_error(client.lobby.LeaveTable(lobby_pb2.LeaveTableRequest()))
        assert_status(error, Code.UNAUTHENTICATED, TOKEN_KEY)

    bad_tokens = [
        "",
        "garbage",
        f"{table_id}.short",
        f"{table_id}.{'x' * len(secret)}",  # well formed, not the seat's
        f"{other_id}.{secret}",  # the secret, for another table
        f"no-such-table.{secret}",
        token + "x",
    ]
    for bad in bad_tokens:
        async with nothing_written(server, client, table_id):
            error = await rpc_error(
                client.lobby.LeaveTable(
                    lobby_pb2.LeaveTableRequest(),
                    metadata=((TOKEN_KEY, bad),),
                )
            )
            assert_status(error, Code.UNAUTHENTICATED)

    await client.seat_all(table_id, 3)  # the match starts
    async with nothing_written(server, client, table_id):
        error = await rpc_error(
            client.lobby.LeaveTable(
                lobby_pb2.LeaveTableRequest(),
                metadata=((TOKEN_KEY, token),),
            )
        )
        assert_status(error, Code.FAILED_PRECONDITION, "started")


# ------------------------------------------------------------------------------ Play streams


@pytest.mark.asyncio
async def test_play_stream_refusals(client: Client, server: SpadesServer) -> None:
    table_id = (await client.create_table(Rules())).table.table_id
    token = (await client.join(table_id)).seat_token
    version = await server.log.stream_version(table_id)

    async with nothing_written(server, client, table_id):
        error = await stream_error(lambda: client.play.Play(), START)  # type: ignore[call-arg]
        assert_status(error, Code.UNAUTHENTICATED, TOKEN_KEY)

    for bad in ("garbage", f"{table_id}.{'y' * 32}", f"nowhere.{'y' * 32}"):
        async with nothing_written(server, client, table_id):
            error = await stream_error(
                lambda token=bad: client.play.Play(metadata=((TOKEN_KEY, token),)),  # type: ignore[call-arg]
                START,
            )
            assert_status(error, Code.UNAUTHENTICATED)

    first_action = play_pb2.PlayRequest(
        action=play_pb2.ActionRequest(action_id="a", sequence=version, action=bid(3))
    )
    async with nothing_written(server, client, table_id):
        error = await stream_error(client.seat_stream(token).call, first_action)
        assert_status(error, Code.INVALID_ARGUMENT, "start")

    async with nothing_written(server, client, table_id):
        error = await stream_error(client.seat_stream(token).call)  # closed without a word
        assert_status(error, Code.INVALID_ARGUMENT, "start")

    beyond = play_pb2.PlayRequest(start=play_pb2.StartPlay(after_sequence=version + 1))
    async with nothing_written(server, client, table_id):
        error = await stream_error(client.seat_stream(token).call, beyond)
        assert_status(error, Code.OUT_OF_RANGE, str(version + 1), str(version))

    # Acting before the match starts.
    stream = client.seat_stream(token)
    await stream.start()
    async with nothing_written(server, client, table_id):
        assert_refused(
            await stream.act(bid(3), version), Code.FAILED_PRECONDITION, "has not started"
        )
        assert_refused(
            await stream.act(CONCEDE, version), Code.FAILED_PRECONDITION, "has not started"
        )
    await stream.close()


@pytest.mark.asyncio
async def test_action_refusals(client: Client, server: SpadesServer) -> None:
    seed, leader, heart, wrong_card = heart_follow_seed()
    table_id = await create_admin_table(server, Rules(max_hands=1), seed=seed)
    tokens = await client.seat_all(table_id)
    streams = await client.started_streams(tokens)

    now = await current_view(client, table_id)
    assert now.view.phase == view_pb2.PHASE_BIDDING
    turn = protocol.seat_from_proto(now.view.turn)
    idle = (turn + 1) % 4
    sequence = now.sequence
    stream = streams[turn]

    async with nothing_written(server, client, table_id):
        assert_refused(
            await streams[idle].act(bid(3), sequence),
            Code.FAILED_PRECONDITION,
            "turn, not",
        )
        assert_refused(
            await stream.act(play(heart), sequence), Code.FAILED_PRECONDITION, "time for bidding"
        )
        assert_refused(await stream.act(bid(14), sequence), Code.FAILED_PRECONDITION, "0 (Nil)")
        assert_refused(
            await stream.act(actions_pb2.Action(), sequence), Code.INVALID_ARGUMENT, "no action"
        )
        unknown_card = cards_pb2.Card(suit=cards_pb2.SUIT_HEARTS, rank=20)  # type: ignore[arg-type]
        assert_refused(await stream.act(play(unknown_card), sequence), Code.INVALID_ARGUMENT)
        no_suit = cards_pb2.Card(rank=cards_pb2.RANK_ACE)
        assert_refused(await stream.act(play(no_suit), sequence), Code.INVALID_ARGUMENT)
        zero = actions_pb2.Action(bid=actions_pb2.Bid(kind=actions_pb2.Bid.KIND_TRICKS))
        assert_refused(await stream.act(zero, sequence), Code.INVALID_ARGUMENT, "tricks")
        assert_refused(
            await stream.act(actions_pb2.Action(bid=actions_pb2.Bid()), sequence),
            Code.INVALID_ARGUMENT,
            "kind",
        )
        for action_id in ("", "x" * 65):
            await stream.call.write(
                play_pb2.PlayRequest(
                    action=play_pb2.ActionRequest(
                        action_id=action_id, sequence=sequence, action=bid(3)
                    )
                )
            )
            assert_refused(await stream.act_result(action_id), Code.INVALID_ARGUMENT, "action_id")
        assert_refused(await stream.act(bid(3), sequence - 1), Code.ABORTED, "stale")
        # From the future: OUT_OF_RANGE (SEQUENCE_AHEAD), not a stale race.
        assert_refused(await stream.act(bid(3), sequence + 3), Code.OUT_OF_RANGE, "not reached")
        await stream.call.write(START)
        assert_refused(await stream.act_result(""), Code.INVALID_ARGUMENT, "start")

    # Bid round, then the leader leads a heart and the next seat does not follow.
    def not_playing(now: play_pb2.Snapshot) -> bool:
        return now.view.phase == view_pb2.PHASE_PLAYING

    now = await play_turns(client, table_id, streams, random.Random(2), until=not_playing)
    assert protocol.seat_from_proto(now.view.turn) == leader
    led = await streams[leader].act(play(heart), now.sequence)
    assert led.accepted, led
    second = (leader + 1) % 4
    now = await current_view(client, table_id)
    async with nothing_written(server, client, table_id):
        assert_refused(
            await streams[second].act(play(wrong_card), now.sequence),
            Code.FAILED_PRECONDITION,
        )
        result = await streams[second].act(play(wrong_card), now.sequence)
        assert result.reason == "you hold a heart, so you must follow hearts", result
        assert_refused(
            await streams[second].act(play(heart), now.sequence),
            Code.FAILED_PRECONDITION,
            "you do not hold the",
        )

    # The match ends by a concession: every stream ends with OK after the seed is revealed,
    # and every action (through Act now) is refused as too late.
    conceded = await streams[idle].act(CONCEDE, now.sequence)
    assert conceded.accepted, conceded
    over = await current_view(client, table_id)
    assert over.view.phase == view_pb2.PHASE_ENDED
    for seat_stream in streams.values():
        assert await seat_stream.until_end() == Code.OK
        assert seat_stream.events()[-1].event.HasField("seed_revealed")
    async with nothing_written(server, client, table_id):
        for token in tokens:
            for action, sequence in (
                (bid(3), over.sequence),
                (play(heart), over.sequence),
                (CONCEDE, over.sequence),
                (CONCEDE, over.sequence - 1),
            ):
                request = play_pb2.ActRequest(
                    action=play_pb2.ActionRequest(
                        action_id=uuid.uuid4().hex, sequence=sequence, action=action
                    )
                )
                acted = await client.play.Act(request, metadata=((TOKEN_KEY, token),))
                assert_refused(acted.result, Code.FAILED_PRECONDITION, "over")


# ------------------------------------------------------------------------------ Watch, GetTable,
# GetRecord, ListTables


@pytest.mark.asyncio
async def test_unknown_tables(client: Client, server: SpadesServer) -> None:
    async with nothing_written(server, client):
        error = await rpc_error(client.lobby.GetTable(lobby_pb2.GetTableRequest(table_id="nope")))
        assert_status(error, Code.NOT_FOUND, "nope")
        error = await rpc_error(client.play.GetRecord(play_pb2.GetRecordRequest(table_id="nope")))
        assert_status(error, Code.NOT_FOUND, "nope")
        call = client.play.Watch(play_pb2.WatchRequest(table_id="nope"))
        error = await rpc_error(call.read())
        assert_status(error, Code.NOT_FOUND, "nope")


@pytest.mark.asyncio
@pytest.mark.parametrize("method", ["GetTable", "GetRecord", "Watch"])
async def test_an_empty_table_id(client: Client, server: SpadesServer, method: str) -> None:
    """No table id at all is a client's mistake, not an internal error (UNKNOWN)."""
    calls: dict[str, Callable[[], Awaitable[object]]] = {
        "GetTable": lambda: client.lobby.GetTable(lobby_pb2.GetTableRequest()),
        "GetRecord": lambda: client.play.GetRecord(play_pb2.GetRecordRequest()),
        "Watch": lambda: client.play.Watch(play_pb2.WatchRequest()).read(),
    }
    async with nothing_written(server, client):
        error = await rpc_error(calls[method]())
    assert error.code() in (Code.INVALID_ARGUMENT, Code.NOT_FOUND), (error.code(), error.details())


@pytest.mark.asyncio
@pytest.mark.parametrize("method", ["GetTable", "GetRecord", "Watch"])
async def test_a_table_id_with_a_nul_character_is_not_found(
    client: Client, server: SpadesServer, method: str
) -> None:
    """No table has one, on either backend (PostgreSQL text cannot even hold it: the query
    fails, which once came back as UNKNOWN)."""
    table_id = "a\x00b"
    calls: dict[str, Callable[[], Awaitable[object]]] = {
        "GetTable": lambda: client.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id)),
        "GetRecord": lambda: client.play.GetRecord(play_pb2.GetRecordRequest(table_id=table_id)),
        "Watch": lambda: client.play.Watch(play_pb2.WatchRequest(table_id=table_id)).read(),
    }
    async with nothing_written(server, client):
        error = await rpc_error(calls[method]())
        assert_status(error, Code.NOT_FOUND, "there is no table")


@pytest.mark.asyncio
async def test_watch_beyond_the_log(client: Client, server: SpadesServer) -> None:
    table_id = (await client.create_table(Rules())).table.table_id
    async with nothing_written(server, client, table_id):
        call = client.play.Watch(play_pb2.WatchRequest(table_id=table_id, after_sequence=2))
        error = await rpc_error(call.read())
        assert_status(error, Code.OUT_OF_RANGE, "after_sequence 2")


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("page_size", "page_token", "reason"),
    [
        (101, "", "page_size"),
        (1000, "", "page_size"),
        (0, "abc", "page_token"),
        (0, "1.5", "page_token"),
        (0, "-1", "page_token"),
        (10, "-100", "page_token"),
    ],
)
async def test_list_tables_with_a_bad_page(
    client: Client, server: SpadesServer, page_size: int, page_token: str, reason: str
) -> None:
    for _ in range(3):
        await client.create_table(Rules())
    async with nothing_written(server, client):
        error = await rpc_error(
            client.lobby.ListTables(
                lobby_pb2.ListTablesRequest(page_size=page_size, page_token=page_token)
            )
        )
        assert_status(error, Code.INVALID_ARGUMENT, reason)
