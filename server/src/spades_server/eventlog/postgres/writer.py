"""The PostgreSQL log's writer: the appends of many streams in one statement, from one task.

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

``Writer`` is the part of the log that does this (a base class of
:class:`~spades_server.eventlog.postgres.PostgresEventLog`; the state is the core's).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg

from spades_server.eventlog.base import (
    ClaimTaken,
    LogClosed,
    LogUnavailable,
    StoredEvent,
    VersionConflict,
    _answer_append,
)
from spades_server.eventlog.postgres.core import (
    _STORAGE_FAILURES,
    _T,
    _Append,
    _Outcome,
)
from spades_server.eventlog.postgres.order import FinalPrefix
from spades_server.eventlog.postgres.schema import _CLAIM, _READ_CLAIM, _STREAM_VERSION

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
           coalesce($8::double precision,
                    extract(epoch FROM statement_timestamp())::double precision), e.data
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

#: The writer's connection plans its one statement once: left to choose, PostgreSQL re-plans
#: it at every execution (its estimate for a custom plan always wins), about 0.6 ms each here.
_WRITER_SETTINGS = {"plan_cache_mode": "force_generic_plan"}


def _stream_of(request: _Append) -> str:
    return request.stream_id


class Writer(FinalPrefix):
    """The writer task and what it stores (see the module's docstring)."""

    def _queue(self, request: _Append) -> None:
        self._queued.append(request)
        if not self._writing:
            self._appends_idle.clear()
            self._writer_wakeup.set()

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
            recorded_at = None if self.recorded_time is None else self.recorded_time()
            outcomes = await self._insert(connection, batch, recorded_at)
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
    async def _insert(
        connection: asyncpg.Connection, batch: list[_Append], recorded_at: float | None
    ) -> list[_Outcome]:
        """Append ``batch`` in one statement, each event recorded at ``recorded_at`` (None:
        the database's statement time)."""
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
                _APPEND_BATCH,
                streams,
                expected,
                keys,
                claims,
                indices,
                places,
                payloads,
                recorded_at,
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


async def _claim_in(connection: asyncpg.Connection, stream_id: str, key: str, data: bytes) -> None:
    """Claim ``key`` in the connection's transaction, or raise :class:`ClaimTaken`."""
    if await connection.fetchval(_CLAIM, stream_id, key, data):
        return
    first = await connection.fetchval(_READ_CLAIM, stream_id, key)
    raise ClaimTaken(stream_id, key, bytes(first))
