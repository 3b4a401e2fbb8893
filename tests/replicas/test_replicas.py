"""Several server replicas on one PostgreSQL event log, as operators run them to scale out.

Each replica is a real SpadesServer on its own port with its own connection pool; clients of
one table are spread across them. Skipped, saying why, when no PostgreSQL server answers at
SPADES_TEST_POSTGRES_DSN.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import cast

import grpc
import pytest

from spades.engine import Clock, MatchState, Rules
from spades.engine import events as ev
from spades.records import events_of
from spades.v1 import actions_pb2, lobby_pb2, play_pb2
from tests.support.backends import (
    NATS_URL,
    require_nats,
)
from tests.support.clients import Client, SeatStream, clients
from tests.support.seats import assert_each_move_timed_out_once, own_moves, play_until_over
from tests.support.servers import log_events, replicas

pytestmark = pytest.mark.asyncio


@pytest.fixture(params=["notify", "nats"])
def fanout(request: pytest.FixtureRequest, postgres: None) -> str:
    """How the replicas of the test hear of each other's commits: "" LISTEN/NOTIFY, or a NATS
    URL. Every test of this module runs on both (other modules' replicas on LISTEN/NOTIFY)."""
    if request.param == "nats":
        require_nats()
        return NATS_URL
    return ""


def sequences(stream: SeatStream) -> list[int]:
    return [message.event.sequence for message in stream.events()]


async def test_seats_on_different_replicas_see_every_event_in_order(
    tmp_path: Path, fanout: str
) -> None:
    async with replicas(tmp_path, 2, fanout=fanout) as servers, clients(servers) as (a, b):
        table_id = (await a.create_table(Rules(max_hands=1))).table.table_id
        tokens = await b.seat_all(table_id)
        streams = [
            (a if seat % 2 == 0 else b).seat_stream(token) for seat, token in enumerate(tokens)
        ]
        snapshots = [await stream.start(after_sequence=1) for stream in streams]
        assert all(snapshot.sequence == 1 for snapshot in snapshots)
        rng = random.Random(11)
        await asyncio.wait_for(
            asyncio.gather(*(play_until_over(stream, rng) for stream in streams)), 120
        )
        record = (await a.play.GetRecord(play_pb2.GetRecordRequest(table_id=table_id))).record
        last = record.events[-1].sequence
        for stream in streams:
            assert sequences(stream) == list(range(2, last + 1))
        summaries = [
            (await client.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id))).table
            for client in (a, b)
        ]
        assert summaries[0].status == summaries[1].status == lobby_pb2.TABLE_STATUS_FINISHED
        assert list(summaries[0].scores) == list(summaries[1].scores)
        for stream in streams:
            await stream.close()


async def test_actions_racing_through_two_replicas_apply_once(tmp_path: Path, fanout: str) -> None:
    async with replicas(tmp_path, 2, fanout=fanout) as servers, clients(servers) as (a, b):
        table_id = (await a.create_table(Rules(max_hands=1))).table.table_id
        tokens = await a.seat_all(table_id)
        first_stream = a.seat_stream(tokens[0])
        seat = (await first_stream.start()).view.turn - 1
        await first_stream.close()
        # The seat on turn has one stream on each replica, and both answer the same prompt.
        on_a, on_b = a.seat_stream(tokens[seat]), b.seat_stream(tokens[seat])
        await on_a.start()
        await on_b.start()
        prompt = (await on_a.next_of("prompt")).prompt
        first, second = list(prompt.legal_actions)[:2]
        results = await asyncio.gather(
            on_a.act(first, prompt.sequence), on_b.act(second, prompt.sequence)
        )
        assert sorted(result.accepted for result in results) == [False, True]
        refused = next(result for result in results if not result.accepted)
        assert refused.code in (
            grpc.StatusCode.ABORTED.value[0],
            grpc.StatusCode.FAILED_PRECONDITION.value[0],
        )
        record = (await b.play.GetRecord(play_pb2.GetRecordRequest(table_id=table_id))).record
        bids = [event for event in record.events if event.WhichOneof("kind") == "bid_made"]
        assert len(bids) == 1
        await on_a.close()
        await on_b.close()


