"""The SDK retries a lobby call it could not deliver, with the same request id: a server that
comes up during the retries answers it once (one table, one seat)."""

from __future__ import annotations

import asyncio

import pytest

from spades.client import SpadesClient
from spades.client.client import RETRY_DELAYS
from spades.engine import Rules
from tests.support.backends import Storages
from tests.support.processes import free_port
from tests.support.servers import new_server
from tests.support.time import ManualClock, connected, wait_for_state

pytestmark = pytest.mark.asyncio


async def test_a_call_made_while_the_server_is_down_is_answered_once_it_is_up(
    storage: Storages,
) -> None:
    port = free_port()
    server = new_server(storage(), listen=f"127.0.0.1:{port}", house_bots=0)
    clock = ManualClock()
    async with SpadesClient(f"127.0.0.1:{port}", sleep=clock.sleep) as client:
        creating = asyncio.ensure_future(client.create_table("late", Rules()))
        await clock.sleeping()  # the first try found no server: the client waits to retry
        assert not creating.done()
        await server.start()
        try:
            await wait_for_state(connected(client), "the client's channel reaches the server")
            clock.advance(RETRY_DELAYS[0])  # the retry
            created = await asyncio.wait_for(creating, 15)
            joining = await client.join_table(created.table_id, "me", request_id="r" * 32)
            again = await client.join_table(created.table_id, "me", request_id="r" * 32)
            assert again == joining
            listed = [t for t in server.projection.tables.values() if t.name == "late"]
            assert len(listed) == 1
        finally:
            await server.stop()
