"""SIGTERM with a match in progress: streams end with UNAVAILABLE, nothing acknowledged is lost."""

from __future__ import annotations

import asyncio
import random
import signal
import time
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from spades.engine import Rules
from spades.v1 import play_pb2
from tests.support.backends import LogStorage, Storages
from tests.support.processes import Stubs, next_turn, play_actions, spades_server

GRACE = 5.0


def server_args(storage: LogStorage) -> list[str]:
    return [
        "--listen",
        "127.0.0.1:0",
        "--metrics",
        "127.0.0.1:0",
        *storage.flags(),
        "--log-format",
        "json",
        "--shutdown-grace",
        str(GRACE),
    ]


@pytest.mark.asyncio
async def test_sigterm_closes_streams_with_unavailable_and_loses_nothing(
    tmp_path: Path, storage: Storages
) -> None:
    database = storage()
    await database.prepare()
    rng = random.Random(11)
    with spades_server(tmp_path / "first.log", *server_args(database)) as first:
        async with grpc.aio.insecure_channel(first.address) as channel:
            stubs = Stubs(channel)
            table_id, tokens = await stubs.new_table(Rules(max_hands=2))
            seats = [await stubs.open_seat(token) for token in tokens]
            watcher = stubs.play.Watch(play_pb2.WatchRequest(table_id=table_id))
            await watcher.read()
            played = await play_actions(seats, 9, rng)
            acknowledged = played[-1][2]
            # One more action goes out with the signal: whatever happens to it, it happens once.
            seat = await next_turn(seats)
            prompt = seat.prompt
            assert prompt is not None
            racing_action = random.Random(5).choice(list(prompt.legal_actions))
            racing_id = await seat.send(racing_action, prompt.sequence)
            first.terminate(signal.SIGTERM)
            signalled = time.monotonic()

            for each in seats:
                error = await each.ended(timeout=GRACE + 5)
                assert error is not None, "the stream must end with a status"
                assert error.code() is grpc.StatusCode.UNAVAILABLE, error
                assert "reconnect" in (error.details() or ""), error.details()
            with pytest.raises(grpc.aio.AioRpcError) as watched:
                while True:
                    await asyncio.wait_for(watcher.read(), GRACE + 5)
            assert watched.value.code() is grpc.StatusCode.UNAVAILABLE
            racing_result = seat.results.get(racing_id)

        code = await asyncio.to_thread(first.wait, GRACE + 5)
        assert code == 0, first.log_path.read_text()
        assert time.monotonic() - signalled < GRACE + 3
    first_log = first.log_path.read_text()
    assert '"signal": "SIGTERM"' in first_log and '"event": "stopped"' in first_log

    with spades_server(tmp_path / "second.log", *server_args(database)) as second:
        with grpc.insecure_channel(second.address) as sync_channel:
            health = health_pb2_grpc.HealthStub(sync_channel).Check(
                health_pb2.HealthCheckRequest(), timeout=5
            )
            assert health.status == health_pb2.HealthCheckResponse.SERVING
        async with grpc.aio.insecure_channel(second.address) as channel:
            stubs = Stubs(channel)
            record = (
                await stubs.play.GetRecord(play_pb2.GetRecordRequest(table_id=table_id))
            ).record
            assert len(record.events) >= acknowledged.sequence
            # The acting seat resumes just before its acknowledged action: the action is there.
            acting = tokens[seats.index(played[-1][0])]
            resumed = await stubs.open_seat(acting, after_sequence=acknowledged.sequence - 1)
            event = await resumed.until(lambda: resumed.events[0] if resumed.events else None)
            assert event.sequence == acknowledged.sequence
            assert event.action_id == acknowledged.action_id
            resumed.cancel()

            # The racing action: resent with its id after the restart, it is applied exactly once.
            racer = await stubs.open_seat(tokens[seats.index(seat)], after_sequence=prompt.sequence)
            again = await racer.act(racing_action, prompt.sequence, action_id=racing_id)
            assert again.accepted, again
            if racing_result is not None:  # answered before the streams closed: same answer
                assert racing_result.accepted and again.sequence == racing_result.sequence
            await racer.until(lambda: racer.sequence >= again.sequence or None)
            caused = [e for e in racer.events if e.action_id == racing_id]
            assert [e.sequence for e in caused] == [again.sequence], "applied exactly once"
            racer.cancel()

            # And the match goes on where it was.
            seats = [await stubs.open_seat(token) for token in tokens]
            await play_actions(seats, 3, rng)
            for each in seats:
                each.cancel()
        second.terminate()
        assert await asyncio.to_thread(second.wait, GRACE + 5) == 0
