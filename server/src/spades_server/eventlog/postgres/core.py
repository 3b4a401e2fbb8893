"""What every part of the PostgreSQL log shares: its state, its connections, and how it runs a
query.

Driver
------
asyncpg, not psycopg 3: it is asyncio-native (no thread hops), prepares and caches every statement
per connection by itself (an append is one Bind/Execute round trip), decodes ``bytea`` and arrays
in C, and has a pool plus LISTEN callbacks and termination callbacks built in. Measured here both
drivers commit about the same single-insert rate, so the simpler, faster asyncio API wins.

Reads, claims and projections run on a pooled connection (``_run``); the writer, the listener
and the NOTIFY sender each have a connection of their own (``_connect``). ``PostgresLogCore``
holds the state that the writer (``writer``), the final-prefix tracker (``order``) and the
fan-out (``fanout``) share; :class:`~spades_server.eventlog.postgres.PostgresEventLog` is all of
them together.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import asyncpg

from spades_server.eventlog.base import (
    AppendAnswer,
    EventLog,
    LogClosed,
    LogUnavailable,
    StoredEvent,
)

_log = logging.getLogger("spades_server.eventlog.postgres")

_T = TypeVar("_T")

#: How a NATS server's URL starts (``fanout=``).
NATS_SCHEMES = ("nats://", "tls://")


@dataclass(slots=True)
class _Append:
    """An append waiting for the writer (``PostgresEventLog._write_appends``)."""

    stream_id: str
    expected_version: int
    events: list[bytes]
    claim: tuple[str, bytes] | None
    #: Where the outcome goes: the awaiting caller's future, or :meth:`PostgresEventLog.submit`'s
    #: callback.
    future: AppendAnswer


# What the writer hands back for one append: the stored events, or why nothing was stored.
_Outcome = list[StoredEvent] | BaseException


class PostgresLogCore(EventLog):
    """The state and the connections of a PostgreSQL log (see the module's docstring)."""

    def __init__(
        self,
        dsn: str,
        *,
        schema: str | None = None,
        pool_size: int = 10,
        poll_interval: float = 2.0,
        reconnect_delay: float = 0.05,
        notify: bool = True,
        fanout: str = "",
        max_batch: int = 256,
    ) -> None:
        super().__init__()
        if pool_size < 1:
            raise ValueError(f"pool_size must be 1 or more, not {pool_size}")
        if max_batch < 1:
            raise ValueError(f"max_batch must be 1 or more, not {max_batch}")
        if fanout and not fanout.startswith(NATS_SCHEMES):
            raise ValueError(
                f"fanout must be empty (LISTEN/NOTIFY) or a NATS URL (nats://host:port), "
                f"not {fanout!r}"
            )
        if schema is not None and not schema:
            raise ValueError("schema must be a non-empty name or None")
        self.dsn = dsn
        self.schema = schema
        self.pool_size = pool_size
        self.poll_interval = poll_interval
        self.reconnect_delay = reconnect_delay
        #: Send NOTIFYs for this instance's appends (off only to measure their cost).
        self.notify = notify
        #: "" for LISTEN/NOTIFY, else the NATS server that carries the notifications.
        self.fanout = fanout
        #: How many appends (of as many streams) share one statement at most.
        self.max_batch = max_batch
        #: Counters for metrics and tests: appends stored, the transactions that stored them.
        self.appends = 0
        self.commits = 0
        self.notifications_sent = 0
        self.listener_reconnects = 0
        #: How many times the order tracker read storage to judge a hole (``order.py``).
        self.holes_examined = 0
        self.instance_id = uuid.uuid4().hex
        self._state: Literal["new", "opening", "open", "closing", "closed"] = "new"
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pool: asyncpg.Pool | None = None
        self._channel = ""
        self._server_settings: dict[str, str] = {"application_name": "spades-eventlog"}
        self._tasks: list[asyncio.Task[None]] = []
        # Appends waiting for the writer, in call order; _writing while it stores a batch.
        self._queued: list[_Append] = []
        self._writing = False
        self._writer_wakeup = asyncio.Event()
        self._appends_idle = asyncio.Event()
        self._appends_idle.set()
        # Final-prefix state: every position <= _final is committed or will never be; once a
        # snapshot's xmin reaches _bound[1], every position <= _bound[0] is final too.
        self._final = 0
        self._bound: tuple[int, int] | None = None
        self._target = 0  # newest position known committed (by this or another instance)
        self._known: set[int] = set()  # positions above _final this instance saw committed
        self._track_wakeup = asyncio.Event()
        self._track_hurry = asyncio.Event()
        # Coalesced NOTIFY outbox: stream -> (version, position).
        self._outbox: dict[str, tuple[int, int]] = {}
        self._outbox_wakeup = asyncio.Event()
        self._outbox_idle = asyncio.Event()
        self._outbox_idle.set()
        self._sender: asyncpg.Connection | None = None
        self._writer: asyncpg.Connection | None = None
        self._listener: asyncpg.Connection | None = None
        self._listener_lost = asyncio.Event()
        self._nats: Any = None  # a nats.aio.client.Client, when fanout is NATS
        self._subject = ""

    def __repr__(self) -> str:
        return f"PostgresEventLog(schema={self.schema!r}, pool_size={self.pool_size})"

    async def _connect(
        self, application_name: str, settings: dict[str, str] | None = None
    ) -> asyncpg.Connection:
        settings = {
            **self._server_settings,
            **(settings or {}),
            "application_name": application_name,
        }
        connection: asyncpg.Connection = await asyncpg.connect(self.dsn, server_settings=settings)
        return connection

    def _check_open(self) -> None:
        if self._state != "open":
            raise LogClosed(f"{self!r} is {self._state}, not open")
        if asyncio.get_running_loop() is not self._loop:
            raise RuntimeError(f"{self!r} must be used from the event loop that opened it")

    async def _run(self, work: Callable[..., Awaitable[_T]], *arguments: Any) -> _T:
        """Run ``work(connection, *arguments)`` on a pooled connection."""
        if self._state not in ("open", "closing") or self._pool is None:
            raise LogClosed(f"{self!r} is {self._state}, not open")
        try:
            async with self._pool.acquire() as connection:
                return await work(connection, *arguments)
        except asyncpg.InterfaceError as error:
            if self._state != "open":
                raise LogClosed(f"{self!r} is {self._state}") from error
            raise

    async def _query(self, work: Callable[..., Awaitable[_T]], *arguments: Any) -> _T:
        """Run a read on a pooled connection, a storage failure (PostgreSQL down, the way to it
        cut) reported as :class:`LogUnavailable`, as a write's is: the caller is refused with a
        reason code it can act on (retry), never a driver's error."""
        try:
            return await self._run(work, *arguments)
        except _STORAGE_FAILURES as error:
            if self._state != "open":
                raise
            raise LogUnavailable(f"the event log cannot be read now: {error}") from error

    async def _guarded(self, work: Awaitable[_T]) -> _T | None:
        """Background work: log and carry on after a database error."""
        try:
            return await work
        except (*_STORAGE_FAILURES, asyncpg.PostgresError, LogClosed) as error:
            if self._state == "open":
                _log.warning("event log: background query failed: %s", error)
                await self.pause(self.reconnect_delay)
            return None


#: What PostgreSQL or the way to it answers when it cannot take a write now, whatever the
#: request: the connection (class 08), no room or memory (53), a read-only server or an
#: operator's shutdown (25006, 57), the client side of a lost connection.
_STORAGE_FAILURES = (
    OSError,
    TimeoutError,
    asyncpg.PostgresConnectionError,
    asyncpg.InsufficientResourcesError,
    asyncpg.ReadOnlySQLTransactionError,
    asyncpg.OperatorInterventionError,
    asyncpg.InterfaceError,
    # A pooled connection left mid-operation by the failure ("cannot switch to state ...;
    # another operation is in progress"): nothing was sent; the pool replaces it on release.
    asyncpg.InternalClientError,
)


async def _fetch(connection: asyncpg.Connection, sql: str, *arguments: Any) -> list[Any]:
    rows: list[Any] = await connection.fetch(sql, *arguments)
    return rows


async def _fetchrow(connection: asyncpg.Connection, sql: str, *arguments: Any) -> Any:
    return await connection.fetchrow(sql, *arguments)


async def _fetchval(connection: asyncpg.Connection, sql: str, *arguments: Any) -> Any:
    return await connection.fetchval(sql, *arguments)


async def _keep_session(connection: asyncpg.Connection) -> None:
    """A connection goes back to the pool as it is (see ``create_pool(reset=...)``)."""
