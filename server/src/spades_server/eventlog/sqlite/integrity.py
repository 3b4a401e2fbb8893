"""The SQLite log's storage, looked at read-only: the file-level checks behind the server's
start-up checks and ``spades-server check``, and the online backup behind ``spades-server backup``.

What the file can say of itself is asked here, with SQLite: the header (before SQLite reads the
file at all), SQLite's own ``quick_check`` or ``integrity_check``, the ``events`` table, the
committed marker (``marker``: nothing acknowledged is missing), and whether an event was
removed. Positions are handed out 1, 2, 3... and never reused (a rolled-back append takes its
numbers back), so a whole log has as many events as its highest position: one count proves no
event was removed, and only a log that fails it pays for naming the streams with a gap.

What the events mean (they decode, the engine replays them) is not the log's to know: the
caller reads the streams and their events from here and replays them itself
(``spades_server.integrity``). :class:`SqliteInspection` is this backend's
:class:`~spades_server.eventlog.inspection.LogInspection`; a SQLite error on the way is a
:class:`LogDamaged` naming the file, worded by ``describe_sqlite_error``.

:func:`backup` copies a log with SQLite's online backup API (consistent even while a server
writes it) into ``DEST.partial``, renamed to ``DEST`` only once complete (a failed copy leaves
nothing under the name), and gives the copy its committed marker, so the copy starts and checks
clean.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from spades_server.eventlog.base import LogDamaged
from spades_server.eventlog.inspection import (
    Depth,
    LogInspection,
    StorageFinding,
    StorageScan,
    StreamSummary,
)
from spades_server.eventlog.sqlite.errors import describe_sqlite_error
from spades_server.eventlog.sqlite.marker import read_marker, write_marker
from spades_server.eventlog.sqlite.schema import EVENT_COLUMNS

__all__ = ["SQLITE_HEADER", "SqliteInspection", "backup", "file_findings"]

#: The first bytes of every SQLite database file.
SQLITE_HEADER = b"SQLite format 3\x00"
_GAPPED = (
    "SELECT stream_id FROM events GROUP BY stream_id"
    " HAVING MIN(version) != 1 OR MAX(version) != COUNT(*)"
)
#: Every stream once, in one pass over the (stream_id, version) index: whether its versions
#: are 1..N without a gap (unique versions from 1 whose highest is their count), and its last
#: event (found by position, the row id).
_STREAMS = (
    "SELECT s.stream_id, s.gap_free, s.head, e.data FROM"
    " (SELECT stream_id, MIN(version) = 1 AND MAX(version) = COUNT(*) AS gap_free,"
    " MAX(version) AS head, MAX(position) AS last FROM events GROUP BY stream_id) AS s"
    " JOIN events AS e ON e.position = s.last"
)
_STREAM = "SELECT version, data FROM events WHERE stream_id = ? ORDER BY version"
_STREAM_VERSIONS = "SELECT version FROM events WHERE stream_id = ? ORDER BY version"
_ALL_EVENTS = "SELECT stream_id, version, data FROM events"
_HEAD_AND_COUNT = "SELECT COALESCE(MAX(position), 0), COUNT(*) FROM events"


def file_findings(path: Path) -> list[str]:
    """What is wrong with the file before SQLite reads it (nothing: an empty list)."""
    try:
        with path.open("rb") as file:
            header = file.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return ["does not exist"]
    except OSError as error:
        return [f"cannot be read ({error.strerror or error})"]
    if not header:
        return ["is empty (0 bytes): it holds no event log"]
    if header != SQLITE_HEADER:
        return ["is not an SQLite database, or its header is damaged"]
    return []


def connect_read_only(path: Path) -> sqlite3.Connection:
    """A connection that reads only (``query_only``), waiting up to 5 s for a writer's lock."""
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    connection.execute("PRAGMA query_only = ON")
    connection.execute("PRAGMA busy_timeout = 5000")
    return connection


