"""One repository for the aggregates kept in streams of the log: load, decide, append, retry.

Every aggregate but the table (accounts, challenges, tournaments, rating pools) is handled the
same way, after the eventsourcing library's application repository:

- **load**: the cached aggregate, caught up from the log (the rows after its version, each
  decoded and folded); with one writer (the embedded log) the cache is the log, so nothing is
  read. An aggregate whose stream is empty is NOT_FOUND, in the aggregate's own words;
- **execute**: under a per-stream lock, load, decide with the aggregate's pure function, append
  with the expected version, and fold what was stored; a version conflict (another replica moved
  first) drops the cached copy and decides again, at most ``decide_attempts`` times in all
  (:data:`MAX_DECIDE_ATTEMPTS` unless given), then refuses with the aggregate's ``*_CONTENDED``
  reason code;
- **observe**: a row another replica appended (the log's follower hands it over) is folded
  into the cached aggregate when it is the next one, else the copy is dropped and read again.

What differs between aggregates is data, given once as an :class:`AggregateKind`: the stream
prefix, how an empty aggregate is made, how a row is folded, how a decision becomes rows, and
the words of its refusals. A new aggregate is its state, fold and decisions (``domain/``) plus
one kind. The table's store (:mod:`spades_server.store.table_store`) is the one exception: its
action path is the hot one, and it settles a command in the log's own commit callback.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from spades.reasons import Reason
from spades_server.domain import errors
from spades_server.eventlog.base import EventLog, LogUnavailable, StoredEvent, VersionConflict

#: How often a decision is tried again after version conflicts before it is refused: enough
#: for any real contention between replicas, few enough that a livelock ends.
MAX_DECIDE_ATTEMPTS = 20


class Aggregate(Protocol):
    """What the repository needs of an aggregate: the version of the last row folded."""

    @property
    def version(self) -> int: ...


A = TypeVar("A", bound=Aggregate)
D = TypeVar("D")


@dataclass(frozen=True)
class Contended:
    """An aggregate's refusal when it kept changing under a request (ABORTED, retry)."""

    reason_code: Reason
    reason: str


@dataclass(frozen=True)
class AggregateKind(Generic[A, D]):
    """One kind of aggregate, as the repository handles it (``D`` is what its decisions return)."""

    #: The streams' common prefix (:mod:`spades_server.store.stream_kinds`).
    prefix: str
    #: The aggregate before its first row.
    new: Callable[[str], A]
    #: Fold one stored row (decoded here) into the aggregate; a row already folded is ignored.
    fold: Callable[[A, StoredEvent], None]
    #: The rows to append for a decision (none: nothing to append).
    rows: Callable[[D], Sequence[bytes]]
    #: The refusal for an id with no stream (or one no stream may have).
    not_found: Callable[[str], errors.RequestError]
    #: The refusal after ``decide_attempts`` conflicts (its ``*_CONTENDED`` code).
    contended: Contended
    #: Checks an id before the log is read: a refusal for one that cannot name a stream.
    check_id: Callable[[str], None] | None = None
    #: Whether an aggregate with no row exists all the same (a rating pool does).
    exists_empty: bool = False


def log_unavailable(error: LogUnavailable) -> errors.RequestError:
    """UNAVAILABLE (LOG_UNAVAILABLE): the log cannot be written or read now."""
    return errors.refuse(Reason.LOG_UNAVAILABLE, str(error))


