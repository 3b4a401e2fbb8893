"""The queues say what their table waits for: QuickMatchResponse.wait carries the players still
needed and when house bots fill the free seats, and the SDK says it as a person reads it."""

from __future__ import annotations

import pytest

from spades.client import QueueWait, SpadesClient
from tests.support.backends import Storages
from tests.support.servers import running_server

pytestmark = pytest.mark.asyncio


async def test_a_quick_match_seat_says_how_many_players_and_when_house_bots_come(
    storage: Storages,
) -> None:
    async with (
        running_server(storage(), quick_match_fill_after=30) as server,
        SpadesClient(f"127.0.0.1:{server.port}") as client,
    ):
        first = await client.quick_match("Ann", bot=False)
        second = await client.quick_match("Bob", bot=False)
    assert first.table_id == second.table_id
    assert first.wait is not None and second.wait is not None
    assert first.wait.players_needed == 3 and second.wait.players_needed == 2
    # The first player's wait is counted from when the filler saw the table: at most 30 s.
    assert first.wait.house_bots_in is not None and 0 < first.wait.house_bots_in <= 30
    assert second.wait.house_bots_in is not None and second.wait.house_bots_in <= 30
    assert str(first.wait).startswith("waiting for 3 players; house bots fill in ")


async def test_without_house_bots_the_wait_names_only_the_players(storage: Storages) -> None:
    async with (
        running_server(storage(), house_bots=0) as server,
        SpadesClient(f"127.0.0.1:{server.port}") as client,
    ):
        seated = await client.quick_match("Ann", bot=False)
    assert seated.wait == QueueWait(3, None)
    assert str(seated.wait) == "waiting for 3 players"


async def test_the_rated_queue_says_when_house_accounts_come(storage: Storages) -> None:
    async with running_server(storage(), rated_fill_after=20) as server:
        address = f"127.0.0.1:{server.port}"
        async with SpadesClient(address) as anonymous:
            account = await anonymous.create_account("Rated Ann")
        async with SpadesClient(address, account_key=account.key) as client:
            seated = await client.quick_match("Rated Ann", rated=True)
    assert seated.wait is not None and seated.wait.players_needed == 3
    assert seated.wait.house_bots_in is not None and 0 < seated.wait.house_bots_in <= 20
