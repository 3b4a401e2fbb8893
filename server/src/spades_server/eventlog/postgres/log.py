"""The PostgreSQL log's class: opened, closed, appended to and read here; its parts elsewhere.

:class:`PostgresEventLog` is what the server holds: it creates or migrates the schema
(``schema``), starts the writer (``writer``), the final-prefix tracker (``order``) and the
fan-out (``fanout``) on ``open``, queues appends for the writer and serves the reads, claims and
projections on pooled connections (``core``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from spades_server.eventlog.base import (
    ClaimTaken,
    LogIncompatible,
    LogUnavailable,
    LogUnreachable,
    ProjectionCheckpoint,
    ProjectionRow,
    StoredEvent,
    _append_payloads,
    _check_not_negative,
    _check_stream_id,
)
from spades_server.eventlog.inspection import LogInspection
from spades_server.eventlog.postgres.core import (
    _STORAGE_FAILURES,
    _Append,
    _fetch,
    _fetchrow,
    _fetchval,
    _keep_session,
)
from spades_server.eventlog.postgres.fanout import Fanout, _channel_for
from spades_server.eventlog.postgres.schema import (
    _DELETE_ROW,
    _GET_CHECKPOINT,
    _GET_ROW,
    _LIST_ROWS,
    _MIGRATION_LOCK,
    _MIGRATIONS,
    _PROJECTION_SCHEMA,
    _PUT_CHECKPOINT,
    _PUT_ROW,
    _READ_ALL,
    _READ_CLAIM,
    _READ_STREAM,
    _STREAM_VERSION,
    SCHEMA_VERSION,
    _quote_ident,
)
from spades_server.eventlog.postgres.writer import _WRITER_SETTINGS, Writer

__all__ = ["PostgresEventLog"]

#: What the driver (or the way to PostgreSQL, or to NATS) raises when the log cannot open: no
#: server listening, a login or database refused, a malformed DSN. Wrapped in LogUnreachable.
_CANNOT_OPEN = (OSError, asyncpg.PostgresError, asyncpg.InterfaceError)


class PostgresEventLog(Writer, Fanout):
    """The event log in PostgreSQL, shared by any number of log instances (server replicas).

    >>> async def demo(dsn):
    ...     async with PostgresEventLog(dsn, schema="spades") as log:
    ...         await log.append("table-1", 0, [b"created"])
    ...         return await log.stream_version("table-1")

    ``pool_size`` connections serve reads (and claims and projections); each instance has three
    more: the writer's, which stores the appends, one that LISTENs and one that sends the
    coalesced NOTIFYs. ``max_batch`` bounds how many appends share one statement.
    """

    def inspection(self) -> LogInspection | None:
        """None: this backend offers no storage check. PostgreSQL guards its own storage (page
        checksums, its WAL, replication), its version gaps cannot come from a lost file, and a
        replica starting must not hold up the others with a scan of the shared log; a damaged
        table is still refused when it is first loaded (the table store checks what it folds)."""
        return None

    async def open(self) -> None:
        if self._state != "new":
            raise RuntimeError(f"{self!r} was already opened; make a new one to reopen")
        self._state = "opening"
        self._loop = asyncio.get_running_loop()
        if self.schema is not None:
            self._server_settings["search_path"] = _quote_ident(self.schema)
        try:
            self._pool = await asyncpg.create_pool(
                self.dsn,
                min_size=self.pool_size,
                max_size=self.pool_size,
                server_settings=self._server_settings,
                # The log keeps no session state, so the pool's reset query on every release
                # would only add a round trip to each append and read.
                reset=_keep_session,
            )
            async with self._pool.acquire() as connection:
                schema = await self._migrate(connection)
                row = await connection.fetchrow(
                    "SELECT set_config('synchronous_commit', 'off', true),"
                    " (SELECT coalesce(max(position), 0) FROM events),"
                    " pg_current_xact_id()::text::bigint"
                )
                assert row is not None
                _, head, xid = row
            self._channel = _channel_for(schema)
            if head:
                self._bound = (head, xid)  # final once every older writer has finished
            self._target = head
            self._writer = await self._connect("spades-eventlog-write", _WRITER_SETTINGS)
            if self.fanout:
                await self._connect_nats(schema)
            else:
                if self.notify:
                    self._sender = await self._connect("spades-eventlog-notify")
                await self._listen()
        except BaseException as error:
            await self._shut_down()
            if isinstance(error, _CANNOT_OPEN):
                raise LogUnreachable(str(error)) from error
            raise
        self.notifier.start(self._final)
        self._state = "open"
        self._tasks = [
            asyncio.create_task(self._write_appends(), name="eventlog-write"),
            asyncio.create_task(self._track(), name="eventlog-track"),
            asyncio.create_task(self._send_notifications(), name="eventlog-notify"),
            asyncio.create_task(self._keep_listening(), name="eventlog-listen"),
        ]
        self._track_wakeup.set()

    async def close(self) -> None:
        if self._state in ("closing", "closed"):
            return
        if self._state == "new":
            self._state = "closed"
            self.notifier.close()
            return
        await self._shut_down()

    async def _shut_down(self) -> None:
        """Finish the appends in flight and their NOTIFYs, then stop everything."""
        self._state = "closing"
        if self._tasks:
            await self._appends_idle.wait()  # the writer stores what was queued before
        if self._outbox and self._tasks:
            self._outbox_wakeup.set()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._outbox_idle.wait(), 5.0)
        self.notifier.close()
        # Cancel until every worker is done: on Python 3.11 a cancellation that lands while an
        # asyncio.wait_for inside a worker completes can be lost, and the worker loops on.
        pending: set[asyncio.Task[None]] = set(self._tasks)
        while pending:
            for task in pending:
                task.cancel()
            _, pending = await asyncio.wait(pending, timeout=0.5)
        for connection in (self._writer, self._listener, self._sender):
            if connection is not None:
                with contextlib.suppress(Exception):
                    await connection.close(timeout=2.0)
        if self._nats is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._nats.drain(), 2.0)  # sends what is buffered
        if self._pool is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._pool.close(), 10.0)
            self._pool.terminate()
        self._state = "closed"

    async def _migrate(self, connection: PoolConnectionProxy[asyncpg.Record]) -> str:
        """Create or migrate the schema (idempotent, serialised by an advisory lock)."""
        async with connection.transaction():
            key = f"{_MIGRATION_LOCK}{self.schema or ''}"
            await connection.execute("SELECT pg_advisory_xact_lock(hashtext($1))", key)
            if self.schema is not None:
                await connection.execute(f"CREATE SCHEMA IF NOT EXISTS {_quote_ident(self.schema)}")
            schema: str | None = await connection.fetchval("SELECT current_schema()")
            if schema is None:
                raise LogIncompatible("the connection's search_path names no existing schema")
            await connection.execute(
                "CREATE TABLE IF NOT EXISTS eventlog_schema (version integer NOT NULL)"
            )
            version = await connection.fetchval("SELECT max(version) FROM eventlog_schema")
            current = version or 0
            if current > SCHEMA_VERSION:
                raise LogIncompatible(
                    f"schema {schema!r} has event-log schema {current}; this version of the "
                    f"server knows schema {SCHEMA_VERSION} at most"
                )
            for step in range(current + 1, SCHEMA_VERSION + 1):
                for statement in _MIGRATIONS[step]:
                    await connection.execute(statement)
            if current < SCHEMA_VERSION:
                await connection.execute("DELETE FROM eventlog_schema")
                await connection.execute(
                    "INSERT INTO eventlog_schema (version) VALUES ($1)", SCHEMA_VERSION
                )
            for statement in _PROJECTION_SCHEMA:
                await connection.execute(statement)
        return schema

    async def append(
        self,
        stream_id: str,
        expected_version: int,
        events: Sequence[bytes],
        *,
        claim: tuple[str, bytes] | None = None,
    ) -> list[StoredEvent]:
        """Append atomically iff the stream is at ``expected_version``; see :class:`EventLog`.

        Cancelling the awaiting task does not withdraw the append once it is queued: it may
        still be committed (and is then published and notified as usual).
        """
        payloads = _append_payloads(stream_id, expected_version, events)
        self._check_open()
        assert self._loop is not None
        future: asyncio.Future[list[StoredEvent]] = self._loop.create_future()
        self._queue(_Append(stream_id, expected_version, payloads, claim, future))
        return await future

    def submit(
        self,
        stream_id: str,
        expected_version: int,
        events: Sequence[bytes],
        then: Callable[[list[StoredEvent] | BaseException], None],
        *,
        claim: tuple[str, bytes] | None = None,
    ) -> None:
        """:meth:`append` handing its outcome to ``then``, called where the writer answers each
        append (no future, no task per append)."""
        payloads = _append_payloads(stream_id, expected_version, events)
        self._check_open()
        self._queue(_Append(stream_id, expected_version, payloads, claim, then))

    async def claim(self, stream_id: str, key: str, data: bytes) -> bytes | None:
        _check_stream_id(stream_id)
        self._check_open()
        try:
            await self._write(self._claim_alone, stream_id, key, bytes(data))
        except ClaimTaken as taken:
            return taken.data
        return None

    async def read_claim(self, stream_id: str, key: str) -> bytes | None:
        _check_stream_id(stream_id)
        self._check_open()
        data = await self._query(_fetch_claim, stream_id, key)
        return bytes(data) if data is not None else None

    async def _write_projection(
        self,
        projection: str,
        rows: list[ProjectionRow],
        checkpoint: ProjectionCheckpoint | None,
        *,
        drop: bool,
        deleted: Sequence[ProjectionRow] = (),
    ) -> None:
        self._check_open()
        try:
            await self._run(_save_projection, projection, rows, checkpoint, drop, deleted)
        except _STORAGE_FAILURES as error:
            if self._state != "open":
                raise
            raise LogUnavailable(f"the event log cannot be written now: {error}") from error

    async def load_projection(self, projection: str) -> ProjectionCheckpoint | None:
        row = await self._query(_fetchrow, _GET_CHECKPOINT, projection)
        return None if row is None else ProjectionCheckpoint(row["position"], row["data"])

    async def projection_row(self, projection: str, key: str) -> ProjectionRow | None:
        row = await self._query(_fetchrow, _GET_ROW, projection, key)
        return None if row is None else _projection_row(row)

    async def projection_rows(
        self,
        projection: str,
        *,
        listed_only: bool,
        offset: int,
        limit: int,
        excluded: Sequence[str] = (),
    ) -> list[ProjectionRow]:
        _check_not_negative("offset", offset)
        _check_not_negative("limit", limit)
        rows = await self._query(
            _fetch, _LIST_ROWS, projection, listed_only, limit, offset, list(excluded)
        )
        return [_projection_row(row) for row in rows]

    async def read(
        self, stream_id: str, after_version: int = 0, limit: int | None = None
    ) -> list[StoredEvent]:
        _check_stream_id(stream_id)
        _check_not_negative("after_version", after_version)
        if limit is not None:
            _check_not_negative("limit", limit)
        rows = await self._query(_fetch, _READ_STREAM, stream_id, after_version, limit)
        return [
            StoredEvent(stream_id, row["version"], row["position"], row["recorded_at"], row["data"])
            for row in rows
        ]

    async def stream_version(self, stream_id: str) -> int:
        _check_stream_id(stream_id)
        version: int = await self._query(_fetchval, _STREAM_VERSION, stream_id)
        return version

    async def read_all(self, after_position: int = 0, limit: int = 1000) -> list[StoredEvent]:
        """Events after ``after_position`` by position, up to the first position that may still
        commit (see the module's notes): possibly fewer than ``limit`` while newer ones exist."""
        _check_not_negative("after_position", after_position)
        _check_not_negative("limit", limit)
        final, bound = self._final, self._bound  # before the query: older than its snapshot
        rows = await self._query(_fetch, _READ_ALL, after_position, limit)
        xmin = rows[0]["xmin"]
        rows = [row for row in rows if row["position"] is not None]
        positions = [row["position"] for row in rows]
        count = self._final_prefix(after_position, positions, xmin, final, bound)
        return [
            StoredEvent(
                row["stream_id"], row["version"], row["position"], row["recorded_at"], row["data"]
            )
            for row in rows[:count]
        ]


async def _fetch_claim(connection: asyncpg.Connection, stream_id: str, key: str) -> Any:
    return await connection.fetchval(_READ_CLAIM, stream_id, key)


async def _save_projection(
    connection: asyncpg.Connection,
    projection: str,
    rows: list[ProjectionRow],
    checkpoint: ProjectionCheckpoint | None,
    drop: bool,
    deleted: Sequence[ProjectionRow],
) -> None:
    async with connection.transaction():
        if drop:
            await connection.execute(
                "DELETE FROM projection_rows WHERE projection = $1", projection
            )
            await connection.execute(
                "DELETE FROM projection_checkpoints WHERE projection = $1", projection
            )
        if rows:
            await connection.executemany(
                _PUT_ROW,
                [
                    (projection, row.key, row.sort_key, row.listed, row.version, row.data)
                    for row in rows
                ],
            )
        if deleted:
            await connection.executemany(
                _DELETE_ROW, [(projection, row.key, row.version) for row in deleted]
            )
        if checkpoint is not None:
            await connection.execute(
                _PUT_CHECKPOINT, projection, checkpoint.position, checkpoint.data
            )


def _projection_row(row: Any) -> ProjectionRow:
    return ProjectionRow(row["key"], row["sort_key"], row["listed"], row["version"], row["data"])
