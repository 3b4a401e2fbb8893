"""The event-log interface: one append-only stream of opaque byte events per table.

Every backend (the embedded SQLite file today, PostgreSQL later) implements :class:`EventLog`
and passes the same contract tests (``tests/eventlog``). The log knows nothing about Spades:
an event is ``bytes`` (a serialised protobuf message to the server) stored under a stream id
(a table id) at a *version*, its 1-based position within the stream, and at a global
*position* that orders all events of all streams.

Writers use optimistic concurrency: ``append(stream, expected_version, events)`` writes iff the
stream is still at ``expected_version``, else raises :class:`VersionConflict` and writes nothing.
Whoever loses a race reloads and decides again.

Beside its events, a stream has *claims*: write-once keys, each with bytes. ``claim(stream, key,
data)`` stores ``data`` unless the key was claimed before, and ``append(..., claim=(key, data))``
claims a key in the same transaction as the events (nothing is written if either fails). The
first claim of a key wins everywhere, across processes: the server keeps the first result of each
action id this way, an acceptance with its events, a refusal without taking a version.

Beside the streams the log keeps what the server's projections store of themselves (see
:class:`ProjectionRow`): a checkpoint per projection and rows it pages from storage instead of
holding in memory. Those are derived from the events and may always be dropped and rebuilt.

Readers either read (``read``, ``read_all``) or subscribe (``subscribe``, ``subscribe_all``):
a subscription yields every event after the given version or position, in order, then every
event appended later, with no gap and no duplicate, until the consumer stops or the log closes
(:class:`LogClosed`). Subscriptions are implemented here once, on top of a backend's ``read``
methods and an :class:`AppendNotifier` that the backend feeds with what it committed.

Example (with the SQLite backend)::

    log = SqliteEventLog("tables.db")
    await log.open()
    stored = await log.append("table-1", 0, [b"created", b"seated"])
    assert [event.version for event in stored] == [1, 2]
    async with contextlib.aclosing(log.subscribe("table-1")) as events:
        async for event in events:
            ...
    await log.close()
"""

from __future__ import annotations

import abc
import asyncio
import bisect
import contextlib
import functools
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Self

