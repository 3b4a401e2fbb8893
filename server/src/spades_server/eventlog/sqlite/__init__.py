"""The embedded event log: one SQLite file in WAL mode, written by one group-committing writer.

Why it is built the way it is, module by module (each opens with its own reasons):

- ``log``: :class:`SqliteEventLog`, the class the server holds: open (lock, checks), close,
  the reads on a reader thread of their own;
- ``writer``: group commit, the event loop or a writer thread committing everything queued in one
  transaction, with the failures of storage reported and probed;
- ``checkpointer``: the -wal file copied into the database off the event loop, in two passes;
- ``marker``: the committed marker beside the file, which notices a loss SQLite cannot, and the
  clean stamp that lets a clean restart skip the scans;
- ``schema``: the tables, their migrations and the statements;
- ``errors``: SQLite's errors read once and worded for the operator;
- ``integrity``: the read-only look at a file that the start-up checks and ``spades-server
  check`` use, and the online backup.

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
"""

from spades_server.eventlog.sqlite.checkpointer import CHECKPOINT_AT_BYTES, WAL_SIZE_LIMIT
from spades_server.eventlog.sqlite.errors import describe_sqlite_error
from spades_server.eventlog.sqlite.integrity import SqliteInspection, backup
from spades_server.eventlog.sqlite.log import SqliteEventLog
from spades_server.eventlog.sqlite.marker import marker_path, read_marker, write_marker
from spades_server.eventlog.sqlite.schema import EVENT_COLUMNS, SCHEMA_VERSION, Durability
from spades_server.eventlog.sqlite.writer import LOOP_BUSY_TIMEOUT_MS

__all__ = [
    "CHECKPOINT_AT_BYTES",
    "EVENT_COLUMNS",
    "LOOP_BUSY_TIMEOUT_MS",
    "SCHEMA_VERSION",
    "WAL_SIZE_LIMIT",
    "Durability",
    "SqliteEventLog",
    "SqliteInspection",
    "backup",
    "describe_sqlite_error",
    "marker_path",
    "read_marker",
    "write_marker",
]
