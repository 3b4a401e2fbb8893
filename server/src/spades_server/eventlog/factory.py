"""The log chosen by URL: the one place that maps where a log lives onto the backend serving it.

Like eventsourcing's ``InfrastructureFactory``, the backend is a matter of configuration: the
server hands a URL to :func:`log_from_url` and holds the :class:`EventLog` it gets, never naming
SQLite or PostgreSQL (nor their drivers: each backend wraps its driver's errors in the
``EventLogError`` family). The URLs:

- ``sqlite:///PATH``: the embedded log in the file PATH. As in SQLAlchemy's URLs, what follows
  the third slash is the path: ``sqlite:///spades.db`` and ``sqlite:///var/spades.db`` are
  relative to the working directory, ``sqlite:////var/lib/spades/spades.db`` (a fourth slash)
  is absolute. Characters that mean something in a URL (``%``, ``?``, ``#``) are
  percent-encoded, as :func:`log_url` does.
- ``postgresql://...`` or ``postgres://...``: the shared log on PostgreSQL, the URL passed on
  as its DSN (asyncpg's form: ``postgresql://user@host:5432/database?options=...``).

Anything else is refused with :class:`LogUrlInvalid`, naming the URL (its password, if any,
masked) and the schemes accepted.

Today's command line names a file (``--database``) or a DSN (``--postgres-dsn``):
:func:`log_url` turns those into the URL.

The tools that work on a log's storage rather than an open log (``spades-server check`` and
``backup``) take a URL too: :func:`inspection_from_url` and :func:`backup_from_url`, for the
backends that offer them (SQLite; PostgreSQL guards its own storage and has ``pg_dump``).

>>> log_url("var/spades.db", None)
'sqlite:///var/spades.db'
>>> log_url("/var/lib/spades.db", None)
'sqlite:////var/lib/spades.db'
>>> log_url("spades.db", "postgresql://spades@db/spades")
'postgresql://spades@db/spades'
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

from spades_server.eventlog.base import EventLog, LogUrlInvalid
from spades_server.eventlog.inspection import LogInspection
from spades_server.eventlog.postgres import PostgresEventLog
from spades_server.eventlog.sqlite import Durability, SqliteEventLog
from spades_server.eventlog.sqlite.integrity import SqliteInspection, backup

__all__ = [
    "POSTGRES_SCHEMES",
    "SQLITE_SCHEME",
    "backup_from_url",
    "inspection_from_url",
    "log_from_url",
    "log_url",
    "sqlite_path",
]

SQLITE_SCHEME = "sqlite"
POSTGRES_SCHEMES = ("postgresql", "postgres")
_ACCEPTED = "sqlite:///PATH (a file), postgresql://... or postgres://... (a PostgreSQL DSN)"
_NO_STORAGE_TOOLS = (
    "the PostgreSQL event log has no {what} here: PostgreSQL guards its own storage "
    "(use pg_dump and PostgreSQL's own checks)"
)


def log_from_url(url: str, *, durability: Durability = "normal", fanout: str = "") -> EventLog:
    """The (unopened) event log that ``url`` names: open it with ``await log.open()`` or
    ``async with``.

    ``durability`` is the SQLite log's (``normal`` or ``full``); ``fanout`` the PostgreSQL
    log's (``""`` or ``"postgres"`` for LISTEN/NOTIFY, else a NATS URL); each backend ignores
    the other's. Raises :class:`LogUrlInvalid` for a URL no backend serves.
    """
    scheme, separator, _ = url.partition(":")
    scheme = scheme.lower()
    if separator and scheme == SQLITE_SCHEME:
        return SqliteEventLog(sqlite_path(url), durability=durability)
    if separator and scheme in POSTGRES_SCHEMES:
        return PostgresEventLog(url, fanout="" if fanout == "postgres" else fanout)
    raise LogUrlInvalid(
        f"cannot open an event log at {_shown(url)!r}: it is an invalid DSN or URL "
        f"(the schemes accepted: {_ACCEPTED})"
    )


def inspection_from_url(url: str) -> LogInspection:
    """A read-only look at the storage of the log ``url`` names (see ``eventlog.inspection``);
    raises :class:`LogUrlInvalid` for a backend that offers none, or a URL none serves."""
    if url.partition(":")[0].lower() in POSTGRES_SCHEMES:
        raise LogUrlInvalid(_NO_STORAGE_TOOLS.format(what="check of its storage"))
    return SqliteInspection(_sqlite_path_of(url))


def backup_from_url(source: str, destination: str) -> int:
    """Copy the log ``source`` names to a new log at ``destination`` (both SQLite URLs: the
    online backup, consistent while a server writes the source); returns the events copied."""
    for url in (source, destination):
        if url.partition(":")[0].lower() in POSTGRES_SCHEMES:
            raise LogUrlInvalid(_NO_STORAGE_TOOLS.format(what="backup"))
    return backup(_sqlite_path_of(source), _sqlite_path_of(destination))


def _sqlite_path_of(url: str) -> Path:
    if url.partition(":")[0].lower() != SQLITE_SCHEME:
        raise LogUrlInvalid(
            f"cannot look at a log at {_shown(url)!r}: it is an invalid DSN or URL "
            f"(the schemes accepted: {_ACCEPTED})"
        )
    return sqlite_path(url)


def sqlite_path(url: str) -> Path:
    """The file a ``sqlite:///PATH`` URL names (see the module's docstring)."""
    parts = urlsplit(url)
    if parts.scheme.lower() != SQLITE_SCHEME or not url.lower().startswith("sqlite:///"):
        raise LogUrlInvalid(
            f"{_shown(url)!r} is not a SQLite log's URL: it is sqlite:///PATH (three slashes, "
            "then the file's path: relative, or absolute with a fourth slash)"
        )
    if parts.query or parts.fragment:
        raise LogUrlInvalid(
            f"{_shown(url)!r}: a SQLite log's URL takes no query or fragment (write ? and # "
            "in a file name as %3F and %23)"
        )
    path = unquote(parts.path[1:])  # what follows the third slash
    if not path:
        raise LogUrlInvalid(f"{url!r} names no file: write sqlite:///PATH")
    return Path(path)


def log_url(database: str | os.PathLike[str] | None, postgres_dsn: str | None) -> str:
    """The URL of the log today's flags name: the PostgreSQL DSN when one is given (it is the
    URL: passed on as it is), else the SQLite file ``database``."""
    if postgres_dsn:
        return postgres_dsn
    if database is None or not os.fspath(database):
        raise LogUrlInvalid("no event log named: give a database file or a PostgreSQL DSN")
    return f"{SQLITE_SCHEME}:///" + quote(os.fspath(database), safe="/")


def _shown(url: str) -> str:
    """``url`` with its password, if any, masked (an error message may be logged)."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return url
    if not password:
        return url
    return url.replace(f":{password}@", ":***@", 1)
