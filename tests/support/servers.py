"""Real servers for the tests: one on an ephemeral 127.0.0.1 port over a test's log (SQLite file
or PostgreSQL schema), one with its web port, replicas sharing one PostgreSQL log; and reading
what a server's log holds (its head, a table's events and journal entries)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from spades.engine import Rules, new_match
from spades.v1 import events_pb2
from spades_server.app.server import SpadesServer
from spades_server.domain import table_events, tokens
from spades_server.domain.tables import Decided
from spades_server.eventlog.postgres import PostgresEventLog
from spades_server.ops.clocks import Clock
from spades_server.ops.settings import Settings
from spades_server.store import journal
from tests.support.backends import POSTGRES_DSN, LogStorage, drop_schema, head_position, schema_for
from tests.support.clients import READ_TIMEOUT


def new_server(
    storage: LogStorage | Path, clock: Clock | None = None, /, **settings: object
) -> SpadesServer:
    """A server (not started) on ``storage``, on an ephemeral port (unless ``settings`` give
    ``listen``), no metrics nor web port (unless they give them), with ``settings``; a bare
    path is a SQLite file (for suites that run on SQLite only). With ``clock`` (a
    ``tests.support.time.ManualClock``) it keeps time by it."""
    storage = LogStorage.of(storage)
    chosen: dict[str, Any] = {"listen": "127.0.0.1:0", "metrics": "off", "web": "off", **settings}
    return SpadesServer(
        Settings(database=str(storage.database), **chosen),
        # On SQLite the server opens the file its settings name, as in production.
        storage.new_log() if storage.backend == "postgres" else None,
        clock,
    )


@asynccontextmanager
async def running_server(
    storage: LogStorage | Path, clock: Clock | None = None, /, **settings: object
) -> AsyncIterator[SpadesServer]:
    """A started server on ``storage`` (a test's SQLite file or PostgreSQL schema), keeping
    time by ``clock`` if one is given."""
    server = new_server(storage, clock, **settings)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def log_head(server: SpadesServer) -> int:
    """The position of the last event in the whole log (0 when it is empty), once the lobby
    has caught up with it (tests.support.backends.head_position)."""
    await lobby_caught_up(server)
    return await head_position(server.log)


async def lobby_caught_up(server: SpadesServer, table_ids: Iterable[str] | None = None) -> None:
    """Wait until the lobby has folded every event the log holds for ``table_ids`` (default:
    every table it lists).

    The lobby is a projection of the log, and GetTable/ListTables serve it. On PostgreSQL it
    follows the log's final prefix (``subscribe_all``), a few milliseconds behind an action the
    client already saw acknowledged on its Play stream: GetTable waits for it to reach what the
    replica's table cache has (test_lobby.py), ListTables does not; on SQLite it has always
    caught up by then. Tests whose point is what the lobby says about a table, not how soon,
    wait here first."""

    async def folded(table_id: str) -> None:
        version = await server.log.stream_version(table_id)
        # (a finished table may have moved from the lobby's memory to the log's rows)
        while (summary := await server.projection.find(table_id)) is None or (
            summary.sequence < version
        ):
            await asyncio.sleep(0.002)

    chosen = list(server.projection.tables if table_ids is None else table_ids)
    await asyncio.wait_for(asyncio.gather(*map(folded, chosen)), READ_TIMEOUT)


async def log_events(server: SpadesServer, table_id: str) -> list[events_pb2.Event]:
    """A table's public events as the log stores them (nothing redacted), with their sequences
    and action ids (the server's secrets are in :func:`log_entries`)."""
    out = []
    for entry in await log_entries(server, table_id):
        event = events_pb2.Event()
        event.CopyFrom(entry.message)
        event.action_id = entry.action_id
        out.append(event)
    return out


async def log_entries(server: SpadesServer, table_id: str) -> list[table_events.Entry]:
    """A table's journal entries, as the log stores them (secrets included)."""
    return [journal.decode(stored) for stored in await server.log.read(table_id)]


async def create_admin_table(
    server: SpadesServer,
    rules: Rules,
    *,
    seed: bytes | None = None,
    preset_deals: Sequence[Sequence[Iterable[int]]] = (),
    name: str = "admin table",
) -> str:
    """A table made the way an operator would (a given seed or deals), through the store."""
    table_id = tokens.new_table_id()
    created = new_match(rules, seed=seed, preset_deals=preset_deals)
    await server.store.create(table_id, Decided.of(created, listing=table_events.Listing(name)))
    stored = await server.log.read(table_id)
    await asyncio.wait_for(server.projection.caught_up(stored[-1].position), READ_TIMEOUT)
    return table_id


@asynccontextmanager
async def web_server(storage: LogStorage | Path, **settings: object) -> AsyncIterator[SpadesServer]:
    """A started server on ``storage`` (a bare path: a SQLite file) with its web port on any
    free port."""
    async with running_server(storage, web="127.0.0.1:0", **settings) as served:
        yield served


@asynccontextmanager
async def replicas(
    directory: Path,
    count: int,
    clock: Clock | None = None,
    /,
    *,
    fanout: str = "",
    **settings: Any,
) -> AsyncIterator[list[SpadesServer]]:
    """``count`` started replicas on one PostgreSQL log (a schema of ``directory``'s own,
    dropped after), hearing of each other's commits through ``fanout``: "" LISTEN/NOTIFY, or
    a NATS URL, keeping time by ``clock`` if one is given. The caller has checked that
    PostgreSQL answers (``postgres`` fixture)."""
    schema = schema_for(directory)
    settings = {"house_bots": 0, **settings}
    servers = [
        SpadesServer(
            Settings(listen="127.0.0.1:0", metrics="off", web="off", **settings),
            PostgresEventLog(POSTGRES_DSN, schema=schema, pool_size=4, fanout=fanout),
            clock,
        )
        for _ in range(count)
    ]
    try:
        for server in servers:
            await server.start()
        yield servers
    finally:
        for server in servers:
            await server.stop()
        await drop_schema(schema)