async def test_the_clock_fires_once_across_replicas(tmp_path: Path, fanout: str) -> None:
    fast = Rules(max_hands=1, clock=Clock(turn_millis=40, extension_millis=40))
    async with replicas(tmp_path, 2, fanout=fanout) as servers, clients(servers) as (a, b):
        table_id = (await a.create_table(fast)).table.table_id
        await b.seat_all(table_id)
        for _ in range(300):
            table = (await a.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id))).table
            if table.status == lobby_pb2.TABLE_STATUS_FINISHED:
                break
            await asyncio.sleep(0.1)
        record = (await b.play.GetRecord(play_pb2.GetRecordRequest(table_id=table_id))).record
        kinds = [event.WhichOneof("kind") for event in record.events]
        assert kinds[-1] == "seed_revealed"
        assert_each_move_timed_out_once(kinds)
        assert "seat_substituted" not in kinds  # no house bots here (house_bots=0)


async def test_an_absent_player_gets_one_substitute_across_replicas(
    tmp_path: Path, fanout: str
) -> None:
    rules = Rules(max_hands=1, clock=Clock(turn_millis=500, extension_millis=0))
    settings = {"house_bots": 8, "substitute_after_timeouts": 2, "disconnect_grace": 0}
    async with (
        replicas(tmp_path, 2, fanout=fanout, **settings) as servers,
        clients(servers) as (a, b),
    ):
        table_id = (await a.create_table(rules)).table.table_id
        await b.seat_all(table_id)  # nobody ever connects: every seat times out twice
        for _ in range(600):
            table = (await a.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id))).table
            if table.status == lobby_pb2.TABLE_STATUS_FINISHED:
                break
            await asyncio.sleep(0.1)
        record = (await b.play.GetRecord(play_pb2.GetRecordRequest(table_id=table_id))).record
        kinds = [event.WhichOneof("kind") for event in record.events]
        assert kinds[-1] == "seed_revealed"
        substituted = [
            event.seat_substituted.seat
            for event in record.events
            if event.WhichOneof("kind") == "seat_substituted"
        ]
        # Both replicas saw every run of two timeouts, and each run brought one substitute (a
        # second, from the other replica, would come with the run already ended): every seat got
        # one, who then played its turns. (A substitute slowed past a 500 ms turn by a loaded
        # machine times out too, and two in a row bring it a successor: no exact count holds.)
        assert sorted(set(substituted)) == [1, 2, 3, 4]
        state = MatchState()
        for event in events_of(record):
            if isinstance(event, ev.SeatSubstituted):
                assert state.timeout_streaks[event.seat] >= 2, "a substitute without a run"
            state.evolve(event)
        assert state.is_over
        assert sorted(own_moves(record.events)) == [1, 2, 3, 4], own_moves(record.events)
        playing = sum(len(server.house_bots.substitutes) for server in servers)
        assert playing <= 4


async def test_a_replica_dies_and_its_clients_continue_on_another(
    tmp_path: Path, fanout: str
) -> None:
    async with replicas(tmp_path, 2, fanout=fanout) as servers, clients(servers) as (a, b):
        table_id = (await b.create_table(Rules(max_hands=1))).table.table_id
        tokens = await b.seat_all(table_id)
        streams = [a.seat_stream(token) for token in tokens]
        for stream in streams:
            await stream.start(after_sequence=1)
        rng = random.Random(4)
        played = [0]

        async def play_until_cut(stream: SeatStream) -> None:
            # Answer prompts through replica A until it goes away under the stream.
            try:
                while True:
                    message = await stream.next()
                    if message.WhichOneof("kind") == "prompt" and played[0] < 12:
                        action = rng.choice(list(message.prompt.legal_actions))
                        await stream.act(action, message.prompt.sequence)
                        played[0] += 1
            except (grpc.aio.AioRpcError, EOFError):
                return

        tasks = [asyncio.create_task(play_until_cut(stream)) for stream in streams]
        while played[0] < 12:
            await asyncio.sleep(0.05)
        await servers[0].stop()  # mid-hand: its streams end with UNAVAILABLE
        await asyncio.wait_for(asyncio.gather(*tasks), 30)
        last_seen = [max(sequences(stream), default=1) for stream in streams]
        await servers[0].stop()
        moved = [b.seat_stream(token) for token in tokens]
        for stream, seen in zip(moved, last_seen, strict=True):
            await stream.start(after_sequence=seen)
        await asyncio.wait_for(asyncio.gather(*(play_until_over(s, rng) for s in moved)), 120)
        record = (await b.play.GetRecord(play_pb2.GetRecordRequest(table_id=table_id))).record
        assert record.events[-1].WhichOneof("kind") == "seed_revealed"
        for stream, seen in zip(moved, last_seen, strict=True):
            assert sequences(stream) == list(range(seen + 1, record.events[-1].sequence + 1))


