"""The synchronous wrapper: blocking calls and run_bot, from plain threads."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest

from spades.client import FailedPrecondition, SyncSpadesClient
from spades.engine import Rules
from spades_bots.random_bot import RandomBot
from spades_server.server import SpadesServer


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
        listed = client.list_tables("finished").tables
        assert created.table_id in {table.table_id for table in listed}
    return created.table_id, [outcome.won for outcome in outcomes], len(record.events)


@pytest.mark.asyncio
async def test_the_sync_client_plays_a_match(server: SpadesServer) -> None:
    table_id, won, events = await asyncio.wait_for(
        asyncio.to_thread(_whole_match, f"127.0.0.1:{server.port}"), 60
    )
    assert table_id and sorted(won) == [False, False, True, True] and events > 60
