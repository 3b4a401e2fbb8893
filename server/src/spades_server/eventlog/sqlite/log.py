"""The embedded event log's class: one SQLite file, opened, locked, read and closed here.

:class:`SqliteEventLog` is what the rest of the server holds. It checks its arguments, takes the
file for this process (a lock file beside it), opens the writer (``writer``: group commit, on the
event loop or on a thread of its own), the checkpointer (``checkpointer``) and a reader thread,
and serves the reads: a second connection on that reader thread, so the event loop never blocks
on a read. The file is always a real file (two connections share it, so ``:memory:`` cannot
work).

A log that is not whole is refused on open with :class:`LogDamaged` naming the file (not a
database, a damaged header, no ``events`` table, a file that cannot be written, a committed
marker ahead of the database: see ``marker``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import fcntl
import json
import os
import queue
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from spades_server.eventlog.base import (
    ClaimTaken,
    LogClosed,
    LogDamaged,
    LogInUse,
    ProjectionCheckpoint,
    ProjectionRow,
    StoredEvent,
    _append_payloads,
    _check_not_negative,
    _check_stream_id,
)
from spades_server.eventlog.sqlite.checkpointer import CHECKPOINT_AT_BYTES, LogState
from spades_server.eventlog.sqlite.errors import describe_sqlite_error
from spades_server.eventlog.sqlite.integrity import SqliteInspection
from spades_server.eventlog.sqlite.marker import (
    _MARKER_SIZE,
    _file_stamp,
    _marker_bytes,
    marker_path,
)
from spades_server.eventlog.sqlite.schema import (
    _CURRENT_VERSION,
    _GET_CHECKPOINT,
    _GET_ROW,
    _LIST_ROWS,
    _READ_ALL,
    _READ_CLAIM,
    _READ_STREAM,
    Durability,
    _projection_row,
)
from spades_server.eventlog.sqlite.writer import (
    SqliteWriter,
    _AppendRequest,
    _ProjectionWrite,
)

__all__ = ["SqliteEventLog"]


class SqliteEventLog(SqliteWriter):
    """The event log in one SQLite file (WAL mode), with group commit on a writer thread.

    >>> async def demo(path):
    ...     async with SqliteEventLog(path, durability="full") as log:
    ...         await log.append("table-1", 0, [b"created"])
    ...         return await log.stream_version("table-1")

    ``max_batch`` bounds how many appends share one transaction.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        durability: Durability = "normal",
        max_batch: int = 512,
        probe_interval: float = 1.0,
    ) -> None:
        super().__init__()
        if durability not in ("normal", "full"):
            raise ValueError(f"durability must be 'normal' or 'full', not {durability!r}")
        path_text = os.fspath(path)
        if not path_text or path_text == ":memory:" or path_text.startswith("file:"):
            raise ValueError(f"the SQLite event log needs a file path, not {path_text!r}")
        if max_batch < 1:
            raise ValueError(f"max_batch must be 1 or more, not {max_batch}")
        self.path = Path(path_text)
        self.durability: Durability = durability
        self.max_batch = max_batch
        #: Seconds between write probes while storage refuses writes.
        self.probe_interval = probe_interval
        self._marker: int | None = None  # the marker file's descriptor, on the writer thread
        self._writes_failing = False  # on the writer thread
        self._head = 0  # the highest position committed, on the writer thread
        #: Each recently appended stream's committed version, on the writer thread (the file's
        #: only writer, so this is what the file holds; see _version_of).
        self._versions: dict[str, int] = {}
        self._was_open = False
        #: True when the file is exactly as a verified log left it at its clean close.
        self.unchanged_since_clean_close = False
        #: Set by whoever checked the opened file and found it whole: only then does a clean
        #: close stamp the file as known-good.
        self.verified = False
        #: Transactions the writer committed, and appends acknowledged (for metrics and tests).
        self.commits = 0
        self.appends = 0
        self._state: LogState = "new"
        self._lock_file: IO[bytes] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._requests: queue.SimpleQueue[_AppendRequest | _ProjectionWrite | None] = (
            queue.SimpleQueue()
        )
        #: With ``normal`` durability the event loop writes (see the module's docstring): its
        #: connection, what is queued for the next transaction, and the checkpointer.
        self._writes_on_loop = durability == "normal"
        self._loop_connection: sqlite3.Connection | None = None
        self._queued: list[_AppendRequest | _ProjectionWrite] = []
        self._checkpointer: concurrent.futures.ThreadPoolExecutor | None = None
        self._checkpointer_connection: sqlite3.Connection | None = None
        #: True while the checkpointer runs, and while it runs its second pass, during which
        #: the loop commits nothing.
        self._checkpointing = False
        self._commits_paused = False
        #: The -wal file's size at which the loop has it checkpointed.
        self.checkpoint_at = CHECKPOINT_AT_BYTES
        #: Checkpoints run (for tests).
        self.checkpoints = 0
        self._probe_timer: asyncio.TimerHandle | None = None
        self._writer: threading.Thread | None = None
        self._reader: concurrent.futures.ThreadPoolExecutor | None = None
        self._reader_connection: sqlite3.Connection | None = None

    def __repr__(self) -> str:
        return f"SqliteEventLog({str(self.path)!r}, durability={self.durability!r})"

    @property
    def writes_waiting(self) -> int:
        """Writes handed to the writer thread that it has not taken yet (with ``full``
        durability; 0 once it has taken the last one, even while it still writes it)."""
        return self._requests.qsize()

    @property
    def where(self) -> str:
        return str(self.path)

    def inspection(self) -> SqliteInspection:
        """The file, looked at read-only (``integrity``): its checks, its streams, its events."""
        return SqliteInspection(self.path)

    # -- lifecycle ----------------------------------------------------------------------------

    #: The file is locked to one process on open (see :meth:`_lock`).
    sole_writer = True

    async def open(self) -> None:
        if self._state != "new":
            raise RuntimeError(f"{self!r} was already opened; make a new one to reopen the file")
        self._refuse_unwritable_folder()
        self._lock()
        stamp = _file_stamp(self.path)
        self.unchanged_since_clean_close = stamp is not None and stamp == self._clean_stamp()
        self._state = "opening"
        self._loop = asyncio.get_running_loop()
        try:
            if self._writes_on_loop:
                # Opened (and the schema checked) off the loop; used only on the loop from now.
                self._loop_connection, head_position = await asyncio.to_thread(self._connect_writer)
                self._checkpointer = concurrent.futures.ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix=f"eventlog-checkpointer:{self.path.name}"
                )
                await self._loop.run_in_executor(self._checkpointer, self._connect_checkpointer)
            else:
                ready: concurrent.futures.Future[int] = concurrent.futures.Future()
                self._writer = threading.Thread(
                    target=self._write_loop, args=(ready,), name=f"eventlog-writer:{self.path.name}"
                )
                self._writer.daemon = True
                self._writer.start()
                head_position = await asyncio.wrap_future(ready)
            self._reader = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix=f"eventlog-reader:{self.path.name}"
            )
            await self._loop.run_in_executor(self._reader, self._connect_reader)
        except BaseException as error:
            await self._shut_down()
            if isinstance(error, sqlite3.Error):  # (the writer's own are LogDamaged already)
                raise LogDamaged(str(self.path), [describe_sqlite_error(error)]) from None
            raise
        self.notifier.start(head_position)
        self._was_open = True
        self._state = "open"

    async def close(self) -> None:
        if self._state in ("closing", "closed"):
            return
        if self._state == "new":
            self._state = "closed"
            self.notifier.close()
            return
        self._state = "closing"
        await self._shut_down()

    async def _shut_down(self) -> None:
        """Let the writer finish what is queued, then stop both threads and all subscriptions."""
        self._state = "closing"
        if self._writer is not None:
            self._requests.put(None)
            await asyncio.to_thread(self._writer.join)
        if self._loop_connection is not None:
            if self._probe_timer is not None:
                self._probe_timer.cancel()
                self._probe_timer = None
            if self._checkpointer is not None:
                # After a checkpoint that may be running (its end writes what waited for it).
                loop = asyncio.get_running_loop()
                await loop.run_in_executor(self._checkpointer, self._close_checkpointer)
                self._checkpointer.shutdown(wait=True)
                await asyncio.sleep(0)  # (the checkpoint's done callback, if one ran)
            self._checkpointing = self._commits_paused = False
            self._write_queued()  # what is queued is committed before the close
            self._close_writer(self._loop_connection)
            self._loop_connection = None
        self.notifier.close()
        if self._reader is not None:
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(self._reader, self._close_reader)
            self._reader.shutdown(wait=False)
        if self._was_open and self.verified:
            self._stamp_clean_close()
        self._state = "closed"
        if self._lock_file is not None:
            self._lock_file.close()  # releases the lock
            self._lock_file = None

    def _clean_stamp(self) -> str | None:
        """The clean stamp the marker holds (after its position line), if any."""
        try:
            lines = marker_path(self.path).read_bytes()[_MARKER_SIZE:].decode("ascii")
        except (OSError, UnicodeDecodeError):
            return None
        return lines.strip() or None

    def _stamp_clean_close(self) -> None:
        """Every connection is closed (SQLite checkpointed, the -wal is gone): stamp the file."""
        stamp = _file_stamp(self.path)
        if stamp is not None:
            with contextlib.suppress(OSError):
                marker_path(self.path).write_bytes(
                    _marker_bytes(self._head) + f"{stamp}\n".encode()
                )

    def _refuse_unwritable_folder(self) -> None:
        """SQLite writes its -wal and -shm files beside the database: without a writable
        folder it could read but never commit, so say so now, not at the first action."""
        folder = self.path.parent
        if folder.is_dir() and not os.access(folder, os.W_OK):
            raise LogDamaged(
                str(self.path),
                [f"the folder {folder} is not writable (the log keeps its -wal file beside it)"],
            )

    def _lock(self) -> None:
        """Take the file for this process: two servers on one embedded log would each trust a
        cache the other invalidates. The OS drops the lock when the process dies, even by
        SIGKILL, so a restart after a crash is never blocked."""
        try:
            lock_file = open(f"{self.path}.lock", "a+b")  # noqa: SIM115 - held until close
        except OSError as error:
            raise LogDamaged(
                str(self.path), [f"its lock file cannot be created ({error.strerror or error})"]
            ) from None
        try:
            fcntl.flock(lock_file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock_file.close()
            raise LogInUse(
                f"{self.path} is in use by another process; the embedded event log has one "
                "server (use PostgreSQL for several)"
            ) from None
        self._lock_file = lock_file

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

        Cancelling the awaiting task does not withdraw an append that is already queued: it may
        still be committed (a later append with the same expected version then conflicts).
        """
        payloads = _append_payloads(stream_id, expected_version, events)
        loop = self._running_loop()
        future: asyncio.Future[list[StoredEvent]] = loop.create_future()
        self._enqueue(_AppendRequest(stream_id, expected_version, payloads, future, claim))
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
        """:meth:`append` handing its outcome to ``then``, called by the writer's delivery on
        the event loop (no future, no task: the commit's callback is the append's end)."""
        payloads = _append_payloads(stream_id, expected_version, events)
        self._running_loop()
        self._enqueue(_AppendRequest(stream_id, expected_version, payloads, then, claim))

    def _enqueue(self, request: _AppendRequest | _ProjectionWrite) -> None:
        """Queue a write for the writer: the event loop's next iteration, or the writer thread."""
        if not self._writes_on_loop:
            self._requests.put(request)
            return
        if not self._queued:
            assert self._loop is not None
            self._loop.call_soon(self._write_queued)
        self._queued.append(request)

    def _write_queued(self) -> None:
        """On the event loop: write everything queued, appends in one transaction (unless a
        checkpoint runs: its end writes them)."""
        if self._commits_paused:
            return
        queued, self._queued = self._queued, []
        connection = self._loop_connection
        if not queued or connection is None:
            return
        self._write(connection, queued)
        if self._writes_failing and self._probe_timer is None and self._state == "open":
            assert self._loop is not None
            self._probe_timer = self._loop.call_later(self.probe_interval, self._probe_on_loop)

    def _probe_on_loop(self) -> None:
        """While writes fail and nothing else is written: probe every ``probe_interval``."""
        self._probe_timer = None
        if self._loop_connection is None or not self._writes_failing:
            return
        self._probe(self._loop_connection)
        if self._writes_failing and self._state == "open":
            assert self._loop is not None
            self._probe_timer = self._loop.call_later(self.probe_interval, self._probe_on_loop)

    async def claim(self, stream_id: str, key: str, data: bytes) -> bytes | None:
        _check_stream_id(stream_id)
        loop = self._running_loop()
        future: asyncio.Future[list[StoredEvent]] = loop.create_future()
        # Through the writer, in order with the appends (which claim keys too).
        self._enqueue(_AppendRequest(stream_id, -1, [], future, (key, bytes(data))))
        try:
            await future
        except ClaimTaken as taken:
            return taken.data
        return None

    async def read_claim(self, stream_id: str, key: str) -> bytes | None:
        _check_stream_id(stream_id)
        rows = await self._query(_READ_CLAIM, (stream_id, key))
        return bytes(rows[0][0]) if rows else None

    # -- what projections store ---------------------------------------------------------------

    async def _write_projection(
        self,
        projection: str,
        rows: list[ProjectionRow],
        checkpoint: ProjectionCheckpoint | None,
        *,
        drop: bool,
        deleted: Sequence[ProjectionRow] = (),
    ) -> None:
        future: asyncio.Future[None] = self._running_loop().create_future()
        self._enqueue(_ProjectionWrite(projection, rows, checkpoint, drop, future, deleted))
        await future

    async def load_projection(self, projection: str) -> ProjectionCheckpoint | None:
        rows = await self._query(_GET_CHECKPOINT, (projection,))
        return ProjectionCheckpoint(rows[0][0], rows[0][1]) if rows else None

    async def projection_row(self, projection: str, key: str) -> ProjectionRow | None:
        rows = await self._query(_GET_ROW, (projection, key))
        return _projection_row(rows[0]) if rows else None

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
        parameters = (projection, listed_only, json.dumps(list(excluded)), limit, offset)
        return [_projection_row(row) for row in await self._query(_LIST_ROWS, parameters)]

    # -- reading ------------------------------------------------------------------------------

    async def read(
        self, stream_id: str, after_version: int = 0, limit: int | None = None
    ) -> list[StoredEvent]:
        _check_stream_id(stream_id)
        _check_not_negative("after_version", after_version)
        if limit is not None:
            _check_not_negative("limit", limit)
        rows = await self._query(
            _READ_STREAM, (stream_id, after_version, -1 if limit is None else limit)
        )
        return [
            StoredEvent(stream_id, version, position, recorded_at, data)
            for position, version, recorded_at, data in rows
        ]

    async def stream_version(self, stream_id: str) -> int:
        _check_stream_id(stream_id)
        rows = await self._query(_CURRENT_VERSION, (stream_id,))
        version: int = rows[0][0]
        return version

    async def read_all(self, after_position: int = 0, limit: int = 1000) -> list[StoredEvent]:
        _check_not_negative("after_position", after_position)
        _check_not_negative("limit", limit)
        rows = await self._query(_READ_ALL, (after_position, limit))
        return [
            StoredEvent(stream_id, version, position, recorded_at, data)
            for position, stream_id, version, recorded_at, data in rows
        ]

    async def _query(self, sql: str, parameters: tuple[object, ...]) -> list[tuple[Any, ...]]:
        loop = self._running_loop()
        assert self._reader is not None
        return await loop.run_in_executor(self._reader, self._fetch_all, sql, parameters)

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        if self._state != "open":
            raise LogClosed(f"{self!r} is {self._state}, not open")
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            raise RuntimeError(f"{self!r} must be used from the event loop that opened it")
        return loop

    # -- reader thread ------------------------------------------------------------------------

    def _connect_reader(self) -> None:
        connection = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        connection.execute("PRAGMA query_only = ON")
        connection.execute("PRAGMA busy_timeout = 5000")
        self._reader_connection = connection

    def _close_reader(self) -> None:
        if self._reader_connection is not None:
            self._reader_connection.close()
            self._reader_connection = None

    def _fetch_all(self, sql: str, parameters: tuple[object, ...]) -> list[tuple[Any, ...]]:
        connection = self._reader_connection
        if connection is None:
            raise LogClosed(f"{self!r} is closed")
        rows: list[tuple[Any, ...]] = connection.execute(sql, parameters).fetchall()
        return rows
