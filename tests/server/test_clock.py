"""The turn clock: deadlines come from the log, the automatic action happens exactly once."""

from __future__ import annotations

import asyncio
import time

import grpc
import pytest

from spades.engine import Clock, Rules
from spades.v1 import actions_pb2, lobby_pb2, play_pb2
from spades_server.app.server import SpadesServer
from tests.support.backends import Storages
from tests.support.clients import Client
from tests.support.seats import assert_each_move_timed_out_once
from tests.support.servers import running_server

FAST = Rules(max_hands=1, clock=Clock(turn_millis=30, extension_millis=30))


async def _events(client: Client, table_id: str) -> list[str]:
    record = (await client.play.GetRecord(play_pb2.GetRecordRequest(table_id=table_id))).record
    return [str(event.WhichOneof("kind")) for event in record.events]


@pytest.mark.asyncio
async def test_a_silent_table_is_played_by_the_clock_to_the_end(storage: Storages) -> None:
    # No substitutes (they have tests of their own, tests/server/test_absent.py): the clock
    # alone plays every turn.
    async with (
        running_server(storage("silent"), substitute_after_timeouts=0) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        client = Client(channel)
        table_id = (await client.create_table(FAST)).table.table_id
        await client.seat_all(table_id)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            request = lobby_pb2.GetTableRequest(table_id=table_id)
            table = (await client.lobby.GetTable(request)).table
            if table.status == lobby_pb2.TABLE_STATUS_FINISHED:
                break
            await asyncio.sleep(0.2)
        kinds = await _events(client, table_id)
    assert kinds[-2:] == ["match_ended", "seed_revealed"]
    assert_each_move_timed_out_once(kinds)
    assert "seat_substituted" not in kinds


@pytest.mark.asyncio
async def test_the_prompt_carries_the_deadline_and_the_extension_moves_it(client: Client) -> None:
    rules = Rules(max_hands=1, clock=Clock(turn_millis=5_000, extension_millis=7_000))
    table_id = (await client.create_table(rules)).table.table_id
    tokens = await client.seat_all(table_id)
    streams = [client.seat_stream(token) for token in tokens]
    snapshots = [await stream.start() for stream in streams]
    turn = snapshots[0].view.turn - 1
    prompt = (await streams[turn].next_of("prompt")).prompt
    first_deadline = prompt.deadline.ToNanoseconds() / 1e9
    assert 4 < first_deadline - time.time() <= 5.1
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
async def test_a_deadline_survives_a_restart(server: SpadesServer, storage: Storages) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        client = Client(channel)
        table_id = (await client.create_table(FAST)).table.table_id
        await client.seat_all(table_id)
    await server.stop()
    await asyncio.sleep(0.3)  # the first deadline passes while no server runs
    async with running_server(storage(), substitute_after_timeouts=0) as restarted:
        await asyncio.sleep(1.0)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{restarted.port}") as channel:
            kinds = await _events(Client(channel), table_id)
    assert kinds.count("turn_timed_out") >= 2
    # Each timeout is followed by exactly its automatic action's events, never twice.
    timeouts = [i for i, kind in enumerate(kinds) if kind == "turn_timed_out"]
    assert all(kinds[i + 1] != "turn_timed_out" for i in timeouts)
