"""Two replicas' logs on one PostgreSQL schema, and waiting until a store follows a table.

``two_logs`` gives writer A, which sends no notifications, and replica B, whose periodic re-read
is an hour away: what A commits reaches B only when B reads, so B's cache is behind for certain.
Given a ``sleep`` (a test's clock's), B waits on it (``EventLog.sleep``: that hour, its retries).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from spades_server.eventlog.postgres import PostgresEventLog
from spades_server.store.table_store import TableStore
from tests.support.backends import POSTGRES_DSN, drop_schema, schema_for


@asynccontextmanager
async def two_logs(
    directory: Path, sleep: Callable[[float], Awaitable[None]] | None = None
) -> AsyncIterator[tuple[PostgresEventLog, PostgresEventLog]]:
    """Writer A (sends no notifications) and replica B on one schema."""
    schema = schema_for(directory)
    a = PostgresEventLog(POSTGRES_DSN, schema=schema, pool_size=2, notify=False)
    b = PostgresEventLog(POSTGRES_DSN, schema=schema, pool_size=2, poll_interval=3600)
    b.sleep = sleep  # before it opens: its tasks wait on it from the start
    try:
        await a.open()
        await b.open()
        yield a, b
    finally:
        await b.close()
        await a.close()
        await drop_schema(schema)


async def until_followed(store: TableStore, table_id: str) -> None:
    """Returns once ``store`` follows ``table_id`` (fails after about five seconds)."""
    for _ in range(500):
        if store.following(table_id):
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{table_id} was never followed")
