"""The event-log backends under test: every contract test runs once per entry of BACKENDS.

A backend is a factory that makes a new, unopened log on the storage named by a test's own
directory; calling it twice with the same directory must give two logs on the same storage
(the reopen tests rely on it). The PostgreSQL backend joins this list with a factory that
derives a fresh database or schema name from the directory.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio

from spades_server.eventlog import EventLog, SqliteEventLog


@dataclass(frozen=True)
class Backend:
    name: str
    make: Callable[[Path], EventLog]


BACKENDS = [
    Backend("sqlite", lambda directory: SqliteEventLog(directory / "events.db")),
    Backend(
        "sqlite-full",
        lambda directory: SqliteEventLog(directory / "events.db", durability="full"),
    ),
]

NewLog = Callable[[], EventLog]


@pytest.fixture(params=BACKENDS, ids=lambda backend: backend.name)
def backend(request: pytest.FixtureRequest) -> Backend:
    chosen: Backend = request.param
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


@pytest_asyncio.fixture
async def log(new_log: NewLog) -> EventLog:
    """An open log on fresh storage (closed by ``new_log``)."""
    opened = new_log()
    await opened.open()
    return opened
