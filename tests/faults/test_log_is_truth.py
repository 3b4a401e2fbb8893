"""The log is the truth: after a fault, each table's events replayed from scratch give the state
the server serves.

The check (``assert_log_is_truth`` in ``common.py``): for every table, the server's spectator
snapshot at its latest sequence (the first message of a Watch) equals
``view_to_proto(view(MatchState.from_events(log events), None))``, the events read straight
from the log (the SQLite file or the PostgreSQL schema: every test here runs on both) once the
server has stopped, and the served sequence is the log's last.

It ends every fault test of this folder: ``test_sigkill.py`` (SIGKILL mid-play, restart on the
same log) and ``test_slow_consumer.py`` (streams never read) call it on their tables; the two
scenarios here are the others of the issue:

- a client process that vanishes mid-stream (SIGKILL of a ``spades-bot`` process playing a
  seat), after which a fresh process resumes the seat with only its token;
- a second stream opened for a seat that is playing: the newer wins, the older is closed with
  ABORTED and a reason saying so, and the newer plays the seat to the end;
- clients that vanish with an action in flight (the stream cancelled right after the action is
  written), checked after each one: the action is applied or not, and the server serves what
  its log says either way.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spades import protocol
from spades.bot import MatchOutcome, play_match
from spades.client import Aborted, SpadesClient
from spades.engine import Rules
from spades.v1 import play_pb2
from spades_bots.random_bot import RandomBot
from tests.support.backends import Storages
from tests.support.clients import TOKEN_KEY, SeatStream
from tests.support.faults import (
    RecordingClient,
    action_ids_by_seat,
    assert_contiguous,
    assert_log_is_truth,
    read_log,
    seat_four,
    sequence_reaches,
    served_snapshot,
    served_snapshots,
)
from tests.support.processes import LOOPBACK, clean_environment
from tests.support.servers import running_server

RULES = Rules(max_hands=2)
MATCH_BOUND = 60.0
#: Clients that vanish with an action in flight, one after another.
IN_FLIGHT = 12
#: Seconds the server may take to decide an action whose client vanished.
SETTLE_BOUND = 10.0
SPADES_BOT = Path(sys.executable).with_name("spades-bot")


def bots_for(
    client: SpadesClient, table_id: str, tokens: list[str], seats: range
) -> list[asyncio.Future[MatchOutcome]]:
    return [
        asyncio.ensure_future(play_match(client, RandomBot(seat), tokens[seat], table_id=table_id))
        for seat in seats
    ]


@pytest.mark.asyncio
async def test_after_a_client_process_vanishes_mid_stream(
    tmp_path: Path, storage: Storages
) -> None:
    database = storage()
    async with running_server(database, shutdown_grace=0.2) as server:
        address = f"{LOOPBACK}:{server.port}"
        client = RecordingClient(address)
        async with client:
            table_id, tokens = await seat_four(client, RULES, "vanishing seat 0")
            # Seat 0 is played by another process: the spades-bot console script.
            with (tmp_path / "bot.log").open("w") as bot_log:
                vanishing = subprocess.Popen(
                    [str(SPADES_BOT), "--server", address, "--token", tokens[0], "--bot", "random"],
                    stdout=bot_log,
                    stderr=subprocess.STDOUT,
                    env=clean_environment(),
                )
            others = bots_for(client, table_id, tokens, range(1, 4))
            try:
                # Into the first hand's tricks: seat 0's process has bid and played by now.
                await sequence_reaches(client, table_id, 30)
                vanishing.send_signal(signal.SIGKILL)
                assert await asyncio.to_thread(vanishing.wait, 10) == -signal.SIGKILL
                # Mid-match, the table waiting for seat 0: what the server serves now.
                mid_match = await served_snapshots(client, [table_id])
                # A fresh process resumes the seat with only its token; the match ends.
                resumed = asyncio.ensure_future(
                    play_match(client, RandomBot(99), tokens[0], table_id=table_id)
                )
                outcomes = await asyncio.wait_for(asyncio.gather(resumed, *others), MATCH_BOUND)
            finally:
                if vanishing.poll() is None:
                    vanishing.kill()
                    vanishing.wait(10)
                for task in others:
                    task.cancel()
            assert all(outcome.end is not None for outcome in outcomes)
            snapshots = await served_snapshots(client, [table_id])
    streams = await read_log(database)
    assert_contiguous(streams)
    by_seat = action_ids_by_seat(streams[table_id])
    assert all(count == 1 for ids in by_seat.values() for count in ids.values())
    # Seat 0's actions: the vanished process's, then the resumed one's, each applied once.
    assert outcomes[0].applied_action_ids < set(by_seat[0])
    assert_log_is_truth(mid_match, streams, latest=False)
    assert_log_is_truth(snapshots, streams)


@pytest.mark.asyncio
async def test_after_a_second_stream_for_a_playing_seat(storage: Storages) -> None:
    database = storage()
    async with running_server(database, shutdown_grace=0.2) as server:
        address = f"{LOOPBACK}:{server.port}"
        client = RecordingClient(address)
        second_device = SpadesClient(address)
        async with client, second_device:
            table_id, tokens = await seat_four(client, RULES, "two streams for seat 0")
            first, *others = bots_for(client, table_id, tokens, range(4))
            newer: asyncio.Future[MatchOutcome] | None = None
            try:
                await sequence_reaches(client, table_id, 20)
                newer = asyncio.ensure_future(
                    play_match(second_device, RandomBot(77), tokens[0], table_id=table_id)
                )
                with pytest.raises(Aborted) as superseded:
                    await asyncio.wait_for(first, 20)
                assert "newer stream" in superseded.value.reason, superseded.value.reason
                outcomes = await asyncio.wait_for(asyncio.gather(newer, *others), MATCH_BOUND)
            finally:
                for task in [first, *others, *([newer] if newer is not None else [])]:
                    task.cancel()
            assert all(outcome.end is not None for outcome in outcomes)
            assert outcomes[0].seat == 0
            snapshots = await served_snapshots(client, [table_id])
    streams = await read_log(database)
    assert_contiguous(streams)
    by_seat = action_ids_by_seat(streams[table_id])
    assert all(count == 1 for ids in by_seat.values() for count in ids.values())
    # Seat 0's actions in the log are the older bot's then the newer's, each applied once.
    assert outcomes[0].applied_action_ids < set(by_seat[0])
    assert_log_is_truth(snapshots, streams)


async def prompted_stream(
    client: SpadesClient, table_id: str, tokens: list[str]
) -> tuple[SeatStream, play_pb2.TurnPrompt]:
    """A Play stream of the seat to act, and its prompt. The last vanished client's action may
    still land (no telling when on a loaded machine): if it moves the turn on, this stream
    gets its event and no prompt, and the seat to act is looked up again."""
    for _ in range(50):
        turn = (await served_snapshot(client, table_id)).view.turn
        token = tokens[protocol.seat_from_proto(turn)]
        stream = SeatStream(client.play_service.Play(metadata=((TOKEN_KEY, token),)))  # type: ignore[call-arg]
        mine = (await stream.start()).view.turn == turn
        while mine:
            message = await stream.next()
            if message.WhichOneof("kind") == "prompt":
                return stream, message.prompt
            if message.WhichOneof("kind") == "event":
                mine = (await served_snapshot(client, table_id)).view.turn == turn
        await stream.close()
    raise AssertionError("no seat was prompted")


@pytest.mark.asyncio
async def test_after_clients_vanish_with_an_action_in_flight(storage: Storages) -> None:
    """One client after another sends the action its prompt asks for and vanishes at once (the
    stream cancelled right after the write): each action is applied or not, and either way
    what the server serves is what its log says."""
    database = storage()
    async with running_server(database, shutdown_grace=0.2) as server:
        client = RecordingClient(f"{LOOPBACK}:{server.port}")
        async with client:
            table_id, tokens = await seat_four(client, RULES, "actions in flight")
            for _ in range(IN_FLIGHT):
                stream, prompt = await prompted_stream(client, table_id, tokens)
                await stream.send(prompt.legal_actions[0], prompt.sequence)
                stream.call.cancel()  # gone, with its action in flight
                # Once the server has decided it (applied or not: no telling when, on a loaded
                # machine), it serves what its log says, up to the log's last event.
                settled = time.monotonic() + SETTLE_BOUND
                while True:
                    served = await served_snapshot(client, table_id)
                    stored = await server.log.read(table_id)
                    if served.sequence == len(stored) or time.monotonic() > settled:
                        break
                    await asyncio.sleep(0.05)
                assert_log_is_truth({table_id: served}, {table_id: stored})
            # The last vanished client's action may still land. One more action, answered, is
            # the table's last: if it is accepted, that one can only be refused now (it answers
            # an older sequence), so the log is quiet for the last look.
            for _ in range(10):
                stream, prompt = await prompted_stream(client, table_id, tokens)
                result = await stream.act(prompt.legal_actions[0], prompt.sequence)
                await stream.close()
                if result.accepted:
                    break
            assert result.accepted, result
            snapshots = await served_snapshots(client, [table_id])
    streams = await read_log(database)
    assert_contiguous(streams)
    assert_log_is_truth(snapshots, streams)
