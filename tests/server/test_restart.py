"""Restart: stop the server with matches in progress, start a new one on the same log (the
SQLite file, or the PostgreSQL schema); the lobby is rebuilt as it was, clients resume with
their tokens and last sequence numbers, and the matches go on to the end."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field

import grpc
import pytest

from spades import protocol
from spades.engine import MatchState, Rules
from spades.v1 import actions_pb2, lobby_pb2, play_pb2, view_pb2
from tests.support.backends import Storages
from tests.support.clients import TOKEN_KEY, Client, SeatStream, current_view, rpc_error
from tests.support.seats import play_turns
from tests.support.servers import lobby_caught_up, log_events, new_server


@dataclass
class Match:
    table_id: str
    rules: Rules
    tokens: list[str]
    streams: dict[int, SeatStream] = field(default_factory=dict)
    #: The last sequence number each seat's client saw.
    last_seen: dict[int, int] = field(default_factory=dict)


def cards_played(now: play_pb2.Snapshot) -> int:
    return len(now.view.completed_tricks) * len(now.view.hand_sizes) + len(now.view.current_trick)


async def drain_until_closed(stream: SeatStream) -> grpc.aio.AioRpcError:
    """Read what is left on a stream the server is closing; returns the status it ends with."""
    while True:
        try:
            await stream.next()
        except grpc.aio.AioRpcError as error:
            return error


def last_sequence(stream: SeatStream) -> int:
    seen = [m.snapshot.sequence for m in stream.received if m.WhichOneof("kind") == "snapshot"]
    seen += [m.event.sequence for m in stream.received if m.WhichOneof("kind") == "event"]
    return max(seen)


async def listing(client: Client, private_ids: list[str]) -> list[lobby_pb2.Table]:
    listed = await client.lobby.ListTables(lobby_pb2.ListTablesRequest(page_size=100))
    private = [
        (await client.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id))).table
        for table_id in private_ids
    ]
    return [*listed.tables, *private]


@pytest.mark.asyncio
async def test_matches_go_on_after_a_restart(storage: Storages) -> None:
    database = storage()
    rng = random.Random(8)
    first = new_server(database, shutdown_grace=2.0)
    await first.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{first.port}")
    client = Client(channel)

    matches: list[Match] = []
    variations = [
        Rules(max_hands=2),
        Rules(players=3, jokers=True, max_hands=1),
        Rules(blind_nil=True, blind_nil_deficit=0, blind_nil_pass_cards=2, max_hands=1),
    ]
    for number, rules in enumerate(variations):
        table_id = (await client.create_table(rules, name=f"match {number}")).table.table_id
        tokens = await client.seat_all(table_id, rules.players)
        match = Match(table_id, rules, tokens)
        for seat, token in enumerate(tokens):
            match.streams[seat] = client.seat_stream(token)
            await match.streams[seat].start()
        target = 3 + 4 * number
        await play_turns(
            client,
            table_id,
            match.streams,
            rng,
            until=lambda now, target=target: (
                now.view.phase == view_pb2.PHASE_PLAYING and cards_played(now) >= target
            ),
        )
        matches.append(match)

    # An action whose id will be repeated after the restart.
    repeated = matches[0]
    now = await current_view(client, repeated.table_id)
    turn = protocol.seat_from_proto(now.view.turn)
    prompt = (await repeated.streams[turn].next_of("prompt")).prompt
    while prompt.sequence != now.sequence:
        prompt = (await repeated.streams[turn].next_of("prompt")).prompt
    action = prompt.legal_actions[0]
    first_result = await repeated.streams[turn].act(action, prompt.sequence, "before-restart")
    assert first_result.accepted

    # A table still waiting for players (one private), and a finished one.
    waiting = (await client.create_table(Rules(), name="waiting")).table.table_id
    waiting_tokens = await client.seat_all(waiting, 2)
    private = await client.create_table(Rules(target_score=300), name="private", private=True)
    private_tokens = await client.seat_all(private.table.table_id, 1, join_code=private.join_code)
    finished = (await client.create_table(Rules(), name="finished")).table.table_id
    finished_tokens = await client.seat_all(finished)
    conceding = client.seat_stream(finished_tokens[2])
    await conceding.start()
    sequence = (await current_view(client, finished)).sequence
    concede = actions_pb2.Action(concession=actions_pb2.Concession())
    assert (await conceding.act(concede, sequence)).accepted
    await conceding.close()

    await lobby_caught_up(first)
    before = await listing(client, [private.table.table_id])
    assert {table.status for table in before} == {
        lobby_pb2.TABLE_STATUS_WAITING,
        lobby_pb2.TABLE_STATUS_PLAYING,
        lobby_pb2.TABLE_STATUS_FINISHED,
    }

    # Stop with the streams open: each ends with a status the client can act on.
    await asyncio.wait_for(first.stop(), 10)
    for match in matches:
        for seat, stream in match.streams.items():
            error = await drain_until_closed(stream)
            assert error.code() == grpc.StatusCode.UNAVAILABLE, (error.code(), error.details())
            match.last_seen[seat] = last_sequence(stream)
    await channel.close(None)

    second = new_server(database, shutdown_grace=2.0)
    await second.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{second.port}") as channel:
            client = Client(channel)
            assert await listing(client, [private.table.table_id]) == before

            for match in matches:
                logged = await log_events(second, match.table_id)
                for seat, token in enumerate(match.tokens):
                    stream = client.seat_stream(token)
                    snapshot = await stream.start(after_sequence=match.last_seen[seat])
                    assert snapshot.sequence == match.last_seen[seat]
                    match.streams[seat] = stream
                    # It gets exactly what it missed.
                    while not stream.events() or stream.events()[-1].event.sequence < len(logged):
                        if match.last_seen[seat] == len(logged):
                            break
                        await stream.next()
                    missed = [m.event.sequence for m in stream.events()]
                    assert missed == list(range(match.last_seen[seat] + 1, len(logged) + 1))

            # The repeated action id still gets its first result, and writes nothing.
            version = await second.log.stream_version(repeated.table_id)
            again = await repeated.streams[turn].act(action, prompt.sequence, "before-restart")
            assert again.accepted and again.sequence == first_result.sequence
            assert await second.log.stream_version(repeated.table_id) == version

            for match in matches:
                final = await play_turns(client, match.table_id, match.streams, rng)
                assert final.view.phase == view_pb2.PHASE_ENDED
                logged = await log_events(second, match.table_id)
                state = MatchState.from_events(protocol.event_from_proto(e) for e in logged)
                assert state.is_over
                await lobby_caught_up(second, [match.table_id])
                table = (
                    await client.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=match.table_id))
                ).table
                assert table.status == lobby_pb2.TABLE_STATUS_FINISHED
                assert list(table.scores) == state.scores
                record = (
                    await client.play.GetRecord(play_pb2.GetRecordRequest(table_id=match.table_id))
                ).record
                assert record.seed and len(record.events) == len(logged)
                for stream in match.streams.values():
                    await stream.close()

            # The waiting tables' seat tokens still work; their seats can still be filled.
            left = await client.lobby.LeaveTable(
                lobby_pb2.LeaveTableRequest(),
                metadata=((TOKEN_KEY, waiting_tokens[0]),),
            )
            assert left.table_id == waiting
            error = await rpc_error(
                client.lobby.LeaveTable(
                    lobby_pb2.LeaveTableRequest(),
                    metadata=((TOKEN_KEY, waiting_tokens[0]),),
                )
            )
            assert error.code() == grpc.StatusCode.UNAUTHENTICATED
            await client.seat_all(waiting, 3)
            await client.seat_all(private.table.table_id, 3, join_code=private.join_code)
            for table_id in (waiting, private.table.table_id):
                table = (
                    await client.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id))
                ).table
                assert table.status == lobby_pb2.TABLE_STATUS_PLAYING
            stream = client.seat_stream(private_tokens[0])
            assert (await stream.start()).view.phase != view_pb2.PHASE_WAITING_FOR_PLAYERS
            await stream.close()
    finally:
        await second.stop()
