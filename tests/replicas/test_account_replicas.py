"""Accounts and ratings across replicas on one PostgreSQL log: a name is taken once, a key made
on one replica works (and dies) on the other, and a rated match is rated exactly once."""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path

import pytest

from spades.bot import play_match
from spades.client import SpadesClient, SpadesError
from spades.engine import Rules
from spades_bots.registry import bot_class
from spades_server.app.server import SpadesServer
from spades_server.domain import ratings
from spades_server.store import codecs, rating_store
from tests.support.servers import replicas
from tests.support.time import wait_for_state

pytestmark = pytest.mark.asyncio


async def test_names_and_keys_hold_across_replicas(tmp_path: Path) -> None:
    async with replicas(tmp_path, 2) as (one, two):
        a = SpadesClient(f"127.0.0.1:{one.port}")
        b = SpadesClient(f"127.0.0.1:{two.port}")
        try:
            made = await a.create_account("Everywhere", kind="bot")
            # Both replicas race for one new name: exactly one wins.
            raced = await asyncio.gather(
                a.create_account("Contested", kind="bot"),
                b.create_account("contested", kind="person"),
                return_exceptions=True,
            )
            assert sum(isinstance(result, SpadesError) for result in raced) == 1, raced
            with pytest.raises(SpadesError, match="taken"):
                await b.create_account("EVERYWHERE", kind="bot")
            # A key made on one replica works on the other; rotated there, it dies here.
            holder = SpadesClient(f"127.0.0.1:{two.port}", account_key=made.key)
            old = SpadesClient(f"127.0.0.1:{one.port}", account_key=made.key)
            try:
                await holder.rotate_key()
                with pytest.raises(SpadesError, match="revoked or replaced"):
                    await old.revoke_key()
            finally:
                await holder.close()
                await old.close()
        finally:
            await a.close()
            await b.close()


def saw_the_end(server: SpadesServer, table_id: str) -> bool:
    """Whether ``server``'s table cache holds ``table_id`` finished."""
    return any(t.table_id == table_id and t.finished for t in server.store.cached_tables())


async def test_a_rated_match_played_across_replicas_is_rated_once(tmp_path: Path) -> None:
    async with replicas(tmp_path, 2) as servers:
        one, two = servers
        async with SpadesClient(f"127.0.0.1:{one.port}") as lobby:
            first = await lobby.create_account("Replica One", kind="bot")
            second = await lobby.create_account("Replica Two", kind="bot")
            table_id = (await lobby.create_table("rated", Rules(max_hands=1), rated=True)).table_id
        plays = []
        players = []
        for key, server, seats in ((first.key, one, "north,south"), (second.key, two, "east,west")):
            player = SpadesClient(f"127.0.0.1:{server.port}", account_key=key)
            players.append(player)
            for seat in seats.split(","):
                ticket = await player.join_table(table_id, "x", seat=seat)
                plays.append(play_match(player, bot_class("random")(), ticket.token))
        try:
            async with asyncio.timeout(90):
                await asyncio.gather(*plays)
                while True:
                    for server in servers:
                        await server.ratings.idle()
                    pool = await one.pools.load(ratings.PARTNERSHIP)
                    if table_id in pool.rated_tables:
                        break
                    await asyncio.sleep(0.05)
                # Each replica rates a match it sees end: both saw it end, and finished what
                # rating they started, so a second rating would be in the log by now.
                for server in servers:
                    ended = functools.partial(saw_the_end, server, table_id)
                    await wait_for_state(ended, "the replica saw the match end")
                    await server.ratings.idle()
        finally:
            for player in players:
                await player.close()
        rows = await one.log.read(rating_store.stream_of(ratings.PARTNERSHIP))
        assert [codecs.decode_pool(row).table_id for row in rows] == [table_id]
        async with SpadesClient(f"127.0.0.1:{two.port}") as reader:
            board = await reader.leaderboard("partnership")
        assert sorted(line.name for line in board.lines) == ["Replica One", "Replica Two"]
        assert all(line.rating.matches == 1 for line in board.lines)