class SqliteInspection(LogInspection):
    """The SQLite file at ``path``, looked at read-only (see the module's docstring).

    Nothing is read until the first question (so it may be made on the event loop and asked in
    a worker thread); the file is then checked before SQLite opens it, and a file that is
    missing, empty or not SQLite raises :class:`LogDamaged` with what is wrong.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.where = str(self.path)
        self._opened: sqlite3.Connection | None = None

    def __repr__(self) -> str:
        return f"SqliteInspection({self.where!r})"

    def scan(self, depth: Depth) -> StorageScan:
        result = StorageScan()
        findings = result.findings
        with self._sqlite_errors():
            connection = self._connection()
            pragma = "integrity_check" if depth == "full" else "quick_check"
            problems = [row[0] for row in connection.execute(f"PRAGMA {pragma}")]
            if problems != ["ok"]:
                shown = "; ".join(problems[:3]) + (
                    f" (and {len(problems) - 3} more)" * (len(problems) > 3)
                )
                findings.append(StorageFinding(f"is damaged, says SQLite's {pragma}: {shown}"))
                result.readable = False
                return result
            columns = {row[1] for row in connection.execute("PRAGMA table_info(events)")}
            if not columns >= EVENT_COLUMNS:
                findings.append(
                    StorageFinding("has no events table (dropped, or another program's database)")
                )
                result.readable = False
                return result
            head, result.events = connection.execute(_HEAD_AND_COUNT).fetchone()
            try:
                committed = read_marker(self.path)
            except LogDamaged as error:  # the committed marker itself
                findings.append(StorageFinding(str(error)))
                result.readable = False
                return result
            if committed is not None and head < committed:
                findings.append(
                    StorageFinding(
                        f"holds events up to position {head}, but {committed} were committed: "
                        "acknowledged events are missing"
                    )
                )
            # As many events as the highest position: none was removed (see the docstring).
            if depth == "scan" and result.events != head:
                for (stream_id,) in connection.execute(_GAPPED):
                    findings.append(self._first_gap(connection, stream_id))
        return result

    def streams(self) -> list[StreamSummary]:
        with self._sqlite_errors():
            rows = self._connection().execute(_STREAMS).fetchall()
        return [
            StreamSummary(stream_id, bool(gap_free), head, bytes(data))
            for stream_id, gap_free, head, data in rows
        ]

    def first_gap(self, stream_id: str) -> StorageFinding:
        with self._sqlite_errors():
            return self._first_gap(self._connection(), stream_id)

    def stream_events(self, stream_id: str) -> Iterator[tuple[int, bytes]]:
        with self._sqlite_errors():
            yield from self._connection().execute(_STREAM, (stream_id,))

    def all_events(self) -> Iterator[tuple[str, int, bytes]]:
        with self._sqlite_errors():
            yield from self._connection().execute(_ALL_EVENTS)

    def close(self) -> None:
        if self._opened is not None:
            self._opened.close()
            self._opened = None

    def _connection(self) -> sqlite3.Connection:
        if self._opened is None:
            problems = file_findings(self.path)
            if problems:
                raise LogDamaged(self.where, problems)
            self._opened = connect_read_only(self.path)
        return self._opened

    @contextlib.contextmanager
    def _sqlite_errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as error:
            raise LogDamaged(self.where, [describe_sqlite_error(error)]) from None

    @staticmethod
    def _first_gap(connection: sqlite3.Connection, stream_id: str) -> StorageFinding:
        expected = 1
        for (version,) in connection.execute(_STREAM_VERSIONS, (stream_id,)):
            if version != expected:
                break
            expected += 1
        return StorageFinding(
            f"its versions jump from {expected - 1} to {version}: events are missing",
            stream_id,
            expected,
        )


def backup(source: str | os.PathLike[str], destination: str | os.PathLike[str]) -> int:
    """Copy the log at ``source`` to the new file ``destination`` (SQLite's online backup: a
    consistent copy even while a server writes the source); returns the events copied.

    Raises :class:`LogDamaged` naming ``source`` when it cannot be copied, FileExistsError when
    ``destination`` exists."""
    source_path, target = Path(source), Path(destination)
    problems = file_findings(source_path)
    if problems:
        raise LogDamaged(str(source_path), problems)
    if target.exists():
        raise FileExistsError(f"{target} exists; a backup goes to a new file")
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    try:
        with (
            contextlib.closing(connect_read_only(source_path)) as reader,
            contextlib.closing(sqlite3.connect(partial, isolation_level=None)) as copy,
        ):
            reader.backup(copy)
            copy.execute("PRAGMA journal_mode = DELETE")  # one self-contained file
            head, count = copy.execute(_HEAD_AND_COUNT).fetchone()
        write_marker(target, head)
        partial.rename(target)  # only a complete copy takes the name
    except sqlite3.Error as error:
        partial.unlink(missing_ok=True)
        raise LogDamaged(str(source_path), [describe_sqlite_error(error)]) from None
    return int(count)
