"""The two event-log backends every server suite runs on, SQLite and PostgreSQL, for the tests.

A test's log lives in storage of its own: a SQLite file in the test's directory, or a PostgreSQL
schema whose name is derived from that file's path (dropped after the test). The same name in
the same test always gives the same storage, so a server restarted (in-process or as a killed
and restarted process) finds the log it left.

PostgreSQL is the server at ``SPADES_TEST_POSTGRES_DSN`` (default
``postgresql://postgres@127.0.0.1:5432/test``). When none answers, its tests are skipped, saying
how to run them; under CI (``CI`` set, as CI services set it) a PostgreSQL is provided, so there
the skip is a failure (tests/support/skips.py, the rule for every skip).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import asyncpg
import pytest

from spades_server.eventlog import EventLog, PostgresEventLog, SqliteEventLog
from spades_server.eventlog.base import StoredEvent

DEFAULT_POSTGRES_DSN = "postgresql://postgres@127.0.0.1:5432/test"
POSTGRES_DSN = os.environ.get("SPADES_TEST_POSTGRES_DSN", DEFAULT_POSTGRES_DSN)
#: Connections per in-process PostgreSQL log: enough for the tests, few enough that many
#: servers (and other test runs on the same PostgreSQL) stay under its connection limit.
POOL_SIZE = 4

#: The NATS server a PostgreSQL log may fan out through (``--fanout``), for the replica tests.
NATS_URL = os.environ.get("SPADES_TEST_NATS_URL", "nats://127.0.0.1:4222")

BackendName = Literal["sqlite", "postgres"]
BACKENDS: tuple[BackendName, ...] = ("sqlite", "postgres")

_postgres_status: list[str | None] = []  # [None] reachable, [reason] not, [] not checked yet


def probe_postgres(dsn: str) -> str | None:
    """Why no PostgreSQL answers at ``dsn``, or None when one does (checked now)."""

    async def probe() -> None:
        connection = await asyncpg.connect(dsn, timeout=3)
        await connection.close()

    try:
        asyncio.run(probe())
    except (OSError, asyncpg.PostgresError, TimeoutError) as error:
        return f"no PostgreSQL server at {dsn!r}: {type(error).__name__}: {error}"
    return None


def postgres_unavailable() -> str | None:
    """Why the PostgreSQL tests cannot run (checked once per session), or None if they can."""
    if not _postgres_status:
        _postgres_status.append(probe_postgres(POSTGRES_DSN))
    return _postgres_status[0]


def in_ci(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether this run is CI's (CI services set ``CI``, usually to ``true``)."""
    return environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require_postgres(reason: str | None = None) -> None:
    """Go on when PostgreSQL answers; else skip, saying how to run (a failure under CI).

    ``reason`` is why it does not answer (default: the session's probe of POSTGRES_DSN).
    """
    if reason is None:
        reason = postgres_unavailable()
        if reason is None:
            return
    pytest.skip(
        f"PostgreSQL tests skipped: {reason}; start one there (trust auth, database 'test') or"
        " point SPADES_TEST_POSTGRES_DSN at one to run them"
    )


_nats_status: list[str | None] = []


def nats_unavailable() -> str | None:
    """Why no NATS server answers at NATS_URL (checked once per session), or None."""
    if not _nats_status:
        parts = urlsplit(NATS_URL)
        try:
            with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 4222), 3):
                _nats_status.append(None)
        except OSError as error:
            _nats_status.append(f"no NATS server at {NATS_URL!r}: {error}")
    return _nats_status[0]


def require_nats() -> None:
    """Go on when NATS answers; else skip, saying how to run (a failure under CI)."""
    reason = nats_unavailable()
    if reason is None:
        return
    pytest.skip(
        f"NATS fan-out tests skipped: {reason}; start one (nats-server) or point "
        "SPADES_TEST_NATS_URL at one to run them"
    )


def schema_for(directory: Path) -> str:
    """A schema name of its own for the test (and storage) that owns ``directory``."""
    return "eventlog_test_" + hashlib.sha256(str(directory).encode()).hexdigest()[:16]


