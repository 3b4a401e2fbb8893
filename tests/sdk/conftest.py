from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from spades.client import SpadesClient
from spades_server.server import SpadesServer
from tests.server.harness import running_server


@pytest.fixture
def database(tmp_path: Path) -> Path:
    return tmp_path / "tables.db"


@pytest_asyncio.fixture
async def server(database: Path) -> AsyncIterator[SpadesServer]:
    async with running_server(database, shutdown_grace=0.2) as running:
        yield running


@pytest_asyncio.fixture
async def client(server: SpadesServer) -> AsyncIterator[SpadesClient]:
    async with SpadesClient(f"127.0.0.1:{server.port}") as connected:
        yield connected
