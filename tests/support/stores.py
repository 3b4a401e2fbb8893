"""A table store without a server, for the tests of what the layers above the log send (feeds,
frames, batches): a real TableStore on a SQLite file, and a table whose four seats were taken
through the store's own decisions (their tokens in :data:`TOKENS`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from spades.engine import Rules, new_match
from spades_server.domain.decisions import decide_join, decide_new_table
from spades_server.domain.tables import Decided, Table
from spades_server.eventlog.sqlite import SqliteEventLog
from spades_server.store.table_store import TableStore

#: The seat tokens of :func:`table_seated_in_store`'s four players, by seat.
TOKENS = [f"t.{'s' * 20}{seat}" for seat in range(4)]


@asynccontextmanager
async def sqlite_table_store(database: Path) -> AsyncIterator[TableStore]:
    """A TableStore on an opened SQLite log at ``database``, closed after."""
    log = SqliteEventLog(str(database))
    await log.open()
    try:
        yield TableStore(log)
    finally:
        await log.close()


async def table_seated_in_store(store: TableStore) -> Table:
    """A new table of default rules, dealt from a fixed seed, with every seat taken (the match
    has started), as the store holds it."""
    created = new_match(Rules(), seed=bytes(32))
    table = await store.create(
        "t", decide_new_table(created, name="t", private=False, join_code="")
    )
    for seat, token in enumerate(TOKENS):

        def join(latest: Table, seat: int = seat, token: str = token) -> Decided:
            return decide_join(latest, seat, f"p{seat}", True, "", token)

        await store.execute(table.table_id, join)
    return store.cached(table.table_id)


async def client_side_open() -> None:
    """A client that keeps its side of a stream open."""
    await asyncio.Event().wait()