def dsn_with_schema(schema: str, dsn: str = POSTGRES_DSN) -> str:
    """``dsn`` whose connections use ``schema`` (asyncpg passes a DSN's unknown query
    parameters, here ``search_path``, as session settings): for a server process, which takes
    only ``--postgres-dsn``."""
    parts = urlsplit(dsn)
    query = [(key, value) for key, value in parse_qsl(parts.query) if key != "search_path"]
    return urlunsplit(parts._replace(query=urlencode([*query, ("search_path", schema)])))


async def _execute(statement: str) -> None:
    connection = await asyncpg.connect(POSTGRES_DSN)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


async def create_schema(schema: str) -> None:
    await _execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')


async def drop_schema(schema: str) -> None:
    await _execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


async def head_position(log: EventLog) -> int:
    """The position of the newest event ``log`` holds now (0 when it is empty).

    On PostgreSQL this is read from the table: ``read_all`` serves only the prefix proven
    final, which stops short of a hole (a position drawn by a conflict's loser or a killed
    statement) while any older transaction is still open anywhere on the cluster, so reading
    until it returns nothing may miss the newest events."""
    if isinstance(log, PostgresEventLog):
        table = f'"{log.schema}".events' if log.schema else "events"
        connection = await asyncpg.connect(log.dsn)
        try:
            return int(await connection.fetchval(f"SELECT coalesce(max(position), 0) FROM {table}"))
        finally:
            await connection.close()
    position = 0
    while batch := await log.read_all(position, limit=1000):
        position = batch[-1].position
    return position


async def read_to_head(log: EventLog, after: int = 0, timeout: float = 30.0) -> list[StoredEvent]:
    """Every event after position ``after`` up to the log's head as it is now (see
    :func:`head_position`), in position order: waiting, at most ``timeout`` seconds, while a
    hole below newer events is not proven final yet."""
    head = await head_position(log)
    events: list[StoredEvent] = []
    deadline = time.monotonic() + timeout
    while after < head:
        batch = await log.read_all(after, limit=1000)
        if not batch:
            assert time.monotonic() < deadline, f"read_all stayed at {after}, the head is {head}"
            await asyncio.sleep(0.05)
            continue
        events.extend(batch)
        after = batch[-1].position
    return events


@dataclass(frozen=True)
class LogStorage:
    """Where one server's event log lives in a test: ``database`` on SQLite, or on PostgreSQL
    the schema named after ``database`` (the file itself is then never made)."""

    backend: BackendName
    database: Path

    @classmethod
    def of(cls, where: LogStorage | Path) -> LogStorage:
        """``where`` itself, or a bare path as a SQLite file (for suites on SQLite only)."""
        return where if isinstance(where, LogStorage) else cls("sqlite", where)

    @property
    def schema(self) -> str:
        return schema_for(self.database)

    def new_log(self) -> EventLog:
        """An unopened log on this storage (for a server in this process, or for reading what
        a stopped one left)."""
        if self.backend == "postgres":
            return PostgresEventLog(POSTGRES_DSN, schema=self.schema, pool_size=POOL_SIZE)
        return SqliteEventLog(self.database)

    async def prepare(self) -> None:
        """Make the storage exist before a server *process* opens it: the PostgreSQL log
        creates only a schema named by ``schema=``, and a process is given a DSN."""
        if self.backend == "postgres":
            await create_schema(self.schema)

    def flags(self) -> list[str]:
        """The ``spades-server`` flags that open this storage (after :meth:`prepare`)."""
        if self.backend == "postgres":
            return ["--postgres-dsn", dsn_with_schema(self.schema)]
        return ["--database", str(self.database)]

    async def remove(self) -> None:
        """Drop what the test left (a SQLite file goes with the test's directory)."""
        if self.backend == "postgres":
            await drop_schema(self.schema)


class Storages:
    """A test's log storages by name, all on one backend; ``storages()`` is the default one,
    and the same name always gives the same storage (a restarted server finds its log)."""

    def __init__(self, backend: BackendName, directory: Path) -> None:
        self.backend = backend
        self.directory = directory
        self.made: dict[str, LogStorage] = {}

    def __call__(self, name: str = "tables") -> LogStorage:
        if name not in self.made:
            self.made[name] = LogStorage(self.backend, self.directory / f"{name}.db")
        return self.made[name]
