"""A real server with its web port on an ephemeral 127.0.0.1 port, for the web tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from spades_server.app.server import SpadesServer
from spades_server.ops.settings import Settings


@asynccontextmanager
async def web_server(database: Path, **settings: object) -> AsyncIterator[SpadesServer]:
    """A started server on the SQLite file ``database`` with its web port on any free port."""
    served = SpadesServer(
        Settings(
            listen="127.0.0.1:0",
            database=str(database),
            metrics="off",
            web="127.0.0.1:0",
            **settings,  # type: ignore[arg-type]
        )
    )
    await served.start()
    try:
        yield served
    finally:
        await served.stop()
