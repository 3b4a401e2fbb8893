"""The server suite's fixtures: a running server (once per log backend) and a client of it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest_asyncio

from spades_server.app.server import SpadesServer
from tests.support.backends import Storages
from tests.support.clients import Client
from tests.support.servers import running_server


@pytest_asyncio.fixture
async def server(storage: Storages) -> AsyncIterator[SpadesServer]:
    async with running_server(storage()) as running:
        yield running


@pytest_asyncio.fixture
async def client(server: SpadesServer) -> AsyncIterator[Client]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        yield Client(channel)