__all__ = [
    "AppendNotifier",
    "ClaimTaken",
    "EventLog",
    "LogClosed",
    "LogDamaged",
    "LogUnavailable",
    "ProjectionCheckpoint",
    "ProjectionRow",
    "StoredEvent",
    "VersionConflict",
    "WriteHealth",
]


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One event as the log stored it."""

    stream_id: str
    version: int  # 1-based position within its stream
    position: int  # global order across all streams, strictly increasing
    recorded_at: float  # unix seconds when stored
    data: bytes


@dataclass(frozen=True, slots=True)
class ProjectionRow:
    """One item a projection keeps in storage rather than in memory (the lobby's finished
    tables). Listed highest ``sort_key`` first (then highest ``key``); a row is replaced only
    by one whose ``version`` is at least as high, so replicas writing the same row agree."""

    key: str
    sort_key: int
    #: Shown in public listings (a private table's row is not).
    listed: bool
    version: int
    data: bytes


@dataclass(frozen=True, slots=True)
class ProjectionCheckpoint:
    """Where a projection stood: the global position it had folded up to, and its state there
    (what it keeps in memory; its rows are stored beside)."""

    position: int
    data: bytes


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


class WriteHealth:
    """Whether the log's writes work, and who to tell when that changes.

    A backend calls :meth:`failed` when storage refuses a write and :meth:`worked` when a
    write succeeds; each listener is called (on the event loop) with the reason writes fail,
    or None once they work again, only when that changes.
    """

    def __init__(self) -> None:
        self.failure: str | None = None
        self.listeners: list[Callable[[str | None], None]] = []

    def failed(self, reason: str) -> None:
        changed = self.failure is None
        self.failure = reason
        if changed:
            self._tell()

    def worked(self) -> None:
        if self.failure is not None:
            self.failure = None
            self._tell()

    def _tell(self) -> None:
        for listener in self.listeners:
            listener(self.failure)


class EventLog(abc.ABC):
    """An append-only store of byte events in versioned streams, with live subscriptions.

    A backend implements ``open``, ``close``, ``append``, ``read``, ``stream_version`` and
    ``read_all``, and reports every event it committed to ``self.notifier`` (in commit order);
    the subscriptions are shared. All coroutines must run on the event loop that opened the log.
    """

    #: How many events a subscription reads from storage at a time while it catches up.
    subscription_batch_size: int = 500
    #: True when no process but this one can append (the embedded file, locked on open): a
    #: cache of a stream is then exact, and need not be checked against storage.
    sole_writer: bool = False
    #: Seconds ``subscribe_all`` may lag behind other processes' commits, so that a backend may
    #: gather the work of following them (a follower that reads in bursts sets it); ``hurry``
    #: cuts a wait short when someone waits for a position.
    lag_allowed: float = 0.0

    def __init__(self) -> None:
        self.notifier = AppendNotifier()
        self.write_health = WriteHealth()

    def hurry(self) -> None:  # noqa: B027 (a backend that gathers nothing needs no override)
        """Someone waits for ``subscribe_all`` to reach a position: stop gathering now."""

    # -- lifecycle ----------------------------------------------------------------------------

    @abc.abstractmethod
    async def open(self) -> None:
        """Create or migrate the schema and start the backend's workers."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Finish queued appends, stop the workers and end all subscriptions. Idempotent."""

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- writing and reading ------------------------------------------------------------------

    @abc.abstractmethod
    async def append(
        self,
        stream_id: str,
        expected_version: int,
        events: Sequence[bytes],
        *,
        claim: tuple[str, bytes] | None = None,
    ) -> list[StoredEvent]:
        """Append ``events`` atomically iff the stream is at ``expected_version`` (0: new stream),
        and with ``claim`` (key, data) claim that key of the stream in the same transaction.

        Returns the stored events, once they are durable per the backend's durability setting.
        Raises :class:`VersionConflict` (nothing written) if the stream is at another version,
        :class:`ClaimTaken` (nothing written) if the key was claimed before.
        """

    def submit(
        self,
        stream_id: str,
        expected_version: int,
        events: Sequence[bytes],
        then: Callable[[list[StoredEvent] | BaseException], None],
        *,
        claim: tuple[str, bytes] | None = None,
    ) -> None:
        """:meth:`append`, with its outcome (the stored events, or the exception it raised)
        handed to ``then`` on the event loop instead of to an awaiting caller: whoever asked
        may be cancelled meanwhile, and the outcome still reaches ``then`` (the table store
        folds what was committed that way, however its caller fared). A backend whose appends
        end in a callback of its own calls ``then`` from there, with no task per append."""
        task = asyncio.ensure_future(self.append(stream_id, expected_version, events, claim=claim))
        task.add_done_callback(functools.partial(_hand_over, then))

    @abc.abstractmethod
    async def claim(self, stream_id: str, key: str, data: bytes) -> bytes | None:
        """Store ``data`` under the stream's ``key`` unless the key was claimed before: None
        when this claim was stored (durably), else the data the first claim stored."""

    @abc.abstractmethod
    async def read_claim(self, stream_id: str, key: str) -> bytes | None:
        """The data of the stream's claim ``key``; None when the key has no claim."""

    @abc.abstractmethod
    async def read(
        self, stream_id: str, after_version: int = 0, limit: int | None = None
    ) -> list[StoredEvent]:
        """The stream's events with a version above ``after_version``, oldest first."""

    @abc.abstractmethod
    async def stream_version(self, stream_id: str) -> int:
        """The stream's current version: the version of its last event, 0 if it has none."""

    @abc.abstractmethod
    async def read_all(self, after_position: int = 0, limit: int = 1000) -> list[StoredEvent]:
        """Events of all streams with a position above ``after_position``, by position."""

    # -- what projections store ---------------------------------------------------------------

    @abc.abstractmethod
    async def save_projection(
        self,
        projection: str,
        rows: Sequence[ProjectionRow],
        checkpoint: ProjectionCheckpoint | None = None,
    ) -> None:
        """Store ``rows`` (each replacing its key's row unless that one has a higher version)
        and, when given, the checkpoint (unless the stored one is further on), atomically."""

    @abc.abstractmethod
    async def load_projection(self, projection: str) -> ProjectionCheckpoint | None:
        """The projection's checkpoint, None when it has none."""

    @abc.abstractmethod
    async def projection_row(self, projection: str, key: str) -> ProjectionRow | None:
        """The projection's row under ``key``, None when there is none."""

    @abc.abstractmethod
    async def projection_rows(
        self,
        projection: str,
        *,
        listed_only: bool,
        offset: int,
        limit: int,
        excluded: Sequence[str] = (),
    ) -> list[ProjectionRow]:
        """The projection's rows (only the listed ones, when ``listed_only``; none whose key is
        ``excluded``), highest ``sort_key`` first, then highest ``key``: ``limit`` of them from
        ``offset``."""

    @abc.abstractmethod
    async def drop_projection(self, projection: str) -> None:
        """Remove the projection's checkpoint and rows (it is rebuilt from the events)."""

    # -- subscriptions ------------------------------------------------------------------------

    async def subscribe(
        self, stream_id: str, after_version: int = 0
    ) -> AsyncGenerator[StoredEvent, None]:
        """Every event of the stream after ``after_version``, in order, then live ones, forever.

        Raises :class:`LogClosed` when the log closes. Close the iterator when done (for
        example with ``contextlib.aclosing``) so that the log stops tracking it at once.
        """
        _check_stream_id(stream_id)
        _check_not_negative("after_version", after_version)
        notifier = self.notifier
        # Watch before the first read: everything committed from now on is published to us,
        # everything committed before is visible to the read, so nothing falls in between.
        notifier.watch_stream(stream_id)
        try:
            cursor = after_version
            while True:
                batch = notifier.recent_in_stream(stream_id, cursor, self.subscription_batch_size)
                if batch is None:
                    batch = await self.read(stream_id, cursor, self.subscription_batch_size)
                if not batch:
                    await notifier.wait_for_stream(stream_id, cursor)
                    continue
                for event in batch:
                    if event.version <= cursor:  # a read may overlap what was published
                        continue
                    if event.version != cursor + 1:
                        raise RuntimeError(
                            f"stream {stream_id!r} jumps from version {cursor} to {event.version}"
                        )
                    yield event
                    cursor = event.version
        finally:
            notifier.unwatch_stream(stream_id)

    async def subscribe_all(
        self,
        after_position: int = 0,
        *,
        linger: float = 0.0,
        hurry: asyncio.Event | None = None,
    ) -> AsyncGenerator[StoredEvent, None]:
        """Every event of every stream after ``after_position``, by position, then live ones.

        ``linger``: once caught up and woken by a new event, wait up to that many seconds
        (unless ``hurry`` is set, which it then clears) so that one read takes everything
        committed meanwhile: fewer, larger reads for a follower that may lag that long.
        Raises :class:`LogClosed` when the log closes.
        """
        _check_not_negative("after_position", after_position)
        notifier = self.notifier
        cursor = after_position
        while True:
            batch = notifier.recent_in_all(cursor, self.subscription_batch_size)
            if batch is None:
                notifier.check_open()
                batch = await self.read_all(cursor, self.subscription_batch_size)
            if not batch:
                await notifier.wait_for_position(cursor)
                if linger > 0:
                    if hurry is None:
                        await asyncio.sleep(linger)
                    elif not hurry.is_set():
                        with contextlib.suppress(TimeoutError):
                            async with asyncio.timeout(linger):
                                await hurry.wait()
                    if hurry is not None:
                        hurry.clear()
                continue
            for event in batch:
                if event.position > cursor:
                    yield event
                    cursor = event.position


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


