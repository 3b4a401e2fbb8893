"""The SQLite log's schema: its tables, the migrations between schema versions, and every
statement the writer and the readers run.

The events and claims tables are the log of record, versioned (``PRAGMA user_version``) and
migrated step by step on open; the projection tables are derived data, created when missing in
any version. The statements live here, beside the tables they name, so that a change of a
column is one module's change.
"""

from __future__ import annotations

import contextlib
import sqlite3
from typing import Any, Literal

from spades_server.eventlog.base import ProjectionRow

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
_DELETE_ROW = "DELETE FROM projection_rows WHERE projection = ? AND key = ? AND version = ?"
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
#: A claim made unless the key has one (then nothing changes, and the first is read).
_CLAIM_UNLESS_TAKEN = _INSERT_CLAIM + " ON CONFLICT (stream_id, key) DO NOTHING"
#: The columns of the events table (a table without them is not this log's).
EVENT_COLUMNS = frozenset(("position", "stream_id", "version", "recorded_at", "data"))
_READ_ALL = (
    "SELECT position, stream_id, version, recorded_at, data FROM events"
    " WHERE position > ? ORDER BY position LIMIT ?"
)


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