async def test_an_action_id_has_one_first_result_across_replicas(
    tmp_path: Path, fanout: str
) -> None:
    """A refusal through one replica is the answer to the same id through the other (with a
    legal action this time); racing, the two replicas still give the id one result."""
    legal = actions_pb2.Action(bid=actions_pb2.Bid(kind=actions_pb2.Bid.KIND_TRICKS, tricks=3))
    illegal = actions_pb2.Action(bid=actions_pb2.Bid(kind=actions_pb2.Bid.KIND_TRICKS, tricks=99))

    async def act(
        client: Client, token: str, action_id: str, sequence: int, action: actions_pb2.Action
    ) -> play_pb2.ActionResult:
        request = play_pb2.ActRequest(
            action=play_pb2.ActionRequest(action_id=action_id, sequence=sequence, action=action)
        )
        response = await client.play.Act(request, metadata=(("spades-seat-token", token),))
        return response.result

    async with replicas(tmp_path, 2, fanout=fanout) as servers, clients(servers) as (a, b):
        table_id = (await a.create_table(Rules(max_hands=1))).table.table_id
        tokens = await a.seat_all(table_id)

        async def turn() -> tuple[str, int]:
            stream = a.play.Watch(play_pb2.WatchRequest(table_id=table_id, latest=True))
            snapshot = cast(play_pb2.WatchResponse, await stream.read()).snapshot
            stream.cancel()
            return tokens[snapshot.view.turn - 1], snapshot.sequence

        token, sequence = await turn()
        refused = await act(a, token, "first", sequence, illegal)
        assert not refused.accepted and refused.reason
        for client in (b, a):
            again = await act(client, token, "first", sequence, legal)
            assert (again.accepted, again.code, again.reason) == (
                False,
                refused.code,
                refused.reason,
            ), again
        assert (await turn())[1] == sequence, "a refusal takes no version"

        for number in range(6):  # the same id, a refusal and an acceptance racing
            token, sequence = await turn()
            action_id = f"race-{number}"
            results = await asyncio.gather(
                act(a, token, action_id, sequence, illegal if number % 2 else legal),
                act(b, token, action_id, sequence, legal if number % 2 else illegal),
            )
            outcomes = {(r.accepted, r.sequence, r.code, r.reason) for r in results}
            assert len(outcomes) == 1, results
            logged = await log_events(servers[1], table_id)
            applied = [event for event in logged if event.action_id == action_id]
            assert len(applied) == (1 if results[0].accepted else 0), (applied, results)


async def test_a_table_made_on_one_replica_is_found_at_once_on_another(
    tmp_path: Path, fanout: str
) -> None:
    """The other replica's lobby may not have folded the table yet: GetTable waits for it
    rather than answer NOT_FOUND for a table the log has (and a made-up id is still
    NOT_FOUND)."""
    async with replicas(tmp_path, 2, fanout=fanout) as servers, clients(servers) as (here, there):
        for _ in range(10):
            table_id = (await here.create_table(Rules())).table.table_id
            found = await there.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id))
            assert found.table.table_id == table_id
        with pytest.raises(grpc.aio.AioRpcError) as missing:
            await there.lobby.GetTable(lobby_pb2.GetTableRequest(table_id="0badc0de"))
        assert missing.value.code() == grpc.StatusCode.NOT_FOUND
