from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest_asyncio

from spades_server.server import SpadesServer
from tests.server.harness import Client, running_server


@pytest_asyncio.fixture
async def server(tmp_path: Path) -> AsyncIterator[SpadesServer]:
    async with running_server(tmp_path / "tables.db") as running:
        yield running


@pytest_asyncio.fixture
async def client(server: SpadesServer) -> AsyncIterator[Client]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        yield Client(channel)
