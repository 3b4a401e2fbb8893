"""The SQLite log's writer: group commit of every append, on the event loop or a thread of its own.

Why this shape
--------------
Measured on the 2-core development machine: the standard ``sqlite3`` module in WAL mode commits
about 20,000 single-event transactions per second with ``synchronous=NORMAL`` (about 4,000 with
``FULL``, one fsync each); through ``aiosqlite`` only about 2,000, because every call hops
threads. So appends are *group-committed*: appends from any number of tasks go into one queue,
and the writer takes everything queued, runs it in ONE transaction, commits once, and then hands
each append its outcome on the event loop. An append is acknowledged only after the COMMIT of its
transaction returned. Under load many appends share one commit (and one fsync with ``FULL``).

Who writes depends on the durability. With ``normal`` a COMMIT writes the WAL to the page cache
and returns (no fsync), a few microseconds a statement: the *event loop writes itself*, once
per loop iteration that queued something (``loop.call_soon``), so an append costs no thread hop,
no wake-up of another thread and no handover of the GIL, which a writer thread pays several
times per transaction (every statement releases the GIL and takes it back from the busy loop).
In bench-server (64 tables) that was about 15 % of the server's CPU per action. Its checkpoints,
which do fsync, run on a thread of their own (see ``checkpointer``), so the loop never waits for
a disk.

With ``full`` every COMMIT waits for an fsync, which must not stop the loop: a *dedicated
writer thread* takes the queue instead (SQLite checkpoints inside its COMMITs), and resolves
each append on the loop.

Inside the transaction each append checks the stream's version against the versions this writer
committed (it is the file's only writer) and writes its claim and events with no SAVEPOINT: a
version conflict or a claim taken is found before the append writes anything. Only a statement
that fails halfway through an append (a unique key the check missed, storage failing) would
leave part of it written: the transaction is then rolled back and run again with one SAVEPOINT
per append, so each append gets its own outcome and the others still commit.

Optimistic concurrency: inside the write transaction each append first compares the stream's
current version with the expected one; the unique ``(stream_id, version)`` key is the final guard.

While storage refuses writes (disk full, I/O error, read-only), appends fail with
:class:`LogUnavailable` and ``write_health`` says so; the writer then probes every
``probe_interval`` seconds with a write that changes nothing, and reports when writes work again.

``SqliteWriter`` is the part of :class:`~spades_server.eventlog.sqlite.SqliteEventLog` that
writes (a base class of it, holding no state of its own: the log's ``__init__`` sets what is
declared here); the log queues the requests defined here and starts the writer.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import queue
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass

from spades_server.eventlog.base import (
    AppendAnswer,
    ClaimTaken,
    LogDamaged,
    LogIncompatible,
    LogUnavailable,
    ProjectionCheckpoint,
    ProjectionRow,
    StoredEvent,
    VersionConflict,
    _answer_append,
)
from spades_server.eventlog.sqlite.checkpointer import WAL_SIZE_LIMIT, SqliteCheckpointer
from spades_server.eventlog.sqlite.errors import describe_sqlite_error
from spades_server.eventlog.sqlite.marker import (
    _MARKER_SIZE,
    _marker_bytes,
    marker_path,
    read_marker,
)
from spades_server.eventlog.sqlite.schema import (
    _CLAIM_UNLESS_TAKEN,
    _CURRENT_VERSION,
    _DELETE_ROW,
    _HEAD,
    _INSERT,
    _MIGRATIONS,
    _PROJECTION_SCHEMA,
    _PUT_CHECKPOINT,
    _PUT_ROW,
    _READ_CLAIM,
    EVENT_COLUMNS,
    SCHEMA_VERSION,
    Durability,
    _probe_write,
)

#: How many streams' committed versions the writer keeps (the tables in play, and more).
_KEPT_VERSIONS = 8192
#: How long a write on the event loop waits for a lock another connection holds.
LOOP_BUSY_TIMEOUT_MS = 100


@dataclass(slots=True)
class _AppendRequest:
    stream_id: str
    #: -1 for a claim alone (no events, no version to check).
    expected_version: int
    events: list[bytes]
    #: Where the outcome goes: the awaiting caller's future, or :meth:`SqliteEventLog.submit`'s
    #: callback.
    future: AppendAnswer
    claim: tuple[str, bytes] | None = None


@dataclass(slots=True)
class _ProjectionWrite:
    projection: str
    rows: list[ProjectionRow]
    checkpoint: ProjectionCheckpoint | None
    drop: bool
    future: asyncio.Future[None]
    #: Rows to remove, each only while it is still at its version.
    deleted: Sequence[ProjectionRow] = ()


# What the writer hands back for one request: the stored events, or why nothing was stored.
_Outcome = list[StoredEvent] | BaseException


class _Halfway(Exception):
    """A statement failed halfway through an append written without a SAVEPOINT; the
    transaction was rolled back, to be run again with one SAVEPOINT per append."""


class SqliteWriter(SqliteCheckpointer):
    """The writing of the SQLite log (see the module's docstring)."""

    durability: Durability
    max_batch: int
    #: Seconds between write probes while storage refuses writes.
    probe_interval: float
    _marker: int | None  # the marker file's descriptor, on the writer thread
    _writes_failing: bool  # on the writer thread
    _head: int  # the highest position committed, on the writer thread
    #: Each recently appended stream's committed version, on the writer thread (the file's
    #: only writer, so this is what the file holds; see _version_of).
    _versions: dict[str, int]
    #: Transactions the writer committed, and appends acknowledged (for metrics and tests).
    commits: int
    appends: int
    _requests: queue.SimpleQueue[_AppendRequest | _ProjectionWrite | None]
    #: With ``normal`` durability the event loop writes (see the module's docstring).
    _writes_on_loop: bool

    def _connect_writer(self) -> tuple[sqlite3.Connection, int]:
        """Open the writing connection, create or check the schema, prove that the file can be
        written and holds what the marker says was committed; return the head position."""
        try:
            connection, head = self._connect_and_migrate()
        except sqlite3.Error as error:
            raise LogDamaged(str(self.path), [describe_sqlite_error(error)]) from None
        try:
            self._check_marker(head)
        except BaseException:
            connection.close()
            raise
        return connection, head

    def _check_marker(self, head: int) -> None:
        """Refuse a database that holds less than this server committed; open the marker."""
        committed = read_marker(self.path)
        marker = marker_path(self.path)
        if committed is not None and head < committed:
            raise LogDamaged(
                str(self.path),
                [
                    f"holds events up to position {head}, but {committed} were committed "
                    f"(says {marker.name}): acknowledged events are missing, as after a lost, "
                    "cut or overwritten -wal file or a truncated database. Restore a backup; "
                    f"to accept the loss and serve what is left, delete {marker}"
                ],
            )
        try:
            descriptor = os.open(marker, os.O_WRONLY | os.O_CREAT, 0o644)
            os.pwrite(descriptor, _marker_bytes(head), 0)
            os.ftruncate(descriptor, _MARKER_SIZE)  # the clean stamp goes: this run may crash
        except OSError as error:
            raise LogDamaged(
                str(self.path), [f"its committed marker {marker} cannot be written ({error})"]
            ) from None
        self._marker = descriptor
        self._head = head

    def _connect_and_migrate(self) -> tuple[sqlite3.Connection, int]:
        # Opened on one thread, used on another when the event loop writes (never at once).
        connection = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=not self._writes_on_loop
        )
        try:
            mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise LogIncompatible(f"{self.path}: could not switch to WAL mode (got {mode!r})")
            connection.execute(f"PRAGMA synchronous = {self.durability.upper()}")
            if self._writes_on_loop:
                # The file is this process's (locked on open): nothing should hold its write
                # lock, and the loop must not wait long if something does (writes then fail
                # as unavailable, and are probed until they work).
                connection.execute(f"PRAGMA busy_timeout = {LOOP_BUSY_TIMEOUT_MS}")
                connection.execute("PRAGMA wal_autocheckpoint = 0")  # the checkpointer's job
                connection.execute(f"PRAGMA journal_size_limit = {WAL_SIZE_LIMIT}")
            else:
                connection.execute("PRAGMA busy_timeout = 5000")
            schema_version = connection.execute("PRAGMA user_version").fetchone()[0]
            if schema_version > SCHEMA_VERSION:
                raise LogIncompatible(
                    f"{self.path} has event-log schema {schema_version}; this version of the "
                    f"server knows schema {SCHEMA_VERSION} at most"
                )
            if schema_version < SCHEMA_VERSION:
                connection.execute("BEGIN IMMEDIATE")
                # One statement at a time: executescript would COMMIT first.
                for step in range(schema_version + 1, SCHEMA_VERSION + 1):
                    for statement in _MIGRATIONS[step]:
                        connection.execute(statement)
                connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                connection.execute("COMMIT")
            columns = {row[1] for row in connection.execute("PRAGMA table_info(events)")}
            if not columns >= EVENT_COLUMNS:
                raise LogDamaged(
                    str(self.path),
                    ["has no events table (dropped, or another program's database)"],
                )
            head = connection.execute(_HEAD).fetchone()
            # A read-only file or file system opens and reads; only a write shows it.
            _probe_write(connection)
            connection.execute("BEGIN IMMEDIATE")
            for statement in _PROJECTION_SCHEMA:
                connection.execute(statement)
            connection.execute("COMMIT")
            return connection, int(head[0])
        except BaseException:
            connection.close()
            raise

    def _write_loop(self, ready: concurrent.futures.Future[int]) -> None:
        try:
            connection, head_position = self._connect_writer()
        except BaseException as error:
            ready.set_exception(error)
            return
        ready.set_result(head_position)
        try:
            stopping = False
            while not stopping:
                try:
                    item = self._requests.get(
                        timeout=self.probe_interval if self._writes_failing else None
                    )
                except queue.Empty:
                    self._probe(connection)
                    continue
                items: list[_AppendRequest | _ProjectionWrite] = []
                while True:
                    if item is None:
                        stopping = True  # close() queues this after the last append
                    else:
                        items.append(item)
                    if len(items) >= self.max_batch:
                        break
                    try:
                        item = self._requests.get_nowait()
                    except queue.Empty:
                        break
                self._write(connection, items)
        finally:
            self._close_writer(connection)

    def _write(
        self, connection: sqlite3.Connection, items: list[_AppendRequest | _ProjectionWrite]
    ) -> None:
        """Commit queued writes: the appends in transactions of up to ``max_batch``, then each
        projection write in its own."""
        batch = [item for item in items if isinstance(item, _AppendRequest)]
        for start in range(0, len(batch), self.max_batch):
            self._commit(connection, batch[start : start + self.max_batch])
        for item in items:
            if isinstance(item, _ProjectionWrite):
                self._commit_projection(connection, item)

    def _close_writer(self, connection: sqlite3.Connection) -> None:
        connection.close()
        if self._marker is not None:
            os.close(self._marker)
            self._marker = None

    def _probe(self, connection: sqlite3.Connection) -> None:
        """While writes fail: try one that changes nothing, and report when it works."""
        try:
            _probe_write(connection)
        except sqlite3.Error:
            return
        self._writes_failing = False
        if self._writes_on_loop:
            self.write_health.worked()
            return
        loop = self._loop
        assert loop is not None
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self.write_health.worked)

    def _unavailable(self, error: sqlite3.Error) -> LogUnavailable:
        self._writes_failing = True
        return LogUnavailable(f"the event log {self.path} cannot be written now: {error}")

    def _commit(self, connection: sqlite3.Connection, batch: list[_AppendRequest]) -> None:
        """Run a batch of appends in one transaction and hand the outcomes to the event loop."""
        recorded_at = time.time() if self.recorded_time is None else self.recorded_time()
        outcomes: list[_Outcome] = []
        committed: list[StoredEvent] = []
        #: The versions this transaction moved streams to (known once it commits).
        moved: dict[str, int] = {}
        try:
            try:
                outcomes, committed = self._transaction(
                    connection, batch, recorded_at, moved, careful=False
                )
            except _Halfway:
                # A statement failed halfway through an append: again, each in a SAVEPOINT.
                moved.clear()
                outcomes, committed = self._transaction(
                    connection, batch, recorded_at, moved, careful=True
                )
        except BaseException as error:
            # Nothing of this batch is committed: every append in it fails.
            if connection.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    connection.execute("ROLLBACK")
            failure = self._unavailable(error) if isinstance(error, sqlite3.Error) else error
            outcomes = [failure] * len(batch)
            committed = []
            self._versions.clear()  # read again from the file: nothing is assumed after a failure
        else:
            self._remember_versions(moved)
            self.commits += 1
            self.appends += len(committed)
            if committed and self._marker is not None:
                # After the COMMIT, so the marker never claims more than the database holds.
                # A marker left behind the database only checks less; the commit stands.
                self._head = committed[-1].position
                with contextlib.suppress(OSError):
                    os.pwrite(self._marker, _marker_bytes(self._head), 0)
            self._writes_failing = any(isinstance(o, LogUnavailable) for o in outcomes)
        if self._writes_on_loop:
            self._deliver(batch, outcomes, committed)
            self._checkpoint_soon()
            return
        loop = self._loop
        assert loop is not None
        with contextlib.suppress(RuntimeError):  # a closed event loop: nobody is waiting
            loop.call_soon_threadsafe(self._deliver, batch, outcomes, committed)

    def _transaction(
        self,
        connection: sqlite3.Connection,
        batch: list[_AppendRequest],
        recorded_at: float,
        moved: dict[str, int],
        *,
        careful: bool,
    ) -> tuple[list[_Outcome], list[StoredEvent]]:
        """One transaction of appends, committed; raises _Halfway (rolled back) when, not
        ``careful``, a statement failed halfway through an append."""
        outcomes: list[_Outcome] = []
        committed: list[StoredEvent] = []
        connection.execute("BEGIN IMMEDIATE")
        for request in batch:
            if careful:
                outcome = self._append_in_savepoint(connection, request, recorded_at, moved)
            else:
                try:
                    outcome = self._append_whole(connection, request, recorded_at, moved)
                except sqlite3.Error:
                    if connection.in_transaction:  # (a trigger's RAISE(ROLLBACK) ended it)
                        connection.execute("ROLLBACK")
                    raise _Halfway from None
            outcomes.append(outcome)
            if isinstance(outcome, list):
                committed.extend(outcome)
        connection.execute("COMMIT")
        return outcomes, committed

    def _commit_projection(self, connection: sqlite3.Connection, write: _ProjectionWrite) -> None:
        """Store what a projection saves, in a transaction of its own."""
        outcome: BaseException | None = None
        try:
            connection.execute("BEGIN IMMEDIATE")
            if write.drop:
                for table in ("projection_rows", "projection_checkpoints"):
                    connection.execute(
                        f"DELETE FROM {table} WHERE projection = ?", (write.projection,)
                    )
            connection.executemany(
                _PUT_ROW,
                [
                    (write.projection, row.key, row.sort_key, row.listed, row.version, row.data)
                    for row in write.rows
                ],
            )
            connection.executemany(
                _DELETE_ROW, [(write.projection, row.key, row.version) for row in write.deleted]
            )
            if write.checkpoint is not None:
                checkpoint = write.checkpoint
                connection.execute(
                    _PUT_CHECKPOINT, (write.projection, checkpoint.position, checkpoint.data)
                )
            connection.execute("COMMIT")
        except BaseException as error:
            if connection.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    connection.execute("ROLLBACK")
            outcome = self._unavailable(error) if isinstance(error, sqlite3.Error) else error
        if self._writes_on_loop:
            _settle(write.future, outcome)
            return
        loop = self._loop
        assert loop is not None
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_settle, write.future, outcome)

    def _version_of(
        self, connection: sqlite3.Connection, stream_id: str, moved: dict[str, int]
    ) -> int:
        """The stream's version as this transaction sees it: what it moved the stream to, else
        the committed version kept since an earlier append (this thread is the file's only
        writer, so nothing else moves it), else read from the file."""
        version = moved.get(stream_id)
        if version is None:
            version = self._versions.get(stream_id)
        if version is None:
            version = connection.execute(_CURRENT_VERSION, (stream_id,)).fetchone()[0]
        return int(version)

    def _remember_versions(self, moved: dict[str, int]) -> None:
        """Keep the versions a committed transaction moved streams to (the latest streams,
        at most ``_KEPT_VERSIONS``: a stream not kept is read from the file)."""
        versions = self._versions
        for stream_id, version in moved.items():
            versions.pop(stream_id, None)
            versions[stream_id] = version  # the most recent last
        while len(versions) > _KEPT_VERSIONS:
            del versions[next(iter(versions))]

    def _append_whole(
        self,
        connection: sqlite3.Connection,
        request: _AppendRequest,
        recorded_at: float,
        moved: dict[str, int],
    ) -> _Outcome:
        """One append with no SAVEPOINT: a conflict or a taken claim is found before it writes
        anything; a statement that fails after its first write raises (the caller rolls back)."""
        stream_id, expected = request.stream_id, request.expected_version
        if expected >= 0:
            actual = self._version_of(connection, stream_id, moved)
            if actual != expected:
                return VersionConflict(stream_id, expected, actual)
        if request.claim is not None:
            # This thread is the file's only writer: what it reads here is what is there.
            key, data = request.claim
            if not connection.execute(_CLAIM_UNLESS_TAKEN, (stream_id, key, data)).rowcount:
                first = connection.execute(_READ_CLAIM, (stream_id, key)).fetchone()
                return ClaimTaken(stream_id, key, bytes(first[0]))
        stored: list[StoredEvent] = []
        for version, data in enumerate(request.events, start=expected + 1):
            cursor = connection.execute(_INSERT, (stream_id, version, recorded_at, data))
            assert cursor.lastrowid is not None
            stored.append(StoredEvent(stream_id, version, cursor.lastrowid, recorded_at, data))
        if stored:
            moved[stream_id] = stored[-1].version
        return stored

    def _append_in_savepoint(
        self,
        connection: sqlite3.Connection,
        request: _AppendRequest,
        recorded_at: float,
        moved: dict[str, int],
    ) -> _Outcome:
        """One append under a SAVEPOINT: a statement failing halfway through undoes this
        append alone, which fails, and the transaction goes on."""
        stream_id, expected = request.stream_id, request.expected_version
        connection.execute("SAVEPOINT append")
        try:
            outcome = self._append_whole(connection, request, recorded_at, moved)
        except sqlite3.IntegrityError:
            # The unique (stream_id, version) key caught a writer the version check missed.
            connection.execute("ROLLBACK TO append")
            connection.execute("RELEASE append")
            self._versions.pop(stream_id, None)
            moved.pop(stream_id, None)
            actual = connection.execute(_CURRENT_VERSION, (stream_id,)).fetchone()[0]
            return VersionConflict(stream_id, expected, actual)
        except sqlite3.Error as error:
            if not connection.in_transaction:
                raise  # SQLite rolled the whole transaction back: fail the batch
            connection.execute("ROLLBACK TO append")
            connection.execute("RELEASE append")
            return self._unavailable(error)
        connection.execute("RELEASE append")  # (a refusal wrote nothing)
        return outcome

    def _deliver(
        self,
        batch: list[_AppendRequest],
        outcomes: list[_Outcome],
        committed: list[StoredEvent],
    ) -> None:
        self.notifier.publish(committed)
        failures = [outcome for outcome in outcomes if isinstance(outcome, LogUnavailable)]
        if failures:
            self.write_health.failed(str(failures[0]))
        elif committed:
            self.write_health.worked()
        for request, outcome in zip(batch, outcomes, strict=True):
            _answer_append(request.future, outcome)


def _settle(future: asyncio.Future[None], outcome: BaseException | None) -> None:
    if future.done():
        return  # the caller was cancelled
    if outcome is None:
        future.set_result(None)
    else:
        future.set_exception(outcome)
