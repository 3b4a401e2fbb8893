"""The event-log backends under test: every contract test runs once per LOGS_UNDER_CONTRACT.

A backend is a factory that makes a new, unopened log on the storage named by a test's own
directory; calling it twice with the same directory must give two logs on the same storage
(the reopen tests rely on it). The PostgreSQL backend derives a fresh schema name from the
directory and drops that schema after the test; it runs when a server answers at
``SPADES_TEST_POSTGRES_DSN`` and otherwise is skipped, saying why, or fails under CI (the rule
and the helpers are shared with the server suites: tests/support/backends.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio

from spades_server.eventlog import EventLog, PostgresEventLog, SqliteEventLog
from tests.support.backends import (
    POOL_SIZE,
    POSTGRES_DSN,
    drop_schema,
    require_postgres,
    schema_for,
)


async def _drop_schema_of(directory: Path) -> None:
    await drop_schema(schema_for(directory))


@dataclass(frozen=True)
class Backend:
    name: str
    make: Callable[[Path], EventLog]
    #: Runs only where PostgreSQL answers (else skipped, or failed in CI: require_postgres).
    needs_postgres: bool = False
    #: Removes the storage named by a test's directory after the test.
    cleanup: Callable[[Path], Awaitable[None]] | None = None


LOGS_UNDER_CONTRACT = [
    Backend("sqlite", lambda directory: SqliteEventLog(directory / "events.db")),
    Backend(
        "sqlite-full",
        lambda directory: SqliteEventLog(directory / "events.db", durability="full"),
    ),
    Backend(
        "postgres",
        lambda directory: PostgresEventLog(
            POSTGRES_DSN, schema=schema_for(directory), pool_size=POOL_SIZE
        ),
        needs_postgres=True,
        cleanup=_drop_schema_of,
    ),
]

#: The one backend two log instances can share (two replicas): for the tests of that alone.
SHARED_LOG = next(backend for backend in LOGS_UNDER_CONTRACT if backend.name == "postgres")

NewLog = Callable[[], EventLog]


@pytest.fixture(params=LOGS_UNDER_CONTRACT, ids=lambda backend: backend.name)
def backend(request: pytest.FixtureRequest) -> Backend:
    chosen: Backend = request.param
    if chosen.needs_postgres:
        require_postgres()
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
