"""Online now across replicas on one PostgreSQL log: a bot whose account stream is open on one
replica is listed by every replica, and by none once the stream closes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from spades.client import SpadesClient
from tests.support.accounts import stream_open
from tests.support.servers import replicas

pytestmark = pytest.mark.asyncio


async def names_at(client: SpadesClient) -> list[str]:
    return [bot.account.name for bot in (await client.online_bots()).bots]


async def test_a_bot_online_on_one_replica_is_listed_by_the_other(
    tmp_path: Path, postgres: None
) -> None:
    async with replicas(tmp_path, 2) as (one, two):
        first, second = f"127.0.0.1:{one.port}", f"127.0.0.1:{two.port}"
        async with SpadesClient(first) as at_one, SpadesClient(second) as at_two:
            owl = await at_one.create_account("Night Owl", kind="bot")
            async with SpadesClient(first, account_key=owl.key) as bot, stream_open(bot):
                # The row is in the log before the stream's first event: the other replica
                # reads it there.
                assert await names_at(at_two) == ["Night Owl"]
                assert await names_at(at_one) == ["Night Owl"]
            async with asyncio.timeout(20):
                while await names_at(at_two):
                    await asyncio.sleep(0.05)
            assert await names_at(at_one) == []
