"""The committed marker beside the SQLite file: what lets the log notice a loss SQLite cannot.

Beside the database the writer keeps a *committed marker* (``DATABASE-committed``): after each
COMMIT it overwrites the file with the highest position committed. The marker lives outside
SQLite on purpose: what SQLite loses (a deleted, cut or overwritten ``-wal``, a database
truncated to nothing) it loses silently and consistently, and only something outside it can
notice that the database now holds less than was acknowledged. It is written after the COMMIT,
so it never claims more than was committed; in ``normal`` durability a power loss may leave it
ahead of the database, and the log is then refused too (the operator decides: restore, or accept
the loss by deleting the marker). A database without a marker (made by an older server, or a
copy) is accepted and gets one.

On a clean close of a log whose owner checked it when it opened (``verified``, set by the
server's start-up checks) the marker also gets a *clean stamp*: the database file's inode,
size, mtime and ctime once SQLite has checkpointed and removed its -wal. At the next open,
``unchanged_since_clean_close`` says whether the file is still exactly that (no -wal, the same
stamp; the ctime changes with any write and cannot be set back), so the server can skip the
scans of a file it verified and then wrote itself. The stamp is removed when the log opens, so
a crash never leaves one behind.
"""

from __future__ import annotations

import os
from pathlib import Path

from spades_server.eventlog.base import LogDamaged


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
