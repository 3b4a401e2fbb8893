"""A read-only look at a log's storage, for the integrity checks: the same questions of every
backend, answered by the one that knows its storage.

The server's start-up checks and ``spades-server check`` (``spades_server.integrity``) ask of a
log: is the storage whole as storage (the file opens, is the log's, its own check passes, nothing
acknowledged is missing, no event was removed)? Which streams are there, with their last event
and whether their versions run 1..N? What are a stream's events? The backend answers from its
storage (:class:`LogInspection`); the caller decodes and replays the events through the engine
and the aggregates, which the log knows nothing of. A backend that guards its own storage
offers no inspection (``EventLog.inspection()`` is None: PostgreSQL, see its log).

The answers are plain values (:class:`StorageFinding`, :class:`StreamSummary`,
:class:`StorageScan`); a storage the inspection cannot read at all raises :class:`LogDamaged`
(its ``problems`` the findings, worded for the operator), never the driver's error.

Inspections block (a file is read): run them in a worker thread, and close them (``with``).

Example (the SQLite log; ``log.inspection()`` gives the same for an opened log)::

    with SqliteInspection(Path("spades.db")) as inspection:
        scan = inspection.scan("quick")
        for stream in inspection.streams():
            ...
"""

from __future__ import annotations

import abc
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal, Self

__all__ = ["Depth", "LogInspection", "StorageFinding", "StorageScan", "StreamSummary"]

#: How deep a check goes. ``scan``: the storage as a whole (its own quick check, the events
#: table, the committed marker, versions without a gap), what a start always runs unless the
#: storage is unchanged since a clean close. ``quick``: that, without the gap count (the caller
#: reads the streams, which say it). ``full``: the storage's own thorough check (SQLite's
#: integrity_check), and the streams read as in ``quick``.
Depth = Literal["scan", "quick", "full"]


@dataclass(frozen=True, slots=True)
class StorageFinding:
    """One thing wrong with a log's storage; with a stream and its first bad version when it is
    that stream's (a version gap)."""

    problem: str
    stream_id: str = ""
    version: int = 0


@dataclass(frozen=True, slots=True)
class StreamSummary:
    """A stream as stored: whether its versions are 1..N without a gap, its highest version and
    the data of its last event (by position)."""

    stream_id: str
    gap_free: bool
    head: int
    last: bytes


@dataclass(slots=True)
class StorageScan:
    """What :meth:`LogInspection.scan` found: its findings, the events stored, and whether the
    streams can be read on (False when the storage is not the log's, or not readable: there is
    nothing more to ask it)."""

    findings: list[StorageFinding] = field(default_factory=list)
    events: int = 0
    readable: bool = True


class LogInspection(abc.ABC):
    """A read-only look at one log's storage (see the module's docstring). It reads only: a
    server may be running on the storage meanwhile."""

    #: The storage, as an operator names it (a file's path).
    where: str

    @abc.abstractmethod
    def scan(self, depth: Depth) -> StorageScan:
        """Check the storage as a whole to ``depth``; at ``scan`` depth also find the streams
        with a version gap when events were removed (each stream's first gap a finding)."""

    @abc.abstractmethod
    def streams(self) -> list[StreamSummary]:
        """Every stream once, with its last event and whether its versions have a gap."""

    @abc.abstractmethod
    def first_gap(self, stream_id: str) -> StorageFinding:
        """The first version missing from a stream whose versions have a gap."""

    @abc.abstractmethod
    def stream_events(self, stream_id: str) -> Iterator[tuple[int, bytes]]:
        """A stream's events as (version, data), by version."""

    @abc.abstractmethod
    def all_events(self) -> Iterator[tuple[str, int, bytes]]:
        """Every event as (stream, version, data), in the storage's order."""

    @abc.abstractmethod
    def close(self) -> None:
        """Let go of the storage. Idempotent."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