def _hand_over(
    then: Callable[[list[StoredEvent] | BaseException], None],
    task: asyncio.Task[list[StoredEvent]],
) -> None:
    if task.cancelled():
        then(asyncio.CancelledError())
        return
    error = task.exception()
    then(task.result() if error is None else error)


#: Where an append's outcome goes: the awaiting caller's future, or submit()'s callback.
AppendAnswer = (
    asyncio.Future[list[StoredEvent]] | Callable[[list[StoredEvent] | BaseException], None]
)


def _answer_append(to: AppendAnswer, outcome: list[StoredEvent] | BaseException) -> None:
    """Hand an append's outcome to whoever asked: a callback (one failing must not cost the
    other appends of its batch their answers) or a future (unless its caller was cancelled:
    the append stands all the same)."""
    if not isinstance(to, asyncio.Future):
        try:
            to(outcome)
        except Exception as error:
            asyncio.get_running_loop().call_exception_handler(
                {"message": "an append's callback failed", "exception": error}
            )
    elif to.done():
        return
    elif isinstance(outcome, BaseException):
        to.set_exception(outcome)
    else:
        to.set_result(outcome)


def _wake(watched: _WatchedStream) -> None:
    wakeup, watched.wakeup = watched.wakeup, asyncio.Event()
    wakeup.set()


def _position_of(event: StoredEvent) -> int:
    return event.position


def _check_stream_id(stream_id: str) -> None:
    if not isinstance(stream_id, str) or not stream_id:
        raise ValueError(f"a stream id must be a non-empty string, not {stream_id!r}")


def _check_not_negative(name: str, value: int) -> None:
    if value < 0:
        raise ValueError(f"{name} must be 0 or more, not {value}")


def _append_payloads(stream_id: str, expected_version: int, events: Sequence[bytes]) -> list[bytes]:
    """An append's events as bytes, once its arguments are checked (ValueError if not)."""
    _check_stream_id(stream_id)
    _check_not_negative("expected_version", expected_version)
    payloads = [bytes(event) for event in events]
    if not payloads:
        raise ValueError("an append needs at least one event")
    return payloads
