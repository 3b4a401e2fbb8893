"""What the event log raises: the outcomes an append may meet, and the log's own failures.

:class:`VersionConflict` and :class:`ClaimTaken` are answers, not failures: another writer moved
first, or claimed the key first; nothing was written and the caller decides again.
:class:`LogClosed`, :class:`LogDamaged` and :class:`LogUnavailable` say that the log cannot
serve: closed, not whole, or its storage refusing writes now.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["ClaimTaken", "LogClosed", "LogDamaged", "LogUnavailable", "VersionConflict"]


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


class LogClosed(Exception):
    """The event log is closed (or was never opened): no more appends, reads or live events."""


class LogDamaged(Exception):
    """The log's storage is not whole, or not usable, so it must not be served.

    ``where`` names the storage (a file); ``problems`` say what is wrong, one finding each,
    worded for the operator who must repair or restore it. The message is all of it, one line.
    """

    def __init__(self, where: str, problems: Sequence[str]) -> None:
        self.where = where
        self.problems = list(problems)
        super().__init__(f"{where}: " + "; ".join(self.problems))


class LogUnavailable(Exception):
    """The log cannot store anything now (disk full, I/O error, a read-only file); nothing of
    the append was written. The condition is the storage's, not the request's: retry later."""
