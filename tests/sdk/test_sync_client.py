"""The synchronous wrapper: blocking calls, streams as iterators and run_bot, from plain
threads."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from spades.client import (
    ActionResult,
    FailedPrecondition,
    Prompt,
    Snapshot,
    StreamEvent,
    SyncSpadesClient,
)
from spades.engine import Rules
from spades.engine import events as ev
from spades_bots.random_bot import RandomBot
from spades_server.app.server import SpadesServer


def _whole_match(address: str) -> tuple[str, list[bool], int]:
    with SyncSpadesClient(address) as client:
        created = client.create_table("sync", Rules(max_hands=1))
        tickets = [client.join_table(created.table_id, f"sync {n}") for n in range(4)]
        try:
            client.join_table(created.table_id, "fifth")
        except FailedPrecondition as error:
            assert "already started" in error.reason
        else:
            raise AssertionError("a fifth player was seated")
        with ThreadPoolExecutor(4) as pool:
            outcomes = list(
                pool.map(
                    lambda pair: client.run_bot(RandomBot(pair[0]), pair[1].token),
                    enumerate(tickets),
                )
            )
        record = client.get_record(created.table_id)
        # ListTables reads the lobby, which on PostgreSQL reads the log in bursts a moment
        # behind (docs/scaling.md: up to 50 ms), so the finished table shows within a bound.
        for _ in range(200):
            listed = client.list_tables("finished").tables
            if created.table_id in {table.table_id for table in listed}:
                break
            time.sleep(0.01)
        assert created.table_id in {table.table_id for table in listed}
    return created.table_id, [outcome.won for outcome in outcomes], len(record.events)


@pytest.mark.asyncio
async def test_the_sync_client_plays_a_match(server: SpadesServer) -> None:
    table_id, won, events = await asyncio.wait_for(
        asyncio.to_thread(_whole_match, f"127.0.0.1:{server.port}"), 60
    )
    assert table_id and sorted(won) == [False, False, True, True] and events > 60


def _sync_streams(address: str) -> tuple[list[object], list[object], int]:
    """Seat 0 plays from a plain loop over ``play()``; a spectator follows ``watch()`` in
    another thread; random bots play the other seats."""
    with SyncSpadesClient(address) as client:
        created = client.create_table("sync streams", Rules(max_hands=1))
        tickets = [client.join_table(created.table_id, f"sync {n}") for n in range(4)]
        watched: list[object] = []

        def spectate() -> None:
            for message in client.watch(created.table_id, after_sequence=1):
                watched.append(message)
                if isinstance(message, StreamEvent) and isinstance(message.event, ev.MatchEnded):
                    return  # leaving the loop closes the stream

        with ThreadPoolExecutor(4) as pool:
            spectator = pool.submit(spectate)
            others = [
                pool.submit(client.run_bot, RandomBot(seat), ticket.token)
                for seat, ticket in enumerate(tickets[1:], 1)
            ]
            played: list[object] = []
            with client.play(tickets[0].token, latest=True) as connection:
                assert connection.snapshot is not None
                seat_view = connection.snapshot.seat_view()  # the engine's view
                assert seat_view is not None and seat_view.viewer == 0
                for message in connection:
                    played.append(message)
                    if isinstance(message, Prompt):
                        connection.send(message.legal_actions[-1], message.sequence)
                    elif isinstance(message, StreamEvent) and isinstance(
                        message.event, ev.MatchEnded
                    ):
                        break
            for other in others:
                other.result(timeout=60)
            spectator.result(timeout=60)
        view = client.get_view(created.table_id, tickets[0].token)
    return played, watched, view.sequence


@pytest.mark.asyncio
async def test_the_sync_client_streams_are_plain_iterators(server: SpadesServer) -> None:
    played, watched, sequence = await asyncio.wait_for(
        asyncio.to_thread(_sync_streams, f"127.0.0.1:{server.port}"), 90
    )
    assert isinstance(watched[0], Snapshot) and isinstance(watched[-1], StreamEvent)
    assert isinstance(watched[-1].event, ev.MatchEnded)
    prompts = [message for message in played if isinstance(message, Prompt)]
    results = [message for message in played if isinstance(message, ActionResult)]
    # The last card's result may follow the MatchEnded event the loop stopped at.
    assert len(prompts) == 14 and 13 <= len(results) <= 14
    assert all(result.accepted for result in results)
    assert sequence >= watched[-1].sequence
