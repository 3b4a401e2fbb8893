"""When storage refuses writes, appends fail with LogUnavailable (nothing written), the log's
``write_health`` says why, and it says so again once writes work.

PostgreSQL here: the real server answers a real ``disk_full`` (SQLSTATE 53100), raised by a
trigger on the test's own schema (filling the shared server's disk is not an option). The SQLite
file on a really full disk is ``tests/integrity/test_disk_full.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest
import pytest_asyncio

from spades_server.eventlog import LogUnavailable, PostgresEventLog
from tests.support.backends import POSTGRES_DSN, drop_schema, require_postgres, schema_for

pytestmark = pytest.mark.asyncio

_REFUSE = """
CREATE FUNCTION refuse_writes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'could not extend file: No space left on device'
    USING ERRCODE = 'disk_full'; END $$;
CREATE TRIGGER refuse_writes BEFORE INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION refuse_writes();
"""


Opened = tuple[PostgresEventLog, asyncpg.Connection]


@pytest.fixture
def schema(tmp_path: Path) -> str:
    require_postgres()  # before the event loop runs: it probes with asyncio.run
    return schema_for(tmp_path)


@pytest_asyncio.fixture
async def postgres_log(schema: str) -> AsyncIterator[Opened]:
    log = PostgresEventLog(POSTGRES_DSN, schema=schema, pool_size=2)
    await log.open()
    admin = await asyncpg.connect(POSTGRES_DSN, server_settings={"search_path": schema})
    try:
        yield log, admin
    finally:
        await admin.close()
        await log.close()
        await drop_schema(schema)


async def test_postgres_disk_full_is_unavailable_then_recovers(
    postgres_log: Opened,
) -> None:
    log, admin = postgres_log
    changes: list[str | None] = []
    log.write_health.listeners.append(changes.append)
    await log.append("table-1", 0, [b"created"])
    await admin.execute(_REFUSE)
    with pytest.raises(LogUnavailable, match="No space left on device"):
        await log.append("table-1", 1, [b"seated"])
    assert await log.stream_version("table-1") == 1  # nothing of it written
    assert log.write_health.failure is not None
    assert changes == [log.write_health.failure]
    assert "cannot be written now" in log.write_health.failure
    await admin.execute("DROP TRIGGER refuse_writes ON events")
    stored = await log.append("table-1", 1, [b"seated"])
    assert stored[0].version == 2
    assert changes[1:] == [None] and log.write_health.failure is None


async def test_postgres_disk_full_fails_every_append_of_a_batch(postgres_log: Opened) -> None:
    log, admin = postgres_log
    changes: list[str | None] = []
    log.write_health.listeners.append(changes.append)
    await admin.execute(_REFUSE)
    outcomes = await asyncio.gather(
        *(log.append(f"table-{n}", 0, [b"created"]) for n in range(8)), return_exceptions=True
    )
    assert all(isinstance(outcome, LogUnavailable) for outcome in outcomes)
    assert len(changes) == 1 and changes[0] == log.write_health.failure
    assert await log.read_all() == []
    await admin.execute("DROP TRIGGER refuse_writes ON events")
    stored = await asyncio.gather(*(log.append(f"table-{n}", 0, [b"created"]) for n in range(8)))
    assert [events[0].version for events in stored] == [1] * 8
    assert changes[1:] == [None]
