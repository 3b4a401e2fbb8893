"""The embedded event log: one SQLite file in WAL mode, written by one group-committing thread.

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
which do fsync, run on a thread of their own (``wal_autocheckpoint`` is off on the writing
connection), so the loop never waits for a disk: once the -wal file holds
``CHECKPOINT_AT_BYTES``, the thread checkpoints while the loop goes on committing, then once
more with the loop's commits paused, and the loop commits what was queued meanwhile. A
checkpoint copies only the frames committed before it began, and the -wal file starts over only
once one copied them all: checkpoints beside a steady stream of commits never catch up, and the
file grows for ever (235 MiB after 1,063 commits in bench_service_alone, before the pause). The
first pass copies most of it without holding up any append; appends wait only through the
second, which copies what came during the first: 14-18 ms in bench_service_alone at 64 tables,
against 29-39 ms for a first pass (most of a short pass is the two fsyncs of a checkpoint; the
old writer thread held appends up for a whole one, inside a COMMIT).

With ``full`` every COMMIT waits for an fsync, which must not stop the loop: a *dedicated
writer thread* takes the queue instead (SQLite checkpoints inside its COMMITs), and resolves
each append on the loop.

Inside the transaction each append checks the stream's version against the versions this writer
committed (it is the file's only writer) and writes its claim and events with no SAVEPOINT: a
version conflict or a claim taken is found before the append writes anything. Only a statement
that fails halfway through an append (a unique key the check missed, storage failing) would
leave part of it written: the transaction is then rolled back and run again with one SAVEPOINT
per append, so each append gets its own outcome and the others still commit.
Reads use a second connection on a reader thread, so the event loop never blocks on a read.

Optimistic concurrency: inside the write transaction each append first compares the stream's
current version with the expected one; the unique ``(stream_id, version)`` key is the final guard.

Durability
----------
``durability="normal"`` (``PRAGMA synchronous=NORMAL``, the default): a commit is in the WAL file
(in the OS page cache) before the append is acknowledged, but not yet fsynced. A crashed or
killed process (even SIGKILL) never loses an acknowledged append, since the operating system
still writes the page cache out. A power loss or OS crash may lose the last acknowledged appends
(those since the last checkpoint or fsync); the file stays consistent.

``durability="full"`` (``PRAGMA synchronous=FULL``): the WAL is fsynced before each commit
returns, so an acknowledged append survives power loss and OS crashes as well. Group commit
makes that one fsync per batch of appends, not per append.

The file is always a real file (two connections share it, so ``:memory:`` cannot work).

What the log refuses
--------------------
A log that is not whole is refused on open with :class:`LogDamaged` naming the file (not a
database, a damaged header, no ``events`` table, a file that cannot be written). Beside the
database the writer keeps a *committed marker* (``DATABASE-committed``): after each COMMIT it
overwrites the file with the highest position committed. The marker lives outside SQLite on
purpose: what SQLite loses (a deleted, cut or overwritten ``-wal``, a database truncated to
nothing) it loses silently and consistently, and only something outside it can notice that the
database now holds less than was acknowledged. It is written after the COMMIT, so it never
claims more than was committed; in ``normal`` durability a power loss may leave it ahead of the
database, and the log is then refused too (the operator decides: restore, or accept the loss by
deleting the marker). A database without a marker (made by an older server, or a copy) is
accepted and gets one.

On a clean close of a log whose owner checked it when it opened (``verified``, set by the
server's start-up checks) the marker also gets a *clean stamp*: the database file's inode,
size, mtime and ctime once SQLite has checkpointed and removed its -wal. At the next open,
``unchanged_since_clean_close`` says whether the file is still exactly that (no -wal, the same
stamp; the ctime changes with any write and cannot be set back), so the server can skip the
scans of a file it verified and then wrote itself. The stamp is removed when the log opens, so
a crash never leaves one behind.

While storage refuses writes (disk full, I/O error, read-only), appends fail with
:class:`LogUnavailable` and ``write_health`` says so; the writer then probes every
``probe_interval`` seconds with a write that changes nothing, and reports when writes work again.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import fcntl
import json
import logging
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

from spades_server.eventlog.base import (
    AppendAnswer,
    ClaimTaken,
    EventLog,
    LogClosed,
    LogDamaged,
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

__all__ = ["Durability", "SqliteEventLog", "marker_path", "read_marker", "write_marker"]

_log = logging.getLogger(__name__)

Durability = Literal["normal", "full"]

SCHEMA_VERSION = 2

#: The statements that bring a file from each schema version to the next.
_MIGRATIONS: dict[int, list[str]] = {
    1: [
        """
        CREATE TABLE IF NOT EXISTS events (
            position    INTEGER PRIMARY KEY AUTOINCREMENT,  -- global order, never reused
            stream_id   TEXT    NOT NULL,
            version     INTEGER NOT NULL CHECK (version >= 1),
            recorded_at REAL    NOT NULL,
            data        BLOB    NOT NULL,
            UNIQUE (stream_id, version)
        )
        """,
    ],
    # Write-once keys beside each stream (the first result of each action id).
    2: [
        """
        CREATE TABLE IF NOT EXISTS claims (
            stream_id TEXT NOT NULL,
            key       TEXT NOT NULL,
            data      BLOB NOT NULL,
            PRIMARY KEY (stream_id, key)
        )
        """,
    ],
}

#: What projections store (see ``ProjectionRow``): derived from the events, so these are created
#: when missing in any schema version, and dropping them loses nothing.
_PROJECTION_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS projection_checkpoints ("
    " projection TEXT PRIMARY KEY, position INTEGER NOT NULL, data BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS projection_rows ("
    " projection TEXT NOT NULL, key TEXT NOT NULL, sort_key INTEGER NOT NULL,"
    " listed INTEGER NOT NULL, version INTEGER NOT NULL, data BLOB NOT NULL,"
    " PRIMARY KEY (projection, key))",
    "CREATE INDEX IF NOT EXISTS projection_rows_by_order"
    " ON projection_rows (projection, sort_key DESC, key DESC)",
    "CREATE INDEX IF NOT EXISTS projection_rows_listed_by_order"
    " ON projection_rows (projection, listed, sort_key DESC, key DESC)",
)
_PUT_ROW = (
    "INSERT INTO projection_rows (projection, key, sort_key, listed, version, data)"
    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (projection, key) DO UPDATE SET"
    " sort_key = excluded.sort_key, listed = excluded.listed, version = excluded.version,"
    " data = excluded.data WHERE excluded.version >= projection_rows.version"
)
_PUT_CHECKPOINT = (
    "INSERT INTO projection_checkpoints (projection, position, data) VALUES (?, ?, ?)"
    " ON CONFLICT (projection) DO UPDATE SET position = excluded.position, data = excluded.data"
    " WHERE excluded.position >= projection_checkpoints.position"
)
_GET_CHECKPOINT = "SELECT position, data FROM projection_checkpoints WHERE projection = ?"
_ROW_COLUMNS = "key, sort_key, listed, version, data"
_GET_ROW = f"SELECT {_ROW_COLUMNS} FROM projection_rows WHERE projection = ? AND key = ?"
# (the excluded keys come as one JSON array: SQLite has no array parameter)
_LIST_ROWS = (
    f"SELECT {_ROW_COLUMNS} FROM projection_rows WHERE projection = ? AND (listed = 1 OR NOT ?)"
    " AND key NOT IN (SELECT value FROM json_each(?))"
    " ORDER BY sort_key DESC, key DESC LIMIT ? OFFSET ?"
)

_CURRENT_VERSION = "SELECT COALESCE(MAX(version), 0) FROM events WHERE stream_id = ?"
_INSERT = "INSERT INTO events (stream_id, version, recorded_at, data) VALUES (?, ?, ?, ?)"
_READ_STREAM = (
    "SELECT position, version, recorded_at, data FROM events"
    " WHERE stream_id = ? AND version > ? ORDER BY version LIMIT ?"
)
_HEAD = "SELECT COALESCE(MAX(position), 0) FROM events"
_READ_CLAIM = "SELECT data FROM claims WHERE stream_id = ? AND key = ?"
_INSERT_CLAIM = "INSERT INTO claims (stream_id, key, data) VALUES (?, ?, ?)"
#: How many streams' committed versions the writer keeps (the tables in play, and more).
_KEPT_VERSIONS = 8192
#: How long a write on the event loop waits for a lock another connection holds.
LOOP_BUSY_TIMEOUT_MS = 100
#: When the event loop writes: a checkpoint once the -wal file holds this many bytes (SQLite's
#: own automatic checkpoint comes at 1,000 pages, 4 MiB) ...
CHECKPOINT_AT_BYTES = 4 << 20
#: ... and the -wal file is cut back to this size when it starts over after one.
WAL_SIZE_LIMIT = 1 << 20
#: A claim made unless the key has one (then nothing changes, and the first is read).
_CLAIM_UNLESS_TAKEN = _INSERT_CLAIM + " ON CONFLICT (stream_id, key) DO NOTHING"
#: The columns of the events table (a table without them is not this log's).
EVENT_COLUMNS = frozenset(("position", "stream_id", "version", "recorded_at", "data"))
_READ_ALL = (
    "SELECT position, stream_id, version, recorded_at, data FROM events"
    " WHERE position > ? ORDER BY position LIMIT ?"
)


def marker_path(database: str | os.PathLike[str]) -> Path:
    """Where the committed marker of ``database`` lives (beside it, like ``-wal``)."""
    return Path(f"{os.fspath(database)}-committed")


#: The marker is one line padded to a fixed size, so each overwrite is one small write in place.
_MARKER_SIZE = 32


def _marker_bytes(position: int) -> bytes:
    return f"{position}\n".encode().ljust(_MARKER_SIZE)


def _file_stamp(database: Path) -> str | None:
    """What identifies the database file's bytes without reading them; None while a -wal
    holds part of the log (the file alone is then not the log)."""
    wal = Path(f"{database}-wal")
    if wal.exists() and wal.stat().st_size > 0:
        return None
    try:
        stat = database.stat()
    except OSError:
        return None
    return f"clean {stat.st_dev} {stat.st_ino} {stat.st_size} {stat.st_mtime_ns} {stat.st_ctime_ns}"


def read_marker(database: str | os.PathLike[str]) -> int | None:
    """The highest position the server said it committed to ``database``; None without a
    marker. Raises :class:`LogDamaged` when the marker cannot be read."""
    path = marker_path(database)
    try:
        text = path.read_bytes()[:_MARKER_SIZE].decode("ascii").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise LogDamaged(str(path), [f"the committed marker cannot be read ({error})"]) from None
    if not text.isdigit():
        raise LogDamaged(str(path), [f"the committed marker holds {text[:40]!r}, not a position"])
    return int(text)


def write_marker(database: str | os.PathLike[str], position: int) -> None:
    """Record that ``database`` holds every event up to ``position`` (for a copy of it)."""
    marker_path(database).write_bytes(_marker_bytes(position))


def describe_sqlite_error(error: sqlite3.Error) -> str:
    """What a SQLite error on opening or reading says about the file, for the operator."""
    text = str(error)
    if "file is not a database" in text:
        return f"is not an SQLite database, or its header is damaged ({text})"
    if "malformed" in text or "corrupt" in text:
        return f"is damaged ({text})"
    if "no such table" in text:
        return f"has no events table ({text})"
    if "readonly" in text or "read-only" in text:
        return f"cannot be written: the file or its file system is read-only ({text})"
    return f"cannot be used ({type(error).__name__}: {text})"


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


# What the writer hands back for one request: the stored events, or why nothing was stored.
_Outcome = list[StoredEvent] | BaseException


class _Halfway(Exception):
    """A statement failed halfway through an append written without a SAVEPOINT; the
    transaction was rolled back, to be run again with one SAVEPOINT per append."""


class SqliteEventLog(EventLog):
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
        self._state: Literal["new", "opening", "open", "closing", "closed"] = "new"
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
        except BaseException:
            await self._shut_down()
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
            raise RuntimeError(
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
        future: asyncio.Future[None] = self._running_loop().create_future()
        self._enqueue(_ProjectionWrite(projection, rows, checkpoint, drop, future))
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

    # -- writer thread ------------------------------------------------------------------------

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
                raise RuntimeError(f"{self.path}: could not switch to WAL mode (got {mode!r})")
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
                raise RuntimeError(
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

    # -- the checkpointer (when the event loop writes) ----------------------------------------

    def _connect_checkpointer(self) -> None:
        self._checkpointer_connection = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False
        )
        self._checkpointer_connection.execute("PRAGMA busy_timeout = 5000")

    def _close_checkpointer(self) -> None:
        if self._checkpointer_connection is not None:
            self._checkpointer_connection.close()
            self._checkpointer_connection = None

    def _checkpoint_soon(self) -> None:
        """On the loop, after a commit: once the -wal file holds ``checkpoint_at`` bytes, copy
        it into the database on the checkpointer thread, in two passes (see the module's
        docstring): the second, with commits paused, copies every frame left, and the next
        transaction starts the -wal over."""
        if self._checkpointing or self._checkpointer is None or self._state != "open":
            return
        try:
            size = os.stat(f"{self.path}-wal").st_size
        except OSError:
            return
        if size >= self.checkpoint_at:
            self._checkpointing = True
            self._run_checkpoint()

    def _run_checkpoint(self) -> None:
        assert self._loop is not None and self._checkpointer is not None
        done = self._loop.run_in_executor(self._checkpointer, self._checkpoint)
        done.add_done_callback(self._checkpointed)

    def _checkpoint(self) -> None:
        connection = self._checkpointer_connection
        if connection is not None:
            connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    def _checkpointed(self, done: asyncio.Future[None]) -> None:
        if not done.cancelled() and done.exception() is not None:
            _log.warning("checkpoint of %s failed: %s", self.path, done.exception())
        if not self._commits_paused and self._state == "open":
            self._commits_paused = True  # the second pass: what came during the first
            self._run_checkpoint()
            return
        self._commits_paused = self._checkpointing = False
        self.checkpoints += 1
        self._write_queued()  # what came meanwhile

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
        recorded_at = time.time()
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

    # -- back on the event loop ---------------------------------------------------------------

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


def _projection_row(row: tuple[Any, ...]) -> ProjectionRow:
    key, sort_key, listed, version, data = row
    return ProjectionRow(key, sort_key, bool(listed), version, bytes(data))


def _probe_write(connection: sqlite3.Connection) -> None:
    """Commit a write that changes nothing (the schema version, set to itself): it goes through
    the -wal like any append, so it fails exactly when appends would."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        connection.execute("COMMIT")
    except BaseException:
        if connection.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                connection.execute("ROLLBACK")
        raise
