"""The SDK retries a lobby call it could not deliver, with the same request id: a server that
comes up during the retries answers it once (one table, one seat)."""

from __future__ import annotations

import asyncio

import pytest

from spades.client import SpadesClient
from spades.engine import Rules
from tests.support.backends import Storages
from tests.support.processes import free_port
from tests.support.servers import new_server

pytestmark = pytest.mark.asyncio


async def test_a_call_made_while_the_server_is_down_is_answered_once_it_is_up(
    storage: Storages,
) -> None:
    port = free_port()
    server = new_server(storage(), listen=f"127.0.0.1:{port}", house_bots=0)
    async with SpadesClient(f"127.0.0.1:{port}") as client:
        creating = asyncio.ensure_future(client.create_table("late", Rules()))
        await asyncio.sleep(0.6)  # the first tries find no server
        assert not creating.done()
        await server.start()
        try:
            created = await asyncio.wait_for(creating, 15)
            joining = await client.join_table(created.table_id, "me", request_id="r" * 32)
            again = await client.join_table(created.table_id, "me", request_id="r" * 32)
            assert again == joining
            listed = [t for t in server.projection.tables.values() if t.name == "late"]
            assert len(listed) == 1
        finally:
            await server.stop()
