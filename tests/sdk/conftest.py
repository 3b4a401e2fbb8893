"""The SDK suite's fixtures: a running server on each log backend, as the server suite's
(tests/support/fixtures.py's ``storage``), and an SDK client of it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from spades.client import SpadesClient
from spades_server.app.server import SpadesServer
from tests.support.backends import LogStorage, Storages
from tests.support.servers import running_server


@pytest.fixture
def database(tmp_path: Path) -> Path:
    return tmp_path / "tables.db"


@pytest.fixture
def log_storage(storage: Storages) -> LogStorage | Path:
    """Where the suite's server keeps its log: each test runs once on SQLite and once on
    PostgreSQL (tests/support/fixtures.py's ``storage``)."""
    return storage()


@pytest_asyncio.fixture
async def server(log_storage: LogStorage | Path) -> AsyncIterator[SpadesServer]:
    async with running_server(log_storage, shutdown_grace=0.2) as running:
        yield running


@pytest_asyncio.fixture
async def client(server: SpadesServer) -> AsyncIterator[SpadesClient]:
    async with SpadesClient(f"127.0.0.1:{server.port}") as connected:
        yield connected
