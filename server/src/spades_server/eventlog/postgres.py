"""The event log on PostgreSQL: several server replicas share one log and see each other's events.

Driver
------
asyncpg, not psycopg 3: it is asyncio-native (no thread hops), prepares and caches every statement
per connection by itself (an append is one Bind/Execute round trip), decodes ``bytea`` and arrays
in C, and has a pool plus LISTEN callbacks and termination callbacks built in. Measured here both
drivers commit about the same single-insert rate, so the simpler, faster asyncio API wins.

Append: the appends of many streams in one statement, from one writer
---------------------------------------------------------------------
``append`` queues its request and waits for a future. One writer task per log instance takes
everything queued while its previous statement was in flight and stores it with ONE statement
(one round trip, one transaction, one WAL flush) on a connection of its own, as the SQLite log's
writer thread takes its queue into one transaction. Still no BEGIN/COMMIT around it (an explicit
transaction around one insert halved throughput here): the statement commits on its own::

    WITH tx      AS MATERIALIZED (SELECT pg_current_xact_id()),
         request AS MATERIALIZED (per append: stream, expected version, claim, and the
                                  stream's version read now, coalesce(max(version), 0)),
         claimed AS (INSERT INTO claims: the claims of the appends at their expected version
                     ON CONFLICT DO NOTHING RETURNING stream_id),
         ins     AS (INSERT INTO events: the events of the appends at their expected version
                     whose claim, if any, was stored, FROM tx, ... RETURNING ...)
    SELECT per append: the version read, its stored rows or none, a claim's first data

Each append is still decided on its own: one at another version (:class:`VersionConflict`, with
the version read) or whose key was claimed before (:class:`ClaimTaken`, with the first claim's
data) stores nothing and changes nothing for the others. A batch holds at most one append per
stream, so a stream's later appends go in the next batch: they are applied in call order and
see the earlier ones' outcome (a caller may issue several appends to a stream back to back).
An append is answered when its statement has returned, that is after the COMMIT that holds it.
A caller that stops waiting does not withdraw its queued append.

Two writers that both read the same version race on the unique ``(stream_id, version)`` key:
the later statement waits for the first to commit, then fails with ``unique_violation``, having
stored nothing. Each of its appends is then tried alone (a statement each), so only the one that
lost gets its :class:`VersionConflict`; so is any other error that may be one append's (a
deadlock between two replicas' batches, a value PostgreSQL refuses). A storage failure (the
connection, no space, a read-only server) fails each append of the batch with
:class:`LogUnavailable`. A batch lists its streams in sorted order, so that two replicas'
batches take the unique key's locks in one order and do not deadlock in the common case.

Why this shape: the server's one event-loop thread is its limit (~90 % of a core at 64 tables),
and appending one statement per append cost that thread about a fifth of its time: each append
was a task, a shield, a pool acquire and release and a round trip of its own (py-spy at 64
tables, ``bench_server.py --py-spy``: 20 % of the loop thread's samples in asyncpg and 22 % in
this module, 10 % in the socket write of each statement alone). With the writer, about 20
appends shared each statement in the same benchmark (5,306 appends in 271 commits), and the
whole log was 8-10 % of the thread's samples (asyncpg 4.5-5 %; the writer about 5 %, the NOTIFY
sender 2 %, the lobby's ``read_all`` 1.5 %). ``bench_server.py --tables 64 --backends
sqlite,postgres --baseline`` (five runs, each row beside the one-statement-per-append log; the
figures and the command are in docs/scaling.md): server CPU per action 1.25-1.41 ms against
1.64-1.99 ms (SQLite's 1.23-1.44 ms in the same runs), PostgreSQL's own CPU 0.12-0.39 ms per
action against 0.55-1.13 ms, actions/s 1.03-1.68x the old log's and 0.62-1.13x SQLite's (the old
log 0.60-0.78x), on a 2-core machine shared with other benchmarks. The log alone
(``bench_eventlog.py``, five interleaved pairs): 64 writers, one stream each, 8,500-11,300
appends/s against 1,400-2,400; one writer alone, where every batch is one append, 400-1,140
against 630-940 (medians 824 and 811: no difference shown in this machine's noise).

The writer's connection takes a generic plan of its statement (``plan_cache_mode =
force_generic_plan``): left to choose, PostgreSQL planned it afresh at every execution (its
estimate for each custom plan always won), about 0.6 ms each: a one-append statement took
1.0-1.3 ms, with the generic plan 0.7 ms (the old one-append statement 0.55-0.7 ms). Only that
connection does: the pool's reads keep PostgreSQL's choice (a generic plan of a paged ``LIMIT $n
OFFSET $m`` read may be worse for its values; not measured).

What it costs: the appends of a batch wait for each other. One whose version another writer
holds uncommitted (another replica, racing) holds up its batch until that writer finishes.

Global order across replicas: why ``position > last`` is not enough
--------------------------------------------------------------------
``position`` comes from a sequence (``CACHE 1``: values are handed out in increasing order in
time). Two appends that draw positions 7 and 8 may commit in the order 8, 7: a reader that sees
8 and moves its cursor past it never sees 7. ``read_all`` and ``subscribe_all`` therefore serve
only a *final* prefix: position by position from the cursor, stopping at the first missing
position (a hole) unless that hole is proven final (its writer finished without committing it:
a unique-key loser, a failed statement, or values the sequence skipped after a crash).

The proof uses transaction ids. Every append statement first takes its transaction id
(``pg_current_xact_id()`` in a MATERIALIZED CTE), *then* draws positions (all of a batch's, in
one transaction, so they commit together). When the tracker
(below) sees a hole g under a visible position p, it takes a transaction id X of its own in that
same statement (an otherwise empty transaction, committed with ``synchronous_commit=off``): g
was drawn before p, so g's writer got its id before X. Once a later snapshot's
``pg_snapshot_xmin`` reaches X, every transaction older than X has finished, so every hole up
to p is final: either it has committed and is visible, or it never will. The log keeps one such
pending bound (p, X) and a *final* position at or below which every hole is known final;
``read_all`` skips those holes and stops at any other. Holes are rare (only from conflicts that
lost on the unique key, or failed statements); the common out-of-order case simply fills in when
the slower append commits, a moment later.

The bound is a *fresh* transaction id, not the snapshot's ``pg_snapshot_xmax``: that is "latest
completed id + 1", and a transaction that took a newer id and is still running is not listed in
the snapshot at all, so "xmin = xmax" does not mean that nobody is writing (an early version of
this log skipped an event that way under the racing-replicas test).

For ``subscribe_all`` a tracker task moves the notifier's head (``AppendNotifier.advance_all``)
over the final prefix only. Positions this instance committed itself extend that prefix with no
query when they are contiguous with it; the tracker reads positions from storage only when a
hole has stood for 2 ms (an append of another replica whose NOTIFY has not come yet, or a real
hole), backing off to 50 ms while it stays.

Why not the simpler "serve only rows whose stored ``xid < pg_snapshot_xmin``" with position
order: transaction ids and sequence values are not taken in the same order (writer A takes its
xid, B takes its xid, B draws 7, A draws 8, A commits: xmin is B's id, A's row passes the filter,
and 7 is skipped). That filter is only gap-free when the reader orders by ``(xid, position)``,
which would make the exposed positions neither dense nor increasing in ``read_all`` order.

A limitation shared by every xmin-based scheme: a long-running *writing* transaction anywhere on
the PostgreSQL cluster delays deciding that a hole is final (never that an event is served).

Fan-out: LISTEN/NOTIFY, out of the insert
------------------------------------------
A NOTIFY inside every insert transaction serialises commits (the notification queue lock is held
through commit): measured here about 3,000 commits per second from eight connections instead of
about 7,900. So appends do not notify. Once a batch of appends commits, each stream's newest version
and position go into an outbox; one sender task per log instance sends everything gathered while its
previous NOTIFY was in flight as one ``pg_notify`` statement on its own connection (payload: JSON
``{"from": instance, "events": [[stream, version, position], ...]}``, split below PostgreSQL's
8,000-byte limit). A dedicated listening connection per instance receives the other instances'
notifications: their streams' subscribers are woken and read from storage, and the final-prefix
tracker reads forward for ``subscribe_all``. Local appends wake local stream subscribers at once,
with the events in memory. If the listening connection drops, it reconnects with back-off, LISTENs
again, and then re-reads the head of every watched stream and the newest position, so subscribers
catch up on whatever was missed; the same re-read runs every ``poll_interval`` seconds as a safety
net (a replica that died between its commit and its NOTIFY).

Fan-out over NATS instead
-------------------------
With ``fanout="nats://host:port"`` the same payloads go over a core NATS subject
(``spades.eventlog.<schema>``, no JetStream: nothing is stored there) instead of NOTIFY, and
each instance subscribes to that subject instead of LISTENing; PostgreSQL stays the log of
record, and the periodic re-read stays the safety net (NATS delivers at most once: a message
published while a replica is cut off is never seen by it, which the re-read covers, as it
covers a replica that died between its commit and its publish). After the NATS client
reconnects, the watched streams and the newest position are re-read, as after a LISTEN
reconnect. Measured here (``tests/benchmarks/bench_fanout.py``, see ``docs/scaling.md``): a
core subject delivers several times the notifications of NOTIFY at a fraction of the CPU.

Schema
------
Created or migrated on ``open`` inside one transaction under an advisory lock, so several
processes may open the log at once. ``schema=`` puts the tables in that schema (created if
missing); otherwise the connection's ``search_path`` decides (for example a DSN with
``options=-c search_path=spades``). NOTIFY channels are per schema. Every write must go through
:meth:`PostgresEventLog.append`: an insert that draws a position before taking its transaction
id would void the proof above.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import re
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from spades_server.eventlog.base import (
    AppendAnswer,
    ClaimTaken,
    EventLog,
    LogClosed,
    LogUnavailable,
    ProjectionCheckpoint,
    ProjectionRow,
    StoredEvent,
    VersionConflict,
    _answer_append,
    _append_payloads,
    _check_not_negative,
    _check_stream_id,
)

__all__ = ["PostgresEventLog"]

_log = logging.getLogger(__name__)

SCHEMA_VERSION = 2

# Held (per transaction) while the schema is created or migrated: key = hash of this + schema.
_MIGRATION_LOCK = "spades_server.eventlog.postgres:migrate:"

_MIGRATIONS: dict[int, list[str]] = {
    1: [
        """
        CREATE TABLE events (
            position    bigint GENERATED ALWAYS AS IDENTITY (CACHE 1) PRIMARY KEY,
            stream_id   text             NOT NULL,
            version     integer          NOT NULL CHECK (version >= 1),
            recorded_at double precision NOT NULL,
            data        bytea            NOT NULL,
            UNIQUE (stream_id, version)
        )
        """,
    ],
    # Write-once keys beside each stream (the first result of each action id).
    2: [
        """
        CREATE TABLE claims (
            stream_id text  NOT NULL,
            key       text  NOT NULL,
            data      bytea NOT NULL,
            PRIMARY KEY (stream_id, key)
        )
        """,
    ],
}

#: What projections store (see ``ProjectionRow``): derived from the events, so these are created
#: when missing whatever the schema version, and dropping them loses nothing. Keys sort as
#: bytes (COLLATE "C"), as on SQLite, so both backends page in one order.
_PROJECTION_SCHEMA = [
    """
    CREATE TABLE IF NOT EXISTS projection_checkpoints (
        projection text PRIMARY KEY, position bigint NOT NULL, data bytea NOT NULL
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS projection_rows (
        projection text NOT NULL, key text COLLATE "C" NOT NULL, sort_key bigint NOT NULL,
        listed boolean NOT NULL, version integer NOT NULL, data bytea NOT NULL,
        PRIMARY KEY (projection, key)
    )
    """,
    "CREATE INDEX IF NOT EXISTS projection_rows_by_order"
    " ON projection_rows (projection, sort_key DESC, key DESC)",
    "CREATE INDEX IF NOT EXISTS projection_rows_listed_by_order"
    " ON projection_rows (projection, listed, sort_key DESC, key DESC)",
]
_PUT_ROW = """
INSERT INTO projection_rows AS r (projection, key, sort_key, listed, version, data)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (projection, key) DO UPDATE SET
    sort_key = excluded.sort_key, listed = excluded.listed, version = excluded.version,
    data = excluded.data
WHERE excluded.version >= r.version
"""
_PUT_CHECKPOINT = """
INSERT INTO projection_checkpoints AS c (projection, position, data) VALUES ($1, $2, $3)
ON CONFLICT (projection) DO UPDATE SET position = excluded.position, data = excluded.data
WHERE excluded.position >= c.position
"""
_GET_CHECKPOINT = "SELECT position, data FROM projection_checkpoints WHERE projection = $1"
_ROW_COLUMNS = "key, sort_key, listed, version, data"
_GET_ROW = f"SELECT {_ROW_COLUMNS} FROM projection_rows WHERE projection = $1 AND key = $2"
_LIST_ROWS = (
    f"SELECT {_ROW_COLUMNS} FROM projection_rows WHERE projection = $1 AND (listed OR NOT $2)"
    " AND NOT (key = ANY($5::text[])) ORDER BY sort_key DESC, key DESC LIMIT $3 OFFSET $4"
)

# Appends to several streams (one append per stream) in one statement, so one transaction:
# $1-$4 one element per append (stream, expected version, claim key and data or NULLs), $5-$7
# one per event (its append's 1-based index, its 1-based place in that append, its bytes). Each
# append is checked against its own expected version (``actual``), claims its key only at that
# version (a key claimed before stores nothing and keeps the append's events out), and inserts
# its events only if both held; the others' outcomes do not depend on it. One row per stored
# event, or one row with a NULL position for an append that stored nothing (``first_claim``:
# the data of a claim taken before, when that is why and this snapshot sees it).
_APPEND_BATCH = """
WITH tx AS MATERIALIZED (SELECT pg_current_xact_id() AS xid),
request AS MATERIALIZED (
    SELECT r.i, r.stream_id, r.expected, r.claim_key, r.claim_data,
           (SELECT coalesce(max(e.version), 0) FROM events AS e
            WHERE e.stream_id = r.stream_id) AS actual
    FROM unnest($1::text[], $2::integer[], $3::text[], $4::bytea[])
         WITH ORDINALITY AS r(stream_id, expected, claim_key, claim_data, i)
),
claimed AS (
    INSERT INTO claims (stream_id, key, data)
    SELECT stream_id, claim_key, claim_data FROM request
    WHERE actual = expected AND claim_key IS NOT NULL
    ORDER BY i
    ON CONFLICT (stream_id, key) DO NOTHING
    RETURNING stream_id
),
admitted AS (
    SELECT i, stream_id, actual FROM request
    WHERE actual = expected
      AND (claim_key IS NULL OR stream_id IN (SELECT stream_id FROM claimed))
),
ins AS (
    INSERT INTO events (stream_id, version, recorded_at, data)
    SELECT a.stream_id, a.actual + e.ord,
           extract(epoch FROM statement_timestamp())::double precision, e.data
    FROM tx, admitted AS a
    JOIN unnest($5::integer[], $6::integer[], $7::bytea[]) AS e(i, ord, data) ON e.i = a.i
    ORDER BY a.i, e.ord
    RETURNING position, stream_id, version, recorded_at
)
SELECT r.i, r.actual, ins.position, ins.version, ins.recorded_at,
       CASE WHEN r.claim_key IS NOT NULL AND r.actual = r.expected
                 AND NOT EXISTS (SELECT FROM claimed AS c WHERE c.stream_id = r.stream_id)
            THEN (SELECT c.data FROM claims AS c
                  WHERE c.stream_id = r.stream_id AND c.key = r.claim_key)
       END AS first_claim
FROM request AS r LEFT JOIN ins ON ins.stream_id = r.stream_id
ORDER BY r.i, ins.version
"""
_STREAM_VERSION = "SELECT coalesce(max(version), 0) FROM events WHERE stream_id = $1"
# A concurrent claim of the same key waits for the first to commit, then inserts nothing.
_CLAIM = (
    "INSERT INTO claims (stream_id, key, data) VALUES ($1, $2, $3)"
    " ON CONFLICT (stream_id, key) DO NOTHING RETURNING true"
)
_READ_CLAIM = "SELECT data FROM claims WHERE stream_id = $1 AND key = $2"
_READ_STREAM = (
    "SELECT position, version, recorded_at, data FROM events"
    " WHERE stream_id = $1 AND version > $2 ORDER BY version LIMIT $3"
)
# The snapshot's xmin comes from the very snapshot that reads the rows (the statement's).
_READ_ALL = """
SELECT pg_snapshot_xmin(s)::text::bigint AS xmin,
       e.position, e.stream_id, e.version, e.recorded_at, e.data
FROM pg_current_snapshot() AS s
LEFT JOIN LATERAL (
    SELECT position, stream_id, version, recorded_at, data FROM events
    WHERE position > $1 ORDER BY position LIMIT $2
) AS e ON true
ORDER BY e.position
"""
# Takes a transaction id after the snapshot: a bound for the writers of the holes it sees.
_POSITIONS_AFTER = """
SELECT set_config('synchronous_commit', 'off', true) AS sync,
       pg_current_xact_id()::text::bigint AS xid, pg_snapshot_xmin(s)::text::bigint AS xmin,
       array(SELECT position FROM events WHERE position > $1 ORDER BY position LIMIT $2)
           AS positions
FROM pg_current_snapshot() AS s
"""
_HEADS = """
SELECT NULL::text AS stream_id, (SELECT max(position) FROM events) AS head
UNION ALL
SELECT stream_id, max(version) FROM events WHERE stream_id = ANY($1::text[]) GROUP BY stream_id
"""
_NOTIFY = "SELECT pg_notify($1, payload) FROM unnest($2::text[]) AS payload"

_NATS_START_ATTEMPTS = 2  # further tries to reach NATS when the log opens
_NOTIFY_LIMIT = 7900  # bytes per payload; PostgreSQL refuses 8000 and more
_TRACK_BATCH = 10_000
_TRACK_GRACE = 0.002  # seconds a hole may stand before the tracker queries
#: The writer's connection plans its one statement once: left to choose, PostgreSQL re-plans
#: it at every execution (its estimate for a custom plan always wins), about 0.6 ms each here.
_WRITER_SETTINGS = {"plan_cache_mode": "force_generic_plan"}

_T = TypeVar("_T")


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


def _stream_of(request: _Append) -> str:
    return request.stream_id


class PostgresEventLog(EventLog):
    """The event log in PostgreSQL, shared by any number of log instances (server replicas).

    >>> async def demo(dsn):
    ...     async with PostgresEventLog(dsn, schema="spades") as log:
    ...         await log.append("table-1", 0, [b"created"])
    ...         return await log.stream_version("table-1")

    ``pool_size`` connections serve reads (and claims and projections); each instance has three
    more: the writer's, which stores the appends, one that LISTENs and one that sends the
    coalesced NOTIFYs. ``max_batch`` bounds how many appends share one statement.
    """

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

    # -- lifecycle ----------------------------------------------------------------------------

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
        except BaseException:
            await self._shut_down()
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

    async def _migrate(self, connection: PoolConnectionProxy[asyncpg.Record]) -> str:
        """Create or migrate the schema (idempotent, serialised by an advisory lock)."""
        async with connection.transaction():
            key = f"{_MIGRATION_LOCK}{self.schema or ''}"
            await connection.execute("SELECT pg_advisory_xact_lock(hashtext($1))", key)
            if self.schema is not None:
                await connection.execute(f"CREATE SCHEMA IF NOT EXISTS {_quote_ident(self.schema)}")
            schema: str | None = await connection.fetchval("SELECT current_schema()")
            if schema is None:
                raise RuntimeError("the connection's search_path names no existing schema")
            await connection.execute(
                "CREATE TABLE IF NOT EXISTS eventlog_schema (version integer NOT NULL)"
            )
            version = await connection.fetchval("SELECT max(version) FROM eventlog_schema")
            current = version or 0
            if current > SCHEMA_VERSION:
                raise RuntimeError(
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

    # -- writing ------------------------------------------------------------------------------

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

    def _queue(self, request: _Append) -> None:
        self._queued.append(request)
        if not self._writing:
            self._appends_idle.clear()
            self._writer_wakeup.set()

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
        data = await self._run(_fetch_claim, stream_id, key)
        return bytes(data) if data is not None else None

    async def _write(self, work: Callable[..., Awaitable[_T]], *arguments: Any) -> _T:
        """Run a write, reporting storage failures as :class:`LogUnavailable`."""
        try:
            result = await self._run(work, *arguments)
        except _STORAGE_FAILURES as error:
            if self._state != "open":
                raise
            reason = f"the event log cannot be written now: {error}"
            self.write_health.failed(reason)
            raise LogUnavailable(reason) from error
        self.write_health.worked()
        return result

    @staticmethod
    async def _claim_alone(
        connection: asyncpg.Connection, stream_id: str, key: str, data: bytes
    ) -> None:
        async with connection.transaction():
            await _claim_in(connection, stream_id, key, data)

    # -- the writer: appends of many streams in one statement ---------------------------------

    async def _write_appends(self) -> None:
        """Store what ``append`` queued: everything queued while the previous batch was in
        flight goes to PostgreSQL as one statement (one transaction, one round trip)."""
        while True:
            if not self._queued:
                self._writing = False
                self._appends_idle.set()  # close() waits for this
                self._writer_wakeup.clear()
                await self._writer_wakeup.wait()
                continue
            self._writing = True
            self._appends_idle.clear()
            batch = self._take_batch()
            try:
                outcomes = await self._store(batch)
            except Exception as error:  # not the storage's: tell the callers, keep on writing
                outcomes = [error] * len(batch)
            except BaseException as error:  # cancelled (the loop ends): tell who still waits
                stopped = LogClosed(f"{self!r} stopped: {error!r}")
                self._answer(batch, [stopped] * len(batch))
                raise
            self._deliver(batch, outcomes)

    def _take_batch(self) -> list[_Append]:
        """The next batch: at most one append per stream (a stream's later appends wait for the
        next batch, so they see the earlier ones' outcome, in call order), ``max_batch`` in all,
        in stream order (so two replicas' batches take the unique key's locks in one order)."""
        queued = self._queued
        if len(queued) == 1:
            self._queued = []
            return queued
        batch: list[_Append] = []
        later: list[_Append] = []
        streams: set[str] = set()
        for request in queued:
            if request.stream_id in streams or len(batch) >= self.max_batch:
                later.append(request)
            else:
                streams.add(request.stream_id)
                batch.append(request)
        self._queued = later
        batch.sort(key=_stream_of)
        return batch

    async def _store(self, batch: list[_Append]) -> list[_Outcome]:
        """Each append's outcome: the stored events, or why nothing of it was stored."""
        try:
            outcomes = await self._on_writer(batch)
        except Exception as error:
            storage = isinstance(error, _STORAGE_FAILURES)
            if len(batch) > 1 and (not storage or isinstance(error, asyncpg.DataError)):
                # A failure that may be one append's (a unique-key race lost to another
                # replica, a deadlock between replicas, a value refused): the statement stored
                # nothing, so each append is tried alone, for its own outcome.
                return [(await self._store([request]))[0] for request in batch]
            if storage:
                return self._unavailable(error, len(batch))
            return [error]
        self.write_health.worked()
        return outcomes

    async def _on_writer(self, batch: list[_Append]) -> list[_Outcome]:
        """Run a batch on the writer's own connection (connected again after it was lost)."""
        if self._state not in ("open", "closing"):
            raise LogClosed(f"{self!r} is {self._state}, not open")
        connection = self._writer
        if connection is None or connection.is_closed():
            connection = await self._connect("spades-eventlog-write", _WRITER_SETTINGS)
            self._writer = connection
        try:
            outcomes = await self._insert(connection, batch)
        except BaseException as error:
            # An error PostgreSQL reported leaves the connection usable; anything else (lost,
            # timed out, cancelled mid-statement) may not have: start afresh next time.
            if connection.is_closed() or not isinstance(
                error, asyncpg.PostgresError | asyncpg.DataError
            ):
                connection.terminate()
                self._writer = None
            raise
        if any(isinstance(outcome, list) for outcome in outcomes):
            self.commits += 1
        return outcomes

    def _unavailable(self, error: Exception, count: int) -> list[_Outcome]:
        """What a storage failure means for each of ``count`` appends: LogUnavailable (the raw
        error while closing), one exception each, as each caller raises its own."""
        if self._state != "open":
            return [error] * count
        reason = f"the event log cannot be written now: {error}"
        self.write_health.failed(reason)
        outcomes: list[_Outcome] = []
        for _ in range(count):
            unavailable = LogUnavailable(reason)
            unavailable.__cause__ = error
            outcomes.append(unavailable)
        return outcomes

    @staticmethod
    async def _insert(connection: asyncpg.Connection, batch: list[_Append]) -> list[_Outcome]:
        streams: list[str] = []
        expected: list[int] = []
        keys: list[str | None] = []
        claims: list[bytes | None] = []
        indices: list[int] = []
        places: list[int] = []
        payloads: list[bytes] = []
        for index, request in enumerate(batch, start=1):
            streams.append(request.stream_id)
            expected.append(request.expected_version)
            if request.claim is None:
                keys.append(None)
                claims.append(None)
            else:
                keys.append(request.claim[0])
                claims.append(request.claim[1])
            for place, data in enumerate(request.events, start=1):
                indices.append(index)
                places.append(place)
                payloads.append(data)
        try:
            rows = await connection.fetch(
                _APPEND_BATCH, streams, expected, keys, claims, indices, places, payloads
            )
        except asyncpg.UniqueViolationError:
            if len(batch) > 1:
                raise  # tried again one by one
            # A concurrent writer read the same version and committed first.
            stream_id = batch[0].stream_id
            actual = await connection.fetchval(_STREAM_VERSION, stream_id)
            return [VersionConflict(stream_id, batch[0].expected_version, actual)]
        stored: list[list[StoredEvent]] = [[] for _ in batch]
        refused: dict[int, _Outcome] = {}
        for row in rows:
            index = row["i"] - 1
            request = batch[index]
            if row["position"] is not None:
                version = row["version"]
                data = request.events[version - request.expected_version - 1]
                stored[index].append(
                    StoredEvent(
                        request.stream_id, version, row["position"], row["recorded_at"], data
                    )
                )
            elif row["actual"] != request.expected_version:
                refused[index] = VersionConflict(
                    request.stream_id, request.expected_version, row["actual"]
                )
            elif request.claim is not None:
                key = request.claim[0]
                first = row["first_claim"]
                if first is None:  # claimed by a transaction this statement's snapshot missed
                    first = await connection.fetchval(_READ_CLAIM, request.stream_id, key)
                refused[index] = ClaimTaken(request.stream_id, key, bytes(first))
            else:
                refused[index] = RuntimeError(f"an append to {request.stream_id!r} stored nothing")
        return [refused.get(index, events) for index, events in enumerate(stored)]

    def _deliver(self, batch: list[_Append], outcomes: list[_Outcome]) -> None:
        """Publish what the batch committed, then answer each append."""
        committed: list[StoredEvent] = []
        for request, outcome in zip(batch, outcomes, strict=True):
            if isinstance(outcome, list):
                committed.extend(outcome)
                if self.notify:
                    last = outcome[-1]
                    self._outbox[request.stream_id] = (last.version, last.position)
        if committed:
            self.appends += sum(isinstance(outcome, list) for outcome in outcomes)
            # Stream subscribers here: at once, from memory (each stream's events in order).
            self.notifier.publish_to_streams(committed)
            self._committed(committed)
            if self.notify:
                self._outbox_idle.clear()
                self._outbox_wakeup.set()
        self._answer(batch, outcomes)

    @staticmethod
    def _answer(batch: list[_Append], outcomes: list[_Outcome]) -> None:
        for request, outcome in zip(batch, outcomes, strict=True):
            _answer_append(request.future, outcome)

    def _committed(self, stored: list[StoredEvent]) -> None:
        """Advance the final prefix over committed positions, at once when they extend it
        (no query); otherwise the tracker looks if the hole below them persists."""
        final = self._final
        newest = 0
        for event in stored:
            position = event.position
            if position > final:
                self._known.add(position)
            if position > newest:
                newest = position
        self._raise_final(final)
        if self._known and newest > self._target:
            self._target = newest
            self._track_wakeup.set()

    def _raise_final(self, final: int) -> None:
        """Every position up to ``final`` is final; so is a contiguous run of known commits."""
        known = self._known
        if final > self._final and known:
            known.difference_update([p for p in known if p <= final])
        while final + 1 in known:
            final += 1
            known.discard(final)
        if final > self._final:
            self._final = final
            self.notifier.advance_all(final)

    # -- what projections store ---------------------------------------------------------------

    async def save_projection(
        self,
        projection: str,
        rows: Sequence[ProjectionRow],
        checkpoint: ProjectionCheckpoint | None = None,
    ) -> None:
        await self._write_projection(projection, list(rows), checkpoint, drop=False)

    async def drop_projection(self, projection: str) -> None:
        await self._write_projection(projection, [], None, drop=True)

    async def _write_projection(
        self,
        projection: str,
        rows: list[ProjectionRow],
        checkpoint: ProjectionCheckpoint | None,
        *,
        drop: bool,
    ) -> None:
        self._check_open()
        try:
            await self._run(_save_projection, projection, rows, checkpoint, drop)
        except _STORAGE_FAILURES as error:
            if self._state != "open":
                raise
            raise LogUnavailable(f"the event log cannot be written now: {error}") from error

    async def load_projection(self, projection: str) -> ProjectionCheckpoint | None:
        row = await self._run(_fetchrow, _GET_CHECKPOINT, projection)
        return None if row is None else ProjectionCheckpoint(row["position"], row["data"])

    async def projection_row(self, projection: str, key: str) -> ProjectionRow | None:
        row = await self._run(_fetchrow, _GET_ROW, projection, key)
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
        rows = await self._run(
            _fetch, _LIST_ROWS, projection, listed_only, limit, offset, list(excluded)
        )
        return [_projection_row(row) for row in rows]

    # -- reading ------------------------------------------------------------------------------

    async def read(
        self, stream_id: str, after_version: int = 0, limit: int | None = None
    ) -> list[StoredEvent]:
        _check_stream_id(stream_id)
        _check_not_negative("after_version", after_version)
        if limit is not None:
            _check_not_negative("limit", limit)
        rows = await self._run(_fetch, _READ_STREAM, stream_id, after_version, limit)
        return [
            StoredEvent(stream_id, row["version"], row["position"], row["recorded_at"], row["data"])
            for row in rows
        ]

    async def stream_version(self, stream_id: str) -> int:
        _check_stream_id(stream_id)
        version: int = await self._run(_fetchval, _STREAM_VERSION, stream_id)
        return version

    async def read_all(self, after_position: int = 0, limit: int = 1000) -> list[StoredEvent]:
        """Events after ``after_position`` by position, up to the first position that may still
        commit (see the module's notes): possibly fewer than ``limit`` while newer ones exist."""
        _check_not_negative("after_position", after_position)
        _check_not_negative("limit", limit)
        final, bound = self._final, self._bound  # before the query: older than its snapshot
        rows = await self._run(_fetch, _READ_ALL, after_position, limit)
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

    def _final_prefix(
        self,
        after: int,
        positions: list[int],
        xmin: int,
        final: int,
        bound: tuple[int, int] | None,
        fresh_xid: int | None = None,
    ) -> int:
        """How many of ``positions`` (read after ``after``, ascending, by one snapshot) may be
        served, given the final prefix and bound as they were before that snapshot; advances
        the shared final prefix with what this snapshot proves. ``fresh_xid``: a transaction
        id the same statement took after its snapshot, to record a bound with."""
        newest = positions[-1] if positions else 0
        if bound is not None and xmin >= bound[1]:
            final = max(final, bound[0])  # every writer of a position <= bound[0] has finished
            if self._bound == bound:
                self._bound = None
        count, last = 0, after
        for position in positions:
            if position != last + 1 and position - 1 > final:
                break  # a hole that may still commit
            if last <= final:
                final = max(final, position)
            count, last = count + 1, position
        if fresh_xid is not None and newest > final and self._bound is None:
            self._bound = (newest, fresh_xid)
        self._raise_final(final)
        return count

    # -- the final-prefix tracker (subscribe_all) ---------------------------------------------

    async def _track(self) -> None:
        """Move ``subscribe_all`` forward to every position proven final."""
        delay = 0.0
        while True:
            if self._target <= self._final:
                delay = 0.0
                self._track_wakeup.clear()
                try:
                    await asyncio.wait_for(self._track_wakeup.wait(), self.poll_interval)
                except TimeoutError:
                    await self._guarded(self._resync())
                continue
            # A hole below the target: most are appends still in flight here or NOTIFYs on
            # their way, which fill it without a query. Query only if it stays put.
            stuck = self._final
            # A follower that allows a lag (the lobby) lets foreign commits gather: one query
            # then proves many positions final instead of one query per notification.
            if not self._track_hurry.is_set():
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(delay or max(_TRACK_GRACE, self.lag_allowed)):
                        await self._track_hurry.wait()
            self._track_hurry.clear()
            if self._final != stuck:
                delay = 0.0
                continue
            final, bound = self._final, self._bound
            row = await self._guarded(self._run(_fetchrow, _POSITIONS_AFTER, final, _TRACK_BATCH))
            if row is not None:
                positions: list[int] = list(row["positions"])
                if positions:
                    self._target = max(self._target, positions[-1])
                self._final_prefix(final, positions, row["xmin"], final, bound, row["xid"])
            # A hole that may still commit: look again soon, backing off.
            delay = min(max(delay * 2, _TRACK_GRACE), 0.05) if self._final < self._target else 0.0

    async def _resync(self) -> None:
        """Re-read the newest position and the heads of watched streams (missed NOTIFYs)."""
        watched = self.notifier.watched_streams()
        rows = await self._run(_fetch, _HEADS, watched)
        for row in rows:
            if row["stream_id"] is None:
                head = row["head"] or 0
                if head > self._target:
                    self._target = head
                    self._track_wakeup.set()
            else:
                self.notifier.advance_stream(row["stream_id"], row["head"])

    def hurry(self) -> None:
        self._track_hurry.set()

    # -- NOTIFY out, LISTEN in ----------------------------------------------------------------

    async def _send_notifications(self) -> None:
        """Send what appends put in the outbox, one NOTIFY statement per gathered batch."""
        while True:
            if not self._outbox:
                self._outbox_idle.set()  # close() waits for this
            await self._outbox_wakeup.wait()
            self._outbox_wakeup.clear()
            if not self._outbox:
                continue
            batch, self._outbox = self._outbox, {}
            payloads = _payloads(self.instance_id, batch)
            if self._nats is not None:
                try:
                    for payload in payloads:  # buffered by the client: no round trip each
                        await self._nats.publish(self._subject, payload.encode())
                    self.notifications_sent += len(payloads)
                except Exception as error:  # the client's errors: cut off, buffer full
                    _log.warning("event log: NATS publish failed: %s", error)
                continue
            for attempt in range(2):
                try:
                    if self._sender is None or self._sender.is_closed():
                        self._sender = await self._connect("spades-eventlog-notify")
                    await self._sender.execute(_NOTIFY, self._channel, payloads)
                    self.notifications_sent += len(payloads)
                    break
                except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as error:
                    _log.warning("event log: NOTIFY failed (attempt %d): %s", attempt + 1, error)
                    if self._sender is not None:
                        self._sender.terminate()
                    self._sender = None
                    # Other replicas still catch up through their periodic re-read.

    async def _connect_nats(self, schema: str) -> None:
        """Connect to the NATS server and subscribe to this schema's subject."""
        import nats  # only a NATS fan-out needs the client

        async def reconnected() -> None:
            self.listener_reconnects += 1
            _log.info("event log: NATS reconnected; re-reading the heads")
            await self._guarded(self._resync())

        async def disconnected() -> None:
            if self._state == "open":
                _log.warning("event log: NATS connection lost; reconnecting")

        async def error(problem: Exception) -> None:
            _log.warning("event log: NATS: %s", problem)

        async def received(message: Any) -> None:
            self._on_notification(None, 0, self._subject, message.data.decode())

        try:
            self._nats = await nats.connect(
                self.fanout,
                name="spades-eventlog",
                no_echo=True,  # this instance's own notifications need not come back
                connect_timeout=5,
                allow_reconnect=True,
                # A few tries to start (then the server refuses to start, saying why); once
                # connected, the option is raised to "forever" below.
                max_reconnect_attempts=_NATS_START_ATTEMPTS,
                reconnect_time_wait=max(self.reconnect_delay, 0.1),
                reconnected_cb=reconnected,
                disconnected_cb=disconnected,
                error_cb=error,
            )
            self._subject = _subject_for(schema)
            await self._nats.subscribe(self._subject, cb=received)
            await self._nats.flush()
            # nats-py reads this option at each reconnect: from now on, never give up.
            self._nats.options["max_reconnect_attempts"] = -1
        except Exception as problem:  # nats' own errors: no server, a refused connection
            if self._nats is not None:
                with contextlib.suppress(Exception):
                    await self._nats.close()
                self._nats = None
            raise OSError(f"cannot reach the NATS server {self.fanout}: {problem}") from None

    async def _listen(self) -> None:
        connection = await self._connect("spades-eventlog-listen")
        try:
            await connection.add_listener(self._channel, self._on_notification)
        except BaseException:
            connection.terminate()
            raise
        connection.add_termination_listener(self._on_listener_lost)
        self._listener = connection
        self._listener_lost.clear()

    async def _keep_listening(self) -> None:
        """Reconnect the listening connection whenever it drops, then catch up."""
        while True:
            await self._listener_lost.wait()
            delay = self.reconnect_delay
            while True:
                await asyncio.sleep(delay)
                try:
                    await self._listen()
                except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as error:
                    _log.warning("event log: LISTEN reconnect failed: %s", error)
                    delay = min(delay * 2, 5.0)
                    continue
                break
            self.listener_reconnects += 1
            _log.info("event log: listening again on %s", self._channel)
            await self._guarded(self._resync())

    def _on_listener_lost(
        self, connection: asyncpg.Connection[Any] | PoolConnectionProxy[Any]
    ) -> None:
        if self._state == "open" and connection is self._listener:
            _log.warning("event log: the LISTEN connection was lost; reconnecting")
            self._listener = None
            self._listener_lost.set()

    def _on_notification(self, connection: object, pid: int, channel: str, payload: object) -> None:
        try:
            message = json.loads(str(payload))
            if message["from"] == self.instance_id:
                return
            events = [(str(s), int(v), int(p)) for s, v, p in message["events"]]
        except (ValueError, KeyError, TypeError) as error:
            _log.warning("event log: ignoring a malformed notification: %s", error)
            return
        newest = self._target
        for stream_id, version, position in events:
            self.notifier.advance_stream(stream_id, version)
            newest = max(newest, position)
        if newest > self._target:
            self._target = newest
            self._track_wakeup.set()

    # -- helpers ------------------------------------------------------------------------------

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

    async def _guarded(self, work: Awaitable[_T]) -> _T | None:
        """Background work: log and carry on after a database error."""
        try:
            return await work
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, LogClosed) as error:
            if self._state == "open":
                _log.warning("event log: background query failed: %s", error)
                await asyncio.sleep(self.reconnect_delay)
            return None


async def _claim_in(connection: asyncpg.Connection, stream_id: str, key: str, data: bytes) -> None:
    """Claim ``key`` in the connection's transaction, or raise :class:`ClaimTaken`."""
    if await connection.fetchval(_CLAIM, stream_id, key, data):
        return
    first = await connection.fetchval(_READ_CLAIM, stream_id, key)
    raise ClaimTaken(stream_id, key, bytes(first))


async def _fetch_claim(connection: asyncpg.Connection, stream_id: str, key: str) -> Any:
    return await connection.fetchval(_READ_CLAIM, stream_id, key)


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
)


