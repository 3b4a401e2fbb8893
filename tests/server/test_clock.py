"""The turn clock: deadlines come from the log, the automatic action happens exactly once."""

from __future__ import annotations

import grpc
import pytest

from spades.engine import Clock, Rules
from spades.v1 import actions_pb2, play_pb2
from spades_server.app.server import SpadesServer
from tests.support.backends import Storages
from tests.support.clients import Client
from tests.support.seats import assert_each_move_timed_out_once
from tests.support.servers import running_server
from tests.support.time import TURN_CLOCK, ManualClock, wait_for_state

#: A turn's time (seconds): as long as a real one, as the tests move the clock.
TURN = 30.0
#: Neither timeouts in a row nor a minute without a stream bring a substitute.
NO_SUBSTITUTES: dict[str, object] = {"substitute_after_timeouts": 0, "disconnect_grace": 0}
SLOW = Rules(max_hands=1, clock=Clock(turn_millis=int(TURN * 1000), extension_millis=30_000))


async def _events(client: Client, table_id: str) -> list[str]:
    record = (await client.play.GetRecord(play_pb2.GetRecordRequest(table_id=table_id))).record
    return [str(event.WhichOneof("kind")) for event in record.events]


async def _turn_passes(clock: ManualClock, server: SpadesServer, table_id: str) -> None:
    """Move the clock one turn on and wait until the turn clock has acted on it (it sleeps
    until the next deadline, or the match is over)."""
    clock.advance(TURN)
    await wait_for_state(
        lambda: clock.sleepers_named(TURN_CLOCK) or server.store.cached(table_id).finished,
        "the turn clock timed the turn out",
    )


@pytest.mark.asyncio
async def test_a_silent_table_is_played_by_the_clock_to_the_end(storage: Storages) -> None:
    # No substitutes (they have tests of their own, tests/server/test_absent.py): the clock
    # alone plays every turn.
    clock = ManualClock()
    async with (
        running_server(storage("silent"), clock, **NO_SUBSTITUTES) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        client = Client(channel)
        table_id = (await client.create_table(SLOW)).table.table_id
        await client.seat_all(table_id)
        for _ in range(1000):  # 56 turns a hand; more hands if the hand limit leaves a tie
            if server.store.cached(table_id).finished:
                break
            await _turn_passes(clock, server, table_id)
        kinds = await _events(client, table_id)
    assert kinds[-2:] == ["match_ended", "seed_revealed"]
    assert_each_move_timed_out_once(kinds)
    assert "seat_substituted" not in kinds


@pytest.mark.asyncio
async def test_the_prompt_carries_the_deadline_and_the_extension_moves_it(
    storage: Storages,
) -> None:
    clock = ManualClock()
    async with (
        running_server(storage(), clock) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        await _deadline_and_extension(Client(channel), clock)


async def _deadline_and_extension(client: Client, clock: ManualClock) -> None:
    rules = Rules(max_hands=1, clock=Clock(turn_millis=5_000, extension_millis=7_000))
    table_id = (await client.create_table(rules)).table.table_id
    tokens = await client.seat_all(table_id)
    streams = [client.seat_stream(token) for token in tokens]
    snapshots = [await stream.start() for stream in streams]
    turn = snapshots[0].view.turn - 1
    prompt = (await streams[turn].next_of("prompt")).prompt
    first_deadline = prompt.deadline.ToNanoseconds() / 1e9
    # The turn started now (the clock stands still), and lasts the table's 5 s.
    assert first_deadline == pytest.approx(clock.now() + 5, abs=1e-6)
    claim = actions_pb2.Action(extension_claim=actions_pb2.ExtensionClaim())
    result = await streams[turn].act(claim, prompt.sequence)
    assert result.accepted, result
    extended = (await streams[turn].next_of("prompt")).prompt
    assert extended.sequence == prompt.sequence + 1
    assert extended.deadline.ToNanoseconds() / 1e9 == pytest.approx(first_deadline + 7, abs=0.01)
    again = await streams[turn].act(claim, extended.sequence)
    assert not again.accepted and "already claimed" in again.reason
    for stream in streams:
        await stream.close()


@pytest.mark.asyncio
async def test_a_deadline_survives_a_restart(storage: Storages) -> None:
    """A turn's deadline is its start's stored time plus the turn's time: the clock moves to
    just before the first deadline while no server runs, and the restarted server times the
    turn out one second later (a deadline counted from the restart would be 30 s away)."""
    clock = ManualClock()
    async with (
        running_server(storage(), clock, **NO_SUBSTITUTES) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        table_id = (await Client(channel).create_table(SLOW)).table.table_id
        await Client(channel).seat_all(table_id)
    clock.advance(TURN - 1)  # while no server runs
    async with (
        running_server(storage(), clock, **NO_SUBSTITUTES) as restarted,
        grpc.aio.insecure_channel(f"127.0.0.1:{restarted.port}") as channel,
    ):
        client = Client(channel)
        await clock.sleeping(TURN_CLOCK)  # the restarted turn clock waits for the deadline
        assert "turn_timed_out" not in await _events(client, table_id)
        clock.advance(1.5)
        await clock.sleeping(TURN_CLOCK)  # it timed the turn out, and waits for the next
        assert (await _events(client, table_id)).count("turn_timed_out") == 1
        await _turn_passes(clock, restarted, table_id)
        kinds = await _events(client, table_id)
    assert kinds.count("turn_timed_out") >= 2
    # Each timeout is followed by exactly its automatic action's events, never twice.
    timeouts = [i for i, kind in enumerate(kinds) if kind == "turn_timed_out"]
    assert all(kinds[i + 1] != "turn_timed_out" for i in timeouts)
