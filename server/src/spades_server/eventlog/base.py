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
import contextlib
import functools
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from typing import Self

from spades_server.eventlog.errors import (
    ClaimTaken,
    EventLogError,
    LogClosed,
    LogDamaged,
    LogIncompatible,
    LogInUse,
    LogUnavailable,
    LogUnreachable,
    LogUrlInvalid,
    VersionConflict,
)
from spades_server.eventlog.inspection import LogInspection
from spades_server.eventlog.notifier import AppendNotifier
from spades_server.eventlog.records import ProjectionCheckpoint, ProjectionRow, StoredEvent

__all__ = [
    "AppendNotifier",
    "ClaimTaken",
    "EventLog",
    "EventLogError",
    "LogClosed",
    "LogDamaged",
    "LogInUse",
    "LogIncompatible",
    "LogUnavailable",
    "LogUnreachable",
    "LogUrlInvalid",
    "ProjectionCheckpoint",
    "ProjectionRow",
    "StoredEvent",
    "VersionConflict",
    "WriteHealth",
]


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
    #: True when the storage is exactly as this server left it at a clean close after it was
    #: checked (``verified``): its storage checks may then be skipped (the SQLite file's clean
    #: stamp; always False for a backend that keeps none).
    unchanged_since_clean_close: bool = False
    #: Set by whoever checked the opened log and found it whole; a backend that can may then
    #: remember it at its clean close (the SQLite log stamps its file; others ignore it).
    verified: bool = False
    #: The time an append is recorded at (unix seconds), or None for the backend's own: the
    #: machine's for SQLite, the database's (one clock for every replica) for PostgreSQL. A
    #: server given a clock of its own (``ops.clocks``) sets it, so that a test's clock also
    #: dates the events the turn clock's and the sweepers' deadlines follow from.
    recorded_time: Callable[[], float] | None = None
    #: How the log waits before it tries storage again (a subscription's read, PostgreSQL's
    #: reconnections and its periodic re-read, a repository's follower after a failed read):
    #: None for ``asyncio.sleep``; a server given a clock of its own sets its ``sleep``, so that
    #: a test's clock also drives the log's retries.
    sleep: Callable[[float], Awaitable[None]] | None = None

    def __init__(self) -> None:
        self.notifier = AppendNotifier()
        self.write_health = WriteHealth()

    @property
    def where(self) -> str:
        """The log's storage as an operator names it in a message (a file's path)."""
        return "the event log"

    def inspection(self) -> LogInspection | None:
        """A read-only look at this log's storage for the integrity checks (see
        ``eventlog.inspection``), or None when the backend offers none (its storage guards
        itself). Reads nothing until asked: make it anywhere, ask it in a worker thread."""
        return None

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

    async def save_projection(
        self,
        projection: str,
        rows: Sequence[ProjectionRow],
        checkpoint: ProjectionCheckpoint | None = None,
    ) -> None:
        """Store ``rows`` (each replacing its key's row unless that one has a higher version)
        and, when given, the checkpoint (unless the stored one is further on), atomically."""
        await self._write_projection(projection, list(rows), checkpoint, drop=False)

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

    async def drop_projection(self, projection: str) -> None:
        """Remove the projection's checkpoint and rows (it is rebuilt from the events)."""
        await self._write_projection(projection, [], None, drop=True)

    async def delete_projection_rows(self, projection: str, rows: Sequence[ProjectionRow]) -> None:
        """Remove each of ``rows`` (by key) unless its key's row was written again since: only
        a stored row still at the given ``version`` goes, atomically."""
        await self._write_projection(projection, [], None, drop=False, deleted=list(rows))

    @abc.abstractmethod
    async def _write_projection(
        self,
        projection: str,
        rows: list[ProjectionRow],
        checkpoint: ProjectionCheckpoint | None,
        *,
        drop: bool,
        deleted: Sequence[ProjectionRow] = (),
    ) -> None:
        """One atomic write of a projection: its rows and checkpoint, or (``drop``) its
        removal, or the removal of the ``deleted`` rows still at their versions; each backend's
        own transaction."""

    async def pause(self, seconds: float) -> None:
        """Wait ``seconds`` before storage is tried again, on :attr:`sleep`."""
        await (asyncio.sleep if self.sleep is None else self.sleep)(seconds)

    async def wait_at_most(self, event: asyncio.Event, seconds: float) -> bool:
        """Wait until ``event`` is set, but at most ``seconds`` on :attr:`sleep`; whether it was
        set (a poll that a wake-up may bring forward)."""
        if self.sleep is None:
            try:
                await asyncio.wait_for(event.wait(), seconds)
            except TimeoutError:
                return False
            return True
        # The clock's sleep in a task of its own, named as this one: a test's clock tells its
        # sleepers apart by their tasks' names.
        sleep = self.sleep

        async def pausing() -> None:
            await sleep(seconds)

        current = asyncio.current_task()
        name = current.get_name() if current is not None else None
        woken = asyncio.ensure_future(event.wait())
        paused = asyncio.get_running_loop().create_task(pausing(), name=name)
        try:
            await asyncio.wait((woken, paused), return_when=asyncio.FIRST_COMPLETED)
        finally:
            woken.cancel()
            paused.cancel()
        return event.is_set()

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
        Raises :class:`LogClosed` when the log closes. A log that cannot be read for a while
        (:class:`LogUnavailable`: PostgreSQL restarting, the way to it cut) ends nothing: the
        subscription reads again every :data:`SUBSCRIPTION_RETRY` seconds and goes on from its
        cursor, so a follower (the lobby) resumes by itself once the log answers.
        """
        _check_not_negative("after_position", after_position)
        notifier = self.notifier
        cursor = after_position
        while True:
            batch = notifier.recent_in_all(cursor, self.subscription_batch_size)
            if batch is None:
                notifier.check_open()
                try:
                    batch = await self.read_all(cursor, self.subscription_batch_size)
                except LogUnavailable:
                    await self.pause(SUBSCRIPTION_RETRY)
                    continue
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


#: Seconds a subscription waits before it reads a log that could not be read again.
SUBSCRIPTION_RETRY = 0.25


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
