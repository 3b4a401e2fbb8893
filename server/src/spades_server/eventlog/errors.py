"""What the event log raises: the outcomes an append may meet, and the log's own failures.

:class:`VersionConflict` and :class:`ClaimTaken` are answers, not failures: another writer moved
first, or claimed the key first; nothing was written and the caller decides again.

Everything else the log raises about itself or its storage is an :class:`EventLogError`: closed
(:class:`LogClosed`), not whole (:class:`LogDamaged`), its storage refusing writes now
(:class:`LogUnavailable`), out of reach when it opens (:class:`LogUnreachable`), held by another
server (:class:`LogInUse`), written by a newer server (:class:`LogIncompatible`), or named by a
URL no backend serves (:class:`LogUrlInvalid`). Each backend wraps its driver's errors
(``sqlite3``, ``asyncpg``) in these where they would leave ``eventlog/`` (the start-up above all),
so nothing above this package names a driver (eventsourcing's ``PersistenceError`` family).

Some also derive from the built-in class they replaced (``OSError``, ``RuntimeError``,
``ValueError``), so that code which caught those before keeps working unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "ClaimTaken",
    "EventLogError",
    "LogClosed",
    "LogDamaged",
    "LogInUse",
    "LogIncompatible",
    "LogUnavailable",
    "LogUnreachable",
    "LogUrlInvalid",
    "VersionConflict",
]


class VersionConflict(Exception):
    """An append expected the stream at one version but found it at another; nothing was written.

    Another writer moved first: reload the stream, decide again, and append with the new version.
    """

    def __init__(self, stream_id: str, expected: int, actual: int) -> None:
        self.stream_id = stream_id
        self.expected = expected
        self.actual = actual
        super().__init__(
            f"stream {stream_id!r} is at version {actual}, not the expected {expected}; "
            "nothing was appended"
        )

    def __reduce__(self) -> tuple[type[VersionConflict], tuple[str, int, int]]:
        return (VersionConflict, (self.stream_id, self.expected, self.actual))


class ClaimTaken(Exception):
    """The key was claimed before, so nothing was written; ``data`` is what the first claim
    stored."""

    def __init__(self, stream_id: str, key: str, data: bytes) -> None:
        self.stream_id = stream_id
        self.key = key
        self.data = data
        super().__init__(f"stream {stream_id!r} has a claim {key!r} already; nothing was written")

    def __reduce__(self) -> tuple[type[ClaimTaken], tuple[str, str, bytes]]:
        return (ClaimTaken, (self.stream_id, self.key, self.data))


class EventLogError(Exception):
    """The event log or its storage cannot serve; the message says why, for an operator."""


class LogClosed(EventLogError):
    """The event log is closed (or was never opened): no more appends, reads or live events."""


class LogDamaged(EventLogError):
    """The log's storage is not whole, or not usable, so it must not be served.

    ``where`` names the storage (a file); ``problems`` say what is wrong, one finding each,
    worded for the operator who must repair or restore it. The message is all of it, one line.
    """

    def __init__(self, where: str, problems: Sequence[str]) -> None:
        self.where = where
        self.problems = list(problems)
        super().__init__(f"{where}: " + "; ".join(self.problems))


class LogUnavailable(EventLogError):
    """The log cannot store anything now (disk full, I/O error, a read-only file); nothing of
    the append was written. The condition is the storage's, not the request's: retry later."""


class LogUnreachable(EventLogError, OSError):
    """The log's storage cannot be reached, or refuses this server, as the log opens: nothing
    listens at the address, the login or the database is refused, the DSN is malformed. The
    message is the driver's own words. (An ``OSError`` too, as the driver's connection errors
    were.)"""


class LogInUse(EventLogError, RuntimeError):
    """Another process holds the log, which has one writer (the embedded SQLite file)."""


class LogIncompatible(EventLogError, RuntimeError):
    """The storage cannot hold this server's log: a newer schema, a journal mode the log needs
    and cannot set, no schema to put its tables in."""


class LogUrlInvalid(EventLogError, ValueError):
    """A URL no backend serves, or one that names no log (see ``eventlog.factory``)."""