async def _save_projection(
    connection: asyncpg.Connection,
    projection: str,
    rows: list[ProjectionRow],
    checkpoint: ProjectionCheckpoint | None,
    drop: bool,
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
        if checkpoint is not None:
            await connection.execute(
                _PUT_CHECKPOINT, projection, checkpoint.position, checkpoint.data
            )


def _projection_row(row: Any) -> ProjectionRow:
    return ProjectionRow(row["key"], row["sort_key"], row["listed"], row["version"], row["data"])


async def _fetch(connection: asyncpg.Connection, sql: str, *arguments: Any) -> list[Any]:
    rows: list[Any] = await connection.fetch(sql, *arguments)
    return rows


async def _fetchrow(connection: asyncpg.Connection, sql: str, *arguments: Any) -> Any:
    return await connection.fetchrow(sql, *arguments)


async def _fetchval(connection: asyncpg.Connection, sql: str, *arguments: Any) -> Any:
    return await connection.fetchval(sql, *arguments)


def _payloads(instance_id: str, batch: dict[str, tuple[int, int]]) -> list[str]:
    """JSON payloads, each under PostgreSQL's NOTIFY size limit."""
    payloads: list[str] = []
    head = f'{{"from": {json.dumps(instance_id)}, "events": ['
    parts: list[str] = []
    size = len(head) + 2
    for stream_id, (version, position) in batch.items():
        part = json.dumps([stream_id, version, position])
        if parts and size + len(part.encode()) + 1 > _NOTIFY_LIMIT:
            payloads.append(head + ",".join(parts) + "]}")
            parts, size = [], len(head) + 2
        parts.append(part)
        size += len(part.encode()) + 1
    if parts:
        payloads.append(head + ",".join(parts) + "]}")
    return payloads


#: How a NATS server's URL starts (``fanout=``).
NATS_SCHEMES = ("nats://", "tls://")


def _subject_for(schema: str) -> str:
    """The NATS subject of a schema's notifications (a name NATS takes as one token)."""
    if re.fullmatch(r"[A-Za-z0-9_-]{1,64}", schema):
        return f"spades.eventlog.{schema}"
    return "spades.eventlog." + hashlib.sha256(schema.encode()).hexdigest()[:32]


def _channel_for(schema: str) -> str:
    channel = f"spades_eventlog.{schema}"
    if len(channel.encode()) > 63:
        channel = "spades_eventlog." + hashlib.sha256(schema.encode()).hexdigest()[:32]
    return channel


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


async def _keep_session(connection: asyncpg.Connection) -> None:
    """A connection goes back to the pool as it is (see ``create_pool(reset=...)``)."""
