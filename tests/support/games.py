"""Matches played by accounts (and anonymous players) through the SDK, for the "my games" tests:
rated or not, at a listed or private table, each side played by a sample bot."""

from __future__ import annotations

import asyncio

from spades.bot import play_match
from spades.client import SpadesClient
from spades.engine import Rules
from spades_bots.registry import bot_class
from spades_server.app.server import SpadesServer
from spades_server.domain import ratings
from tests.support.accounts import SHORT_RATED
from tests.support.servers import lobby_caught_up


async def play_accounts_match(
    server: SpadesServer,
    sides: list[tuple[str, str, str]],
    *,
    rated: bool = False,
    private: bool = False,
    rules: Rules = SHORT_RATED,
) -> str:
    """One match: each ``(account key or "", bot kind, seats)`` of ``sides`` plays its seats
    (an empty key: an anonymous player); returns the table id once the lobby has folded its end
    (and, for a rated one, once its pool has rated it)."""
    address = f"127.0.0.1:{server.port}"
    async with SpadesClient(address) as lobby:
        created = await lobby.create_table("games", rules, rated=rated, private=private)
    table_id = created.table_id
    clients = []
    plays = []
    try:
        for key, kind, seats in sides:
            client = SpadesClient(address, account_key=key)
            clients.append(client)
            for seat in seats.split(","):
                ticket = await client.join_table(
                    table_id, f"Anonymous {seat}", seat=seat, join_code=created.join_code
                )
                plays.append(play_match(client, bot_class(kind)(), ticket.token))
        async with asyncio.timeout(120):
            await asyncio.gather(*plays)
            if rated:
                await server.ratings.idle()
                while table_id not in (await server.pools.load(ratings.PARTNERSHIP)).rated_tables:
                    await asyncio.sleep(0.02)
                    await server.ratings.idle()
            await lobby_caught_up(server, [table_id])
    finally:
        for client in clients:
            await client.close()
    return table_id
