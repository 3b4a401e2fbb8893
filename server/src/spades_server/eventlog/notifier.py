"""The append notifier: how subscriptions learn, without polling, what a backend committed.

Every backend feeds one :class:`AppendNotifier` with what it committed (the events, or only that
a stream moved, when another process committed them); the subscriptions of ``EventLog`` wait on
it and take the newest events from its memory, reading storage only when they are further behind
than it keeps. It knows nothing of storage: the same notifier serves the SQLite and the
PostgreSQL log.
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field

from spades_server.eventlog.errors import LogClosed
from spades_server.eventlog.records import StoredEvent

__all__ = ["AppendNotifier"]


@dataclass(slots=True)
class _WatchedStream:
    """What the notifier keeps for a stream that has subscribers."""

    subscribers: int = 0
    head: int = 0  # highest version published since the stream was first watched
    #: Highest version another process was heard to commit (``advance_stream``), which this
    #: process's own appends did not bring: what a follower of the stream must read.
    foreign: int = 0
    recent: list[StoredEvent] = field(default_factory=list)  # contiguous versions
    wakeup: asyncio.Event = field(default_factory=asyncio.Event)


class AppendNotifier:
    """Tells waiting subscriptions what was committed, and keeps the latest events in memory.

    A backend calls :meth:`publish` on the event loop with each batch of committed events, in
    commit order. Each waiting subscription then wakes once per batch and takes the new events
    from memory, so a burst of appends costs no storage read per subscriber per event. A backend
    that only learns *that* something was committed (PostgreSQL NOTIFY from another replica)
    calls :meth:`advance` instead; subscribers then read the new events from storage once each.

    Memory stays bounded: at most ``keep_all`` recent events for ``subscribe_all`` and
    ``keep_per_stream`` recent events for each stream that currently has a subscriber.
    A subscriber further behind than that reads from storage.
    """

    def __init__(self, *, keep_all: int = 4096, keep_per_stream: int = 256) -> None:
        self._keep_all = keep_all
        self._keep_per_stream = keep_per_stream
        self._closed = False
        self._watched: dict[str, _WatchedStream] = {}
        self._head_position = 0
        self._all_wakeup = asyncio.Event()
        # ``_recent`` holds every committed event with a position above ``_complete_after``;
        # None until the backend says where publishing starts (``start``).
        self._recent: list[StoredEvent] = []
        self._complete_after: int | None = None

    @property
    def closed(self) -> bool:
        return self._closed

    def check_open(self) -> None:
        if self._closed:
            raise LogClosed("the event log is closed")

    def start(self, head_position: int) -> None:
        """Begin publishing: every event after ``head_position`` will be published."""
        self._closed = False
        self._head_position = max(self._head_position, head_position)
        self._all_wakeup = asyncio.Event()
        self._recent.clear()
        self._complete_after = head_position

    def close(self) -> None:
        """End every subscription: waiting ones raise :class:`LogClosed`."""
        self._closed = True
        self._recent.clear()
        self._complete_after = None
        self._all_wakeup.set()
        for watched in self._watched.values():
            watched.recent.clear()
            watched.wakeup.set()

    # -- backend side -------------------------------------------------------------------------

    def publish(self, events: Sequence[StoredEvent]) -> None:
        """Record events just committed (in commit order) and wake their subscribers."""
        if self._closed or not events:
            return
        woken: list[_WatchedStream] = []
        for event in events:
            self._head_position = max(self._head_position, event.position)
            if self._complete_after is not None:
                self._recent.append(event)
            watched = self._watched.get(event.stream_id)
            if watched is not None:
                recent = watched.recent
                if recent and recent[-1].version + 1 != event.version:
                    recent.clear()  # keep only contiguous versions
                recent.append(event)
                if len(recent) > 2 * self._keep_per_stream:
                    del recent[: len(recent) - self._keep_per_stream]
                watched.head = max(watched.head, event.version)
                woken.append(watched)
        if len(self._recent) > 2 * self._keep_all:
            drop = len(self._recent) - self._keep_all
            self._complete_after = self._recent[drop - 1].position
            del self._recent[:drop]
        for watched in woken:
            _wake(watched)
        self._wake_all()

    def advance(self, stream_id: str, version: int, position: int) -> None:
        """Note a commit known only by its stream, version and position (no event data)."""
        if self._closed:
            return
        self._head_position = max(self._head_position, position)
        # What is in memory may now miss events: serve from storage up to here.
        self._recent.clear()
        if self._complete_after is not None:
            self._complete_after = max(self._complete_after, position)
        watched = self._watched.get(stream_id)
        if watched is not None:
            watched.recent.clear()
            watched.head = max(watched.head, version)
            watched.foreign = max(watched.foreign, version)
            _wake(watched)
        self._wake_all()

    # For a backend whose global positions may commit out of order (PostgreSQL): it tells
    # stream subscribers at once (a stream's versions are gap-free by construction) but moves
    # ``subscribe_all`` only to positions it proved final, with :meth:`advance_all`.

    def publish_to_streams(self, events: Sequence[StoredEvent]) -> None:
        """Give just-committed events to their streams' subscribers only (not to
        ``subscribe_all``). Events may come in any order across calls: a version at or below
        what was already published makes that stream's subscribers read from storage."""
        if self._closed:
            return
        woken: list[_WatchedStream] = []
        for event in events:
            watched = self._watched.get(event.stream_id)
            if watched is None:
                continue
            recent = watched.recent
            if event.version <= watched.head:
                recent.clear()  # late or repeated: memory may no longer be contiguous
            else:
                if recent and recent[-1].version + 1 != event.version:
                    recent.clear()  # keep only contiguous versions
                recent.append(event)
                if len(recent) > 2 * self._keep_per_stream:
                    del recent[: len(recent) - self._keep_per_stream]
                watched.head = event.version
            woken.append(watched)
        for watched in woken:
            _wake(watched)

    def advance_stream(self, stream_id: str, version: int) -> None:
        """Note that a stream reached ``version`` (no event data): its subscribers read storage."""
        if self._closed:
            return
        watched = self._watched.get(stream_id)
        if watched is None:
            return
        if version > watched.foreign:
            watched.foreign = version
        if version > watched.head:
            watched.recent.clear()
            watched.head = version
            _wake(watched)

    def advance_all(self, position: int) -> None:
        """Note that every event up to ``position`` is committed and final (no lower position
        can appear later): ``subscribe_all`` subscribers read them from storage."""
        if self._closed or position <= self._head_position:
            return
        self._head_position = position
        self._recent.clear()
        if self._complete_after is not None:
            self._complete_after = max(self._complete_after, position)
        self._wake_all()

    def foreign_head(self, stream_id: str) -> int:
        """The highest version of a watched stream that another process was heard to commit
        (0 when none was, or the stream is not watched)."""
        watched = self._watched.get(stream_id)
        return watched.foreign if watched is not None else 0

    async def wait_for_foreign(self, stream_id: str, after_version: int) -> None:
        """Return once another process was heard to commit a version of the (watched) stream
        above ``after_version`` (this process's own appends do not end the wait)."""
        watched = self._watched[stream_id]
        while True:
            self.check_open()
            if watched.foreign > after_version:
                return
            await watched.wakeup.wait()

    def watched_streams(self) -> list[str]:
        """The streams that currently have subscribers."""
        return list(self._watched)

    # -- subscriber side ----------------------------------------------------------------------

    def watch_stream(self, stream_id: str) -> None:
        self.check_open()
        watched = self._watched.get(stream_id)
        if watched is None:
            watched = self._watched[stream_id] = _WatchedStream()
        watched.subscribers += 1

    def unwatch_stream(self, stream_id: str) -> None:
        watched = self._watched.get(stream_id)
        if watched is None:
            return
        watched.subscribers -= 1
        if watched.subscribers <= 0:
            del self._watched[stream_id]

    def recent_in_stream(
        self, stream_id: str, after_version: int, limit: int
    ) -> list[StoredEvent] | None:
        """Events of a watched stream after ``after_version`` from memory ([] if none is newer),
        or None if memory does not reach back that far and storage must be read."""
        self.check_open()
        watched = self._watched.get(stream_id)
        if watched is None or not watched.recent:
            return None
        recent = watched.recent
        first = recent[0].version
        if after_version + 1 < first:
            return None
        start = after_version + 1 - first
        return recent[start : start + limit]

    def recent_in_all(self, after_position: int, limit: int) -> list[StoredEvent] | None:
        """Events after ``after_position`` from memory ([] if none is newer), or None if memory
        does not reach back that far and storage must be read."""
        self.check_open()
        if self._complete_after is None or after_position < self._complete_after:
            return None
        start = bisect.bisect_right(self._recent, after_position, key=_position_of)
        return self._recent[start : start + limit]

    async def wait_for_stream(self, stream_id: str, after_version: int) -> None:
        """Return once a version above ``after_version`` of the (watched) stream was published."""
        watched = self._watched[stream_id]
        while True:
            self.check_open()
            if watched.head > after_version:
                return
            await watched.wakeup.wait()

    async def wait_for_position(self, after_position: int) -> None:
        """Return once an event with a position above ``after_position`` was published."""
        while True:
            self.check_open()
            if self._head_position > after_position:
                return
            await self._all_wakeup.wait()

    def _wake_all(self) -> None:
        wakeup, self._all_wakeup = self._all_wakeup, asyncio.Event()
        wakeup.set()


def _wake(watched: _WatchedStream) -> None:
    wakeup, watched.wakeup = watched.wakeup, asyncio.Event()
    wakeup.set()


def _position_of(event: StoredEvent) -> int:
    return event.position
