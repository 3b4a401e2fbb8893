"""Slow consumers: a client that opens a stream and never reads it hurts no one but itself.

How the server's write is made to block (measured, deterministic)
-----------------------------------------------------------------
The server writes a stream's messages with ``context.write``, which returns once gRPC's HTTP/2
layer took the message under flow control; a client that never reads stops replenishing its
stream's receive window, so once the window is full the next write waits, and after
``stream_write_timeout`` the server closes the stream with RESOURCE_EXHAUSTED and its reason.

With the client's default channel the window is 64 KiB and grows further by BDP probing, so a
few hands of events (about 4 KB a hand) never fill it and the stream simply stays open. The
slow clients here therefore open their channel with ``grpc.http2.bdp_probe=0`` (no window
growth) and ``grpc.http2.lookahead_bytes=1024`` (a stream window of about 1 KiB): the window
is full after about twenty events, early in the first hand. (``grpc.max_receive_message_length``
does not help: it limits one message, and the client itself fails the call.)

Two slow clients, on one server with ``stream_write_timeout = WRITE_TIMEOUT``:

- a spectator whose Watch of table A is never read, while four SDK bots play table A;
- the player of seat 0 of table B, whose Play stream is never read (so its turns run out on a
  short clock), while SDK bots play the other three seats.

Both slow streams end with RESOURCE_EXHAUSTED and the server's reason; every SDK bot finishes
its match within a bound, and no accepted action ever waited anywhere near the write timeout
(the table never waits on a blocked writer). Then each table's log replays to the view the
server serves.

The last test combines a blocked stream with a second stream for the same seat: the newer wins
at once, and the older, stuck in its write, may no longer act for the seat.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import grpc
import pytest

from spades import protocol
from spades.bot import MatchOutcome, play_match
from spades.engine import Clock, Rules
from spades.v1 import play_pb2, play_pb2_grpc
from spades_bots.random_bot import RandomBot
from tests.support.backends import Storages
from tests.support.clients import TOKEN_KEY, SeatStream
from tests.support.faults import (
    Paced,
    RecordingClient,
    assert_contiguous,
    assert_log_is_truth,
    eventually,
    latencies,
    read_log,
    seat_four,
    sequence_reaches,
    served_snapshot,
    served_snapshots,
)
from tests.support.processes import LOOPBACK
from tests.support.servers import log_events, running_server
from tests.support.slow_readers import (
    SLOW_READER_OPTIONS,
    drained_status,
    refused_for_exhaustion,
)

WRITE_TIMEOUT = 1.0
WATCHED = Rules(max_hands=3)
#: Seat 0 never answers: its turns time out quickly (or a substitute plays it).
ABSENT_SEAT_0 = Rules(max_hands=1, clock=Clock(turn_millis=250, extension_millis=0))
MATCH_BOUND = 45.0
REASON = f"not read for {WRITE_TIMEOUT:g} s"


async def result_of(call: Any, action_id: str) -> play_pb2.ActionResult | None:
    """Read an (unbatched) Play stream its client did not read, up to the result of
    ``action_id``; None when the stream ends without one."""
    with contextlib.suppress(grpc.aio.AioRpcError):
        async for message in call:
            result = message.action_result
            if message.WhichOneof("kind") == "action_result" and result.action_id == action_id:
                return result  # type: ignore[no-any-return]
    return None


@pytest.mark.asyncio
async def test_streams_never_read_are_closed_and_no_one_else_waits(storage: Storages) -> None:
    database = storage()
    async with running_server(
        database, stream_write_timeout=WRITE_TIMEOUT, shutdown_grace=0.2
    ) as server:
        address = f"{LOOPBACK}:{server.port}"
        client = RecordingClient(address)
        async with (
            client,
            grpc.aio.insecure_channel(address, options=SLOW_READER_OPTIONS) as slow_channel,
        ):
            watched_id, watched_tokens = await seat_four(client, WATCHED, "watched")
            absent_id, absent_tokens = await seat_four(client, ABSENT_SEAT_0, "absent seat 0")
            slow = play_pb2_grpc.PlayServiceStub(slow_channel)
            before = refused_for_exhaustion()
            started = time.monotonic()
            slow_watch = slow.Watch(play_pb2.WatchRequest(table_id=watched_id))
            slow_play = slow.Play(metadata=((TOKEN_KEY, absent_tokens[0]),))  # type: ignore[call-arg]
            await slow_play.write(play_pb2.PlayRequest(start=play_pb2.StartPlay()))

            seatings = (
                (watched_id, watched_tokens, (0, 1, 2, 3)),
                (absent_id, absent_tokens, (1, 2, 3)),
            )
            bots: list[asyncio.Future[MatchOutcome]] = [
                asyncio.ensure_future(
                    play_match(client, RandomBot(seat), tokens[seat], table_id=table_id)
                )
                for table_id, tokens, seats in seatings
                for seat in seats
            ]
            try:
                await eventually(
                    lambda: refused_for_exhaustion() >= before + 2,
                    WRITE_TIMEOUT + 15,
                    "both unread streams are closed",
                )
                closed_after = time.monotonic() - started
                outcomes = await asyncio.wait_for(asyncio.gather(*bots), MATCH_BOUND)
                finished_after = time.monotonic() - started
            finally:
                for bot in bots:
                    bot.cancel()

            waits = [wait for journal in client.journals.values() for wait in latencies(journal)]
            print(
                f"\nunread streams closed {closed_after:.2f} s after opening; matches done in"
                f" {finished_after:.2f} s; {len(waits)} actions, longest wait {max(waits):.3f} s"
            )
            assert all(outcome.end is not None for outcome in outcomes)
            assert max(waits) < 0.8 * WRITE_TIMEOUT, "an action waited on the blocked stream"

            watched = await client.get_table(watched_id)
            for slow_call, kind in ((slow_watch, "Watch"), (slow_play, "Play")):
                received, error = await drained_status(slow_call)
                assert error is not None, f"the unread {kind} stream was not closed"
                assert error.code() is grpc.StatusCode.RESOURCE_EXHAUSTED, (kind, error)
                assert REASON in (error.details() or ""), error.details()
                if kind == "Watch":  # cut off: the snapshot and part of the events only
                    assert received < 1 + watched.sequence, received
            snapshots = await served_snapshots(client, [watched_id, absent_id])
    streams = await read_log(database)
    assert_contiguous(streams)
    assert_log_is_truth(snapshots, streams)


@pytest.mark.asyncio
async def test_a_blocked_stream_replaced_by_a_newer_one_can_no_longer_act(
    storage: Storages,
) -> None:
    """The newer stream wins even when the older one is stuck writing to a client that does
    not read: the older may not act for the seat any more (and should be closed at once, with
    ABORTED, not only when its write times out)."""
    database = storage()
    async with running_server(database, stream_write_timeout=5.0, shutdown_grace=0.2) as server:
        address = f"{LOOPBACK}:{server.port}"
        client = RecordingClient(address)
        async with (
            client,
            grpc.aio.insecure_channel(address, options=SLOW_READER_OPTIONS) as slow_channel,
        ):
            table_id, tokens = await seat_four(client, Rules(max_hands=2), "blocked then replaced")
            paused = False
            players = [Paced(seat, lambda: paused) for seat in range(4)]
            bots = [
                asyncio.ensure_future(play_match(client, bot, token, table_id=table_id))
                for bot, token in zip(players, tokens, strict=True)
            ]
            try:
                # Enough history to fill the slow client's window, then play pauses (the seat on
                # turn holds its decision, nothing in flight; the turn clock is 30 s).
                await sequence_reaches(client, table_id, 60)
                paused = True
                await eventually(lambda: any(bot.holding for bot in players), 10, "play pauses")
                turn = next(seat for seat, bot in enumerate(players) if bot.holding)
                quiet = await served_snapshot(client, table_id)
                assert protocol.seat_from_proto(quiet.view.turn) == turn
                assert quiet.sequence == await server.log.stream_version(table_id)
                # The older stream replays the whole history to a client that never reads: blocked.
                older = play_pb2_grpc.PlayServiceStub(slow_channel).Play(
                    metadata=((TOKEN_KEY, tokens[turn]),)  # type: ignore[call-arg]
                )
                await older.write(play_pb2.PlayRequest(start=play_pb2.StartPlay(after_sequence=1)))
                # Time to fill its window before a newer stream replaces it: a write waiting for
                # its client shows no state. Lost, the race fails the test below (the older
                # stream, not stuck, ends at once and never reads its action); it cannot pass it.
                await asyncio.sleep(0.5)
                # The newer stream for the same seat takes over and gets the prompt.
                newer = SeatStream(client.play_service.Play(metadata=((TOKEN_KEY, tokens[turn]),)))  # type: ignore[call-arg]
                await newer.start()
                prompt = (await newer.next_of("prompt")).prompt
                # The older stream answers it.
                with contextlib.suppress(grpc.aio.AioRpcError, asyncio.InvalidStateError):
                    await older.write(
                        play_pb2.PlayRequest(
                            action=play_pb2.ActionRequest(
                                action_id="from-the-older-stream",
                                sequence=prompt.sequence,
                                action=prompt.legal_actions[0],
                            )
                        )
                    )
                # Its answer: read at last, the older stream sends what it owes, then ends.
                async with asyncio.timeout(MATCH_BOUND):
                    answer = await result_of(older, "from-the-older-stream")
                assert answer is not None, "the older stream ended before it read its action"
                assert not answer.accepted, answer
                assert answer.status.code == grpc.StatusCode.ABORTED.value[0], answer
                applied = [
                    event.sequence
                    for event in await log_events(server, table_id)
                    if event.action_id == "from-the-older-stream"
                ]
                older.cancel()
                await newer.close()
            finally:
                for bot in bots:
                    bot.cancel()
                await asyncio.gather(*bots, return_exceptions=True)
            snapshots = await served_snapshots(client, [table_id])
    streams = await read_log(database)
    assert_contiguous(streams)
    assert_log_is_truth(snapshots, streams)
    assert applied == [], "the replaced stream still acted for the seat"
