"""The event-log backends under test: every contract test runs once per entry of BACKENDS.

A backend is a factory that makes a new, unopened log on the storage named by a test's own
directory; calling it twice with the same directory must give two logs on the same storage
(the reopen tests rely on it). The PostgreSQL backend derives a fresh schema name from the
directory and drops that schema after the test; it runs when a server answers at
``SPADES_TEST_POSTGRES_DSN`` (default ``postgresql://postgres@127.0.0.1:5432/test``) and is
skipped, saying why, when none does.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import pytest
import pytest_asyncio

from spades_server.eventlog import EventLog, PostgresEventLog, SqliteEventLog

POSTGRES_DSN = os.environ.get(
    "SPADES_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test"
)
_postgres_status: list[str | None] = []  # [None] reachable, [reason] not, [] not checked yet


def postgres_unavailable() -> str | None:
    """Why the PostgreSQL tests cannot run (checked once per session), or None if they can."""
    if not _postgres_status:

        async def probe() -> None:
            connection = await asyncpg.connect(POSTGRES_DSN, timeout=3)
            await connection.close()

        try:
            asyncio.run(probe())
        except (OSError, asyncpg.PostgresError, TimeoutError) as error:
            _postgres_status.append(
                f"no PostgreSQL server at SPADES_TEST_POSTGRES_DSN={POSTGRES_DSN!r}: "
                f"{type(error).__name__}: {error}"
            )
        else:
            _postgres_status.append(None)
    return _postgres_status[0]


def require_postgres() -> None:
    reason = postgres_unavailable()
    if reason is not None:
        pytest.skip(f"PostgreSQL tests skipped: {reason}")


def schema_for(directory: Path) -> str:
    """A schema name of its own for the test that owns ``directory``."""
    return "eventlog_test_" + hashlib.sha256(str(directory).encode()).hexdigest()[:16]


async def drop_schema(schema: str) -> None:
    connection = await asyncpg.connect(POSTGRES_DSN)
    try:
        await connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await connection.close()


async def _drop_schema_of(directory: Path) -> None:
    await drop_schema(schema_for(directory))


@dataclass(frozen=True)
class Backend:
    name: str
    make: Callable[[Path], EventLog]
    #: Why this backend cannot run here (the tests are then skipped), or None.
    unavailable: Callable[[], str | None] = lambda: None
    #: Removes the storage named by a test's directory after the test.
    cleanup: Callable[[Path], Awaitable[None]] | None = None


BACKENDS = [
    Backend("sqlite", lambda directory: SqliteEventLog(directory / "events.db")),
    Backend(
        "sqlite-full",
        lambda directory: SqliteEventLog(directory / "events.db", durability="full"),
    ),
    Backend(
        "postgres",
        lambda directory: PostgresEventLog(POSTGRES_DSN, schema=schema_for(directory), pool_size=4),
        unavailable=postgres_unavailable,
        cleanup=_drop_schema_of,
    ),
]

NewLog = Callable[[], EventLog]


@pytest.fixture(params=BACKENDS, ids=lambda backend: backend.name)
def backend(request: pytest.FixtureRequest) -> Backend:
    chosen: Backend = request.param
    reason = chosen.unavailable()
    if reason is not None:
        pytest.skip(f"{chosen.name} backend skipped: {reason}")
    return chosen


@pytest_asyncio.fixture
async def new_log(backend: Backend, tmp_path: Path) -> AsyncIterator[NewLog]:
    """Makes unopened logs, all on this test's storage; closes every one at the end."""
    made: list[EventLog] = []

    def make() -> EventLog:
        log = backend.make(tmp_path)
        made.append(log)
        return log

    yield make
    for log in made:
        await log.close()
    if backend.cleanup is not None:
        await backend.cleanup(tmp_path)


@pytest_asyncio.fixture
async def log(new_log: NewLog) -> EventLog:
    """An open log on fresh storage (closed by ``new_log``)."""
    opened = new_log()
    await opened.open()
    return opened
