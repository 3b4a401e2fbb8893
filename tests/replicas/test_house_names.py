"""House bots seated by two replicas at one table get names no other seat shows.

Found when two replicas served one table behind a balancer: its four house bots were "House
Heuristic 1" twice and "House Heuristic 2" twice, each replica numbering from what it knew. The
name is now given by the join's decision on the table the log says (domain.decisions.unique_name),
so a replica deciding on a table that is behind is refused by the log's version check and decides
again, on the name the other replica gave.

The race itself first, made certain: two stores on one PostgreSQL schema stand for two replicas,
writer A sends no notifications, so B seats its bot on a cache that is behind. Then the whole
path: two real servers with house bots, AddHouseBot asked of each in turn.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from spades.engine import Rules, new_match
from spades.v1 import lobby_pb2
from spades_server.domain import tokens
from spades_server.domain.decisions import decide_join, decide_new_table
from spades_server.domain.tables import Decided, Table
from spades_server.store.table_store import TableStore
from tests.support.backends import require_postgres
from tests.support.clients import clients
from tests.support.followers import two_logs, until_followed
from tests.support.servers import lobby_caught_up, replicas

pytestmark = pytest.mark.asyncio


@pytest.fixture(autouse=True)
def _needs_postgres() -> None:
    require_postgres()


def house_bot(seat: int, versions: list[int]) -> Callable[[Table], Decided]:
    """The join a house pool asks for (every bot asks for number 1), noting each version it
    was decided on."""

    def decide(table: Table) -> Decided:
        versions.append(table.version)
        token = tokens.new_seat_token(table.table_id)
        return decide_join(table, seat, "House Heuristic 1", True, "", token)

    return decide


def names(table: Table) -> list[str | None]:
    return [player and player[0] for player in table.state.players]


async def test_two_replicas_seating_house_bots_at_once_give_different_names(
    tmp_path: Path,
) -> None:
    async with two_logs(tmp_path) as (log_a, log_b):
        a, b = TableStore(log_a), TableStore(log_b)
        created = decide_new_table(new_match(Rules()), name="t", private=False, join_code="")
        await a.create("t-house", created)
        async with b.holding("t-house"):
            await until_followed(b, "t-house")
            on_a: list[int] = []
            await a.execute("t-house", house_bot(1, on_a))  # B hears nothing of it
            on_b: list[int] = []
            table, entries = await b.execute("t-house", house_bot(3, on_b))
            # B decided on its cache (version 1, no bot), the log refused the append, and B
            # decided again on version 2.
            assert on_a == [1] and on_b == [1, 2]
            assert names(table) == [None, "House Heuristic 1", None, "House Heuristic 2"]
            assert entries[0].sequence == 3


async def test_house_bots_asked_of_two_replicas_in_turn_have_four_names(tmp_path: Path) -> None:
    async with replicas(tmp_path, 2, house_bots=8) as servers, clients(servers) as (a, b):
        table_id = (await a.create_table(Rules(max_hands=1))).table.table_id
        added = [
            await (a, b)[seat % 2].lobby.AddHouseBot(
                lobby_pb2.AddHouseBotRequest(table_id=table_id)
            )
            for seat in range(4)
        ]
        told = sorted(reply.player_name for reply in added)
        assert told == [f"House Heuristic {n}" for n in range(1, 5)]
        # Each replica's lobby follows the other's joins a moment after they commit (on a
        # loaded machine GetTable answered before A had B's last join): the names each shows
        # once it has caught up with the log.
        for server in servers:
            await lobby_caught_up(server, [table_id])
        for client in (a, b):
            table = (
                await client.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id))
            ).table
            assert sorted(seat.player_name for seat in table.seats) == told
