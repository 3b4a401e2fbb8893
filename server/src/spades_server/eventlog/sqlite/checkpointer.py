"""The SQLite log's checkpointer: copies the -wal file into the database off the event loop.

Why this shape
--------------
With ``normal`` durability the event loop commits itself (see ``writer``), and a checkpoint,
which does fsync, must not stop it. So checkpoints run on a thread of their own
(``wal_autocheckpoint`` is off on the writing connection), and the loop never waits for a disk:
once the -wal file holds ``CHECKPOINT_AT_BYTES``, the thread checkpoints while the loop goes on
committing, then once more with the loop's commits paused, and the loop commits what was queued
meanwhile. A checkpoint copies only the frames committed before it began, and the -wal file
starts over only once one copied them all: checkpoints beside a steady stream of commits never
catch up, and the file grows for ever (235 MiB after 1,063 commits in bench_service_alone,
before the pause). The first pass copies most of it without holding up any append; appends wait
only through the second, which copies what came during the first: 14-18 ms in
bench_service_alone at 64 tables, against 29-39 ms for a first pass (most of a short pass is the
two fsyncs of a checkpoint; the old writer thread held appends up for a whole one, inside a
COMMIT).

With ``full`` durability there is no checkpointer: the writer thread's COMMITs checkpoint as
SQLite does by default.

``SqliteCheckpointer`` is the part of :class:`~spades_server.eventlog.sqlite.SqliteEventLog`
that does this (a base class of it, holding no state of its own: the log's ``__init__`` sets
what is declared here).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from spades_server.eventlog.base import EventLog

_log = logging.getLogger("spades_server.eventlog.sqlite")

#: When the event loop writes: a checkpoint once the -wal file holds this many bytes (SQLite's
#: own automatic checkpoint comes at 1,000 pages, 4 MiB) ...
CHECKPOINT_AT_BYTES = 4 << 20
#: ... and the -wal file is cut back to this size when it starts over after one.
WAL_SIZE_LIMIT = 1 << 20

#: Where a SQLite log is in its life.
LogState = Literal["new", "opening", "open", "closing", "closed"]


class SqliteCheckpointer(EventLog):
    """Checkpoints of the SQLite log whose event loop writes (see the module's docstring)."""

    path: Path
    _state: LogState
    _loop: asyncio.AbstractEventLoop | None
    _checkpointer: concurrent.futures.ThreadPoolExecutor | None
    _checkpointer_connection: sqlite3.Connection | None
    #: True while the checkpointer runs, and while it runs its second pass, during which the
    #: loop commits nothing.
    _checkpointing: bool
    _commits_paused: bool
    #: The -wal file's size at which the loop has it checkpointed.
    checkpoint_at: int
    #: Checkpoints run (for tests).
    checkpoints: int

    if TYPE_CHECKING:

        def _write_queued(self) -> None:
            """The log's: commit what was queued (what came during a checkpoint)."""

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
