"""A backend's driver errors leave ``eventlog/`` as errors of the ``EventLogError`` family, so
nothing above it names ``sqlite3`` or ``asyncpg``: each case provokes the real error (a file that
is not a database, a file another log holds, a newer schema, a port where nothing listens, a
database PostgreSQL does not have, a malformed DSN) and checks the class and its message.

The classes that replaced a built-in one still are one (``LogUnreachable`` an ``OSError``,
``LogInUse`` and ``LogIncompatible`` a ``RuntimeError``): code that caught those keeps working.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest
import pytest_asyncio

from spades_server.eventlog import (
    EventLogError,
    LogDamaged,
    LogIncompatible,
    LogInUse,
    LogUnreachable,
    PostgresEventLog,
    SqliteEventLog,
)
from tests.support.backends import POSTGRES_DSN, drop_schema, schema_for
from tests.support.processes import unanswered_address

pytestmark = pytest.mark.asyncio


@pytest_asyncio.fixture
async def own_schema(tmp_path: Path, postgres: None) -> AsyncIterator[str]:
    schema = schema_for(tmp_path)
    yield schema
    await drop_schema(schema)


# -- SQLite -----------------------------------------------------------------------------------


async def test_a_file_that_is_not_a_database_is_damaged(tmp_path: Path) -> None:
    database = tmp_path / "notes.db"
    database.write_text("these are my notes, not an event log\n" * 100)
    log = SqliteEventLog(database)
    with pytest.raises(LogDamaged) as refused:
        await log.open()
    assert isinstance(refused.value, EventLogError)
    assert not isinstance(refused.value, sqlite3.Error)
    assert refused.value.where == str(database)
    assert str(refused.value).startswith(f"{database}: is not an SQLite database")
    await log.close()


async def test_a_file_another_log_holds_is_in_use(tmp_path: Path) -> None:
    database = tmp_path / "events.db"
    async with SqliteEventLog(database):
        second = SqliteEventLog(database)
        with pytest.raises(LogInUse) as refused:
            await second.open()
        await second.close()
    assert isinstance(refused.value, EventLogError) and isinstance(refused.value, RuntimeError)
    assert str(refused.value) == (
        f"{database} is in use by another process; the embedded event log has one server "
        "(use PostgreSQL for several)"
    )


async def test_a_file_of_a_newer_schema_is_incompatible(tmp_path: Path) -> None:
    database = tmp_path / "events.db"
    async with SqliteEventLog(database):
        pass
    connection = sqlite3.connect(database)
    connection.execute("PRAGMA user_version = 99")
    connection.close()
    log = SqliteEventLog(database)
    with pytest.raises(LogIncompatible) as refused:
        await log.open()
    await log.close()
    assert isinstance(refused.value, EventLogError) and isinstance(refused.value, RuntimeError)
    assert str(refused.value) == (
        f"{database} has event-log schema 99; this version of the server knows schema 2 at most"
    )


# -- PostgreSQL -------------------------------------------------------------------------------


async def test_a_port_where_nothing_listens_is_unreachable() -> None:
    with unanswered_address() as address:
        port = address.rsplit(":", 1)[1]
        log = PostgresEventLog(f"postgresql://postgres@{address}/test", pool_size=1)
        with pytest.raises(LogUnreachable) as refused:
            await log.open()
        await log.close()
    assert isinstance(refused.value, EventLogError) and isinstance(refused.value, OSError)
    assert "Connect call failed" in str(refused.value) and str(port) in str(refused.value)
    assert isinstance(refused.value.__cause__, OSError)  # the driver's own, kept as the cause


async def test_a_malformed_dsn_is_unreachable() -> None:
    log = PostgresEventLog("not-a-dsn", pool_size=1)
    with pytest.raises(LogUnreachable) as refused:
        await log.open()
    await log.close()
    assert isinstance(refused.value, EventLogError)
    assert str(refused.value).startswith("invalid DSN")
    assert isinstance(refused.value.__cause__, asyncpg.InterfaceError)


async def test_a_database_postgresql_does_not_have_is_unreachable(postgres: None) -> None:
    missing = urlunsplit(urlsplit(POSTGRES_DSN)._replace(path="/no_such_spades_database"))
    log = PostgresEventLog(missing, pool_size=1)
    with pytest.raises(LogUnreachable) as refused:
        await log.open()
    await log.close()
    assert isinstance(refused.value, EventLogError)
    assert str(refused.value) == 'database "no_such_spades_database" does not exist'
    assert isinstance(refused.value.__cause__, asyncpg.PostgresError)


async def test_a_schema_of_a_newer_log_is_incompatible(own_schema: str) -> None:
    async with PostgresEventLog(POSTGRES_DSN, schema=own_schema, pool_size=1):
        pass
    admin = await asyncpg.connect(POSTGRES_DSN)
    try:
        await admin.execute(f'UPDATE "{own_schema}".eventlog_schema SET version = 99')
    finally:
        await admin.close()
    log = PostgresEventLog(POSTGRES_DSN, schema=own_schema, pool_size=1)
    with pytest.raises(LogIncompatible) as refused:
        await log.open()
    await log.close()
    assert isinstance(refused.value, EventLogError) and isinstance(refused.value, RuntimeError)
    assert str(refused.value) == (
        f"schema {own_schema!r} has event-log schema 99; this version of the server knows "
        "schema 2 at most"
    )