class Repository(Generic[A, D]):
    """The aggregates of one kind, cached, loaded from and appended to ``log``."""

    def __init__(
        self,
        log: EventLog,
        kind: AggregateKind[A, D],
        decide_attempts: int = MAX_DECIDE_ATTEMPTS,
    ) -> None:
        self.log = log
        self.kind = kind
        #: How often a decision is tried on conflicts before it is refused (``*_CONTENDED``).
        self.decide_attempts = decide_attempts
        self._cache: dict[str, A] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    def stream_of(self, aggregate_id: str) -> str:
        return self.kind.prefix + aggregate_id

    async def load(self, aggregate_id: str) -> A:
        """The aggregate as of the log's latest version; its NOT_FOUND if it has no stream."""
        if self.kind.check_id is not None:
            self.kind.check_id(aggregate_id)
        aggregate = self._cache.get(aggregate_id)
        if aggregate is not None and self.log.sole_writer:
            return aggregate
        aggregate = aggregate or self.kind.new(aggregate_id)
        stored = await self._read(aggregate_id, aggregate.version)
        # A concurrent load may have cached a copy while this one read: fold into that one.
        aggregate = self._cache.get(aggregate_id) or aggregate
        self._fold(aggregate, stored)
        if aggregate.version == 0 and not self.kind.exists_empty:
            raise self.kind.not_found(aggregate_id)
        self._cache[aggregate_id] = aggregate
        return aggregate

    async def execute(self, aggregate_id: str, decide: Callable[[A], D | None]) -> A:
        """Decide on the latest aggregate and append with the expected version, deciding again
        on a conflict; the aggregate as it is after."""
        aggregate, _ = await self.execute_stored(aggregate_id, decide)
        return aggregate

    async def execute_stored(
        self, aggregate_id: str, decide: Callable[[A], D | None]
    ) -> tuple[A, list[StoredEvent]]:
        """:meth:`execute`, also returning what was stored (nothing when the decision was none)."""
        lock = self._locks.setdefault(aggregate_id, asyncio.Lock())
        async with lock:
            for _ in range(self.decide_attempts):
                aggregate = await self.load(aggregate_id)
                decided = decide(aggregate)
                rows = self.kind.rows(decided) if decided is not None else ()
                if not rows:
                    return aggregate, []
                try:
                    stored = await self._append(aggregate_id, aggregate.version, rows)
                except VersionConflict:
                    self._cache.pop(aggregate_id, None)  # another replica moved first: reload
                    continue
                self._fold(aggregate, stored)
                return aggregate, stored
        raise errors.refuse(self.kind.contended.reason_code, self.kind.contended.reason)

    async def start(self, aggregate_id: str, decided: D) -> A:
        """Append an aggregate's first rows (expected version 0) and cache it; raises
        :class:`VersionConflict` when its stream exists (made by a retry, or taken)."""
        stored = await self._append(aggregate_id, 0, self.kind.rows(decided))
        aggregate = self._cache.get(aggregate_id) or self.kind.new(aggregate_id)
        self._fold(aggregate, stored)
        self._cache[aggregate_id] = aggregate
        return aggregate

    def observe(self, stored: StoredEvent) -> None:
        """Fold a row another replica appended into the cached aggregate (or forget it)."""
        if not stored.stream_id.startswith(self.kind.prefix):
            return
        aggregate_id = stored.stream_id.removeprefix(self.kind.prefix)
        aggregate = self._cache.get(aggregate_id)
        if aggregate is None or stored.version <= aggregate.version:
            return
        if stored.version == aggregate.version + 1:
            self.kind.fold(aggregate, stored)
        else:
            del self._cache[aggregate_id]  # rows were missed: the next load reads them all

    def cached(self) -> list[A]:
        return list(self._cache.values())

    def cached_one(self, aggregate_id: str) -> A | None:
        return self._cache.get(aggregate_id)

    def forget(self, aggregate_id: str) -> None:
        """Drop an aggregate from the cache (the next load reads it from the log)."""
        self._cache.pop(aggregate_id, None)
        lock = self._locks.get(aggregate_id)
        if lock is not None and not lock.locked():
            del self._locks[aggregate_id]

    def _fold(self, aggregate: A, stored: Sequence[StoredEvent]) -> None:
        for row in stored:
            self.kind.fold(aggregate, row)

    async def _read(self, aggregate_id: str, after: int) -> list[StoredEvent]:
        try:
            return await self.log.read(self.stream_of(aggregate_id), after_version=after)
        except LogUnavailable as error:
            raise log_unavailable(error) from None

    async def _append(
        self, aggregate_id: str, expected: int, rows: Sequence[bytes]
    ) -> list[StoredEvent]:
        try:
            return await self.log.append(self.stream_of(aggregate_id), expected, list(rows))
        except LogUnavailable as error:
            raise log_unavailable(error) from None
