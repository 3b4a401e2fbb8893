"""The one repository for the aggregates kept in streams of the log: load, decide, append, retry.

Every aggregate (tables, accounts, challenges, tournaments, rating pools) is handled the same
way, after the eventsourcing library's application repository:

- **load**: the cached aggregate (:mod:`~spades_server.store.cache`, bounded, with pins), caught
  up from the log (the rows after its version, each decoded and folded). With one writer (the
  embedded log) the cache is the log, so nothing is read; on a log others append to, an
  aggregate a stream holds is followed (:mod:`~spades_server.store.following`) and read only
  when another replica was heard to move it. An aggregate loaded cold may be checked whole
  first (its kind's ``history``). One whose stream is empty is NOT_FOUND, in its own words;
- **execute**: one command of an aggregate at a time (its turn: :mod:`~spades_server.store.turns`),
  load, decide with the aggregate's pure function, append with the expected version (and the
  decision's claim, if its kind makes one), and settle what was stored in the log's own commit
  callback: folded into the aggregate however the caller fared (a client vanishing
  mid-append), then handed to the caller's ``on_stored``, then to the change hub
  (:mod:`~spades_server.store.hub`: listeners, then waiters), and the turn let go. A version
  conflict (another replica moved first) reads the rows missed and decides again, at most
  ``decide_attempts`` times in all (:data:`MAX_DECIDE_ATTEMPTS` unless given), then refuses
  with the kind's ``*_CONTENDED`` reason code. A refusal or a no-op decided on a cache trusted
  without a read is decided again after one, so no refusal rests on a cache that was behind;
- **observe**: a row another replica appended (a reader of the whole log hands it over) is
  folded into the cached aggregate when it is the next one, else the copy is read again.

What differs between aggregates is data, given once as an :class:`AggregateKind`: the stream
prefix, how an empty aggregate is made, how a row is decoded and folded, how a decision
becomes rows and is settled, its claims, and the words of its refusals. A new aggregate is its
state, fold and decisions (``domain/``) plus one kind.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from spades.reasons import Reason
from spades_server.domain import errors
from spades_server.eventlog.base import (
    ClaimTaken,
    EventLog,
    LogUnavailable,
    StoredEvent,
    VersionConflict,
)
from spades_server.ops import metrics
from spades_server.store.cache import AggregateCache
from spades_server.store.following import Followers
from spades_server.store.hub import ChangeHub
from spades_server.store.turns import Turn

#: How often a decision is tried again after version conflicts before it is refused: enough
#: for any real contention between replicas, few enough that a livelock ends.
MAX_DECIDE_ATTEMPTS = 20


class Aggregate(Protocol):
    """What the repository needs of an aggregate: the version of the last row folded."""

    @property
    def version(self) -> int: ...


A = TypeVar("A", bound=Aggregate)
D = TypeVar("D")
E = TypeVar("E")


@dataclass(frozen=True)
class Contended:
    """An aggregate's refusal when it kept changing under a request (ABORTED, retry)."""

    reason_code: Reason
    reason: str


@dataclass(frozen=True)
class Claims(Generic[D]):
    """A kind whose decisions claim a key of their stream, write-once and in the same
    transaction as their rows: the first result of a request's id."""

    #: The claim (key, data) a decision's rows make, or None.
    of: Callable[[D], tuple[str, bytes] | None]
    #: The answer when the key was claimed first by another: the refusal kept then (raised),
    #: or None for an acceptance (the repository reads, and deciding again finds it).
    taken: Callable[[bytes], errors.RequestError | None]


def as_stored(row: StoredEvent) -> StoredEvent:
    """The ``decode`` of a kind whose ``fold`` takes the stored row itself."""
    return row


@dataclass(frozen=True)
class AggregateKind(Generic[A, D, E]):
    """One kind of aggregate, as the repository handles it. ``D`` is what its decisions
    return; ``E`` what one stored row is folded as (the row itself: :func:`as_stored`)."""

    #: The streams' common prefix (:mod:`spades_server.store.stream_kinds`).
    prefix: str
    #: The aggregate before its first row.
    new: Callable[[str], A]
    #: One stored row as the aggregate folds it.
    decode: Callable[[StoredEvent], E]
    #: Fold one row into the aggregate; a row already folded is ignored.
    fold: Callable[[A, E], None]
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
    #: Whether a stream is one of this kind's (default: it starts with ``prefix``).
    owns: Callable[[str], bool] | None = None
    #: Take what a decision stored into the aggregate, returning its rows as folded (default:
    #: decode and fold each); the table adopts the state its decision reached instead.
    settle: Callable[[A, D, Sequence[StoredEvent]], list[E]] | None = None
    #: A whole history loaded cold, checked and decoded (a refusal when it is damaged).
    history: Callable[[str, Sequence[StoredEvent]], Awaitable[list[E]]] | None = None
    #: The claims its decisions make, if any.
    claims: Claims[D] | None = None
    #: What else a decision may raise to refuse, as the refusal (None: not a refusal).
    refusal: Callable[[Exception], errors.RequestError | None] | None = None
    #: A read the log cannot serve now is refused as LOG_UNAVAILABLE (True), or raised as the
    #: log's ``LogUnavailable`` for the caller to tell apart (the table's processes do).
    refuse_unreadable: bool = True
    #: Its appends count in the log's append metrics (the table's: alerts watch tables move).
    metered: bool = False


def log_unavailable(error: LogUnavailable) -> errors.RequestError:
    """UNAVAILABLE (LOG_UNAVAILABLE): the log cannot be written or read now."""
    return errors.refuse(Reason.LOG_UNAVAILABLE, str(error))


class Repository(Generic[A, D, E]):
    """The aggregates of one kind, cached (``cache_size`` besides the pinned ones; None: all),
    loaded from and appended to ``log``."""

    def __init__(
        self,
        log: EventLog,
        kind: AggregateKind[A, D, E],
        decide_attempts: int = MAX_DECIDE_ATTEMPTS,
        cache_size: int | None = None,
    ) -> None:
        self.log = log
        self.kind = kind
        #: How often a decision is tried on conflicts before it is refused (``*_CONTENDED``).
        self.decide_attempts = decide_attempts
        self._cache = AggregateCache[A](cache_size)
        self._turns: dict[str, Turn] = {}
        self._followers = Followers(log, self.stream_of, self._refresh_cached, self.cached_version)
        self._refreshing: set[asyncio.Task[None]] = set()
        #: Reads of the log a command skipped because the followed cache was current.
        self.reads_skipped = 0
        self.hub = ChangeHub[A]()
        # The hub's calls, as the repository's own (bound once: feeds call them per event).
        #: Called with an aggregate each time new rows were folded into it.
        self.listeners = self.hub.listeners
        self.poke = self.hub.poke
        self.changed = self.hub.changed
        self.wake_all = self.hub.wake_all
        self._owns = kind.owns or (lambda stream_id: stream_id.startswith(kind.prefix))

    @property
    def cache_size(self) -> int | None:
        return self._cache.size

    def stream_of(self, aggregate_id: str) -> str:
        return self.kind.prefix + aggregate_id

    # -- loading ------------------------------------------------------------------------------

    async def load(self, aggregate_id: str) -> A:
        """The aggregate as of the log's latest version; its NOT_FOUND if it has no stream."""
        aggregate, _ = await self._load(aggregate_id)
        return aggregate

    def _current(self, aggregate_id: str) -> A | None:
        """The cached aggregate when it needs no read: on the sole writer's log always; on a
        shared log when it is followed and has every version others were heard to commit."""
        aggregate = self._cache.get(aggregate_id)
        if aggregate is None:
            return None
        if self.log.sole_writer:
            return aggregate  # every append to this log went through this store and was folded
        if self._followers.current(aggregate_id, aggregate.version):
            return aggregate
        return None

    async def _load(self, aggregate_id: str) -> tuple[A, bool]:
        """The aggregate, and whether it came from the cache without reading the log."""
        current = self._served(aggregate_id)
        if current is not None:
            return current, True
        return await self._read_in(aggregate_id), False

    def _served(self, aggregate_id: str) -> A | None:
        """The aggregate when the cache serves it without a read (:meth:`_current`), as the
        most recently used; its id checked first."""
        if self.kind.check_id is not None:
            self.kind.check_id(aggregate_id)
        current = self._current(aggregate_id)
        if current is not None:
            self._cache.move_to_end(aggregate_id)
        return current

    async def _read_in(self, aggregate_id: str) -> A:
        """The aggregate, its rows past the cached copy (if any) read from the log."""
        kind = self.kind
        before = self._cache.get(aggregate_id)
        aggregate = before or kind.new(aggregate_id)
        stored = await self._read(aggregate_id, aggregate.version)
        # An aggregate loaded cold may be checked before any of it is served (its rows whole).
        if before is None and kind.history is not None:
            entries = await kind.history(aggregate_id, stored)
        else:
            entries = [kind.decode(row) for row in stored]
        # Another load may have cached this aggregate meanwhile: keep one object per id, or
        # commands and streams would fold into different copies.
        aggregate = self._cache.get(aggregate_id) or aggregate
        for entry in entries:
            kind.fold(aggregate, entry)  # folding skips what the aggregate already has
        if aggregate.version == 0 and not kind.exists_empty:
            raise kind.not_found(aggregate_id)
        self._keep(aggregate_id, aggregate)
        if stored:
            self._changed(aggregate_id, aggregate)
        return aggregate

    async def _refresh(self, aggregate_id: str, aggregate: A) -> None:
        """Fold whatever the log has past the cached aggregate (after a conflict: always read)."""
        version = aggregate.version
        for row in await self._read(aggregate_id, version):
            self.kind.fold(aggregate, self.kind.decode(row))
        if aggregate.version != version:
            self._changed(aggregate_id, aggregate)

    async def _refresh_cached(self, aggregate_id: str) -> None:
        await self._refresh(aggregate_id, self._cache[aggregate_id])

    async def _moved_on(self, aggregate_id: str, aggregate: A) -> bool:
        """Read the log past the (trusted) cached aggregate: whether it had moved on."""
        version = aggregate.version
        await self._refresh(aggregate_id, aggregate)
        return aggregate.version != version

    @contextlib.asynccontextmanager
    async def holding(self, aggregate_id: str) -> AsyncIterator[A]:
        """Load the aggregate and keep it cached (pinned) until the block ends: a stream's
        view must stay the one object commands fold into. On a log others append to, it is
        followed meanwhile."""
        self._cache.pin(aggregate_id)
        try:
            aggregate = await self.load(aggregate_id)
            if not self.log.sole_writer:
                self._followers.follow(aggregate_id)
            yield aggregate
        finally:
            if self._cache.unpin(aggregate_id):
                self._followers.stop(aggregate_id)
                self._evict()

    # -- the cache ----------------------------------------------------------------------------

    def _keep(self, aggregate_id: str, aggregate: A) -> None:
        """Cache the aggregate as the most recently used, and evict past the bound."""
        self._cache.keep(aggregate_id, aggregate)
        self._evict()

    def _evict(self) -> None:
        """Drop the least recently used aggregates that no stream or command holds."""
        cache = self._cache
        if cache.size is not None and len(cache) > cache.size:  # (cache.over(), inline: hot)
            for aggregate_id in cache.evict(self._turn_in_use):
                self._turns.pop(aggregate_id, None)
                self.hub.drop(aggregate_id)

    def _turn_in_use(self, aggregate_id: str) -> bool:
        turn = self._turns.get(aggregate_id)
        return turn is not None and turn.in_use()

    def _turn(self, aggregate_id: str) -> Turn:
        turn = self._turns.get(aggregate_id)
        if turn is None:
            turn = self._turns[aggregate_id] = Turn()
        return turn

    def cached_one(self, aggregate_id: str) -> A | None:
        return self._cache.get(aggregate_id)

    def cached_version(self, aggregate_id: str) -> int:
        """The cached aggregate's version; -1 when it is not cached (never loaded, or evicted)."""
        aggregate = self._cache.get(aggregate_id)
        return aggregate.version if aggregate is not None else -1

    def following(self, aggregate_id: str) -> bool:
        """Whether the aggregate is followed here (held, on a log others append to, watched)."""
        return self._followers.following(aggregate_id)

    def forget(self, aggregate_id: str) -> None:
        """Drop an aggregate from the cache (the next load reads it from the log), unless a
        stream holds it."""
        if self._cache.pinned(aggregate_id):
            return
        self._cache.pop(aggregate_id, None)
        if not self._turn_in_use(aggregate_id):
            self._turns.pop(aggregate_id, None)

    # -- commands -----------------------------------------------------------------------------

    async def execute_stored(
        self,
        aggregate_id: str,
        decide: Callable[[A], D | None],
        on_stored: Callable[[list[E]], None] | None = None,
    ) -> tuple[A, list[E]]:
        """Run a command: decide on the latest aggregate, append, decide again on a conflict;
        the aggregate as it is after, and the rows it stored as folded (none: nothing to do).

        ``decide`` raises :class:`errors.RequestError` (or what the kind's ``refusal`` turns
        into one) to refuse, and nothing is written; it may return nothing to append. What an
        append stored is settled into the aggregate when the log says it is stored, whether or
        not the caller still waits. ``on_stored`` is called with the stored rows right after
        they are settled and before the change hub hears of it (an action's result so goes
        out with the events it caused)."""
        try:
            return await self._decide_and_append(aggregate_id, decide, on_stored)
        finally:
            if aggregate_id not in self._cache and not self._turn_in_use(aggregate_id):
                self._turns.pop(aggregate_id, None)  # none (or evicted): keep no turn for it
            self._evict()  # it was held while the command ran: it may go now

    async def _decide_and_append(
        self,
        aggregate_id: str,
        decide: Callable[[A], D | None],
        on_stored: Callable[[list[E]], None] | None,
    ) -> tuple[A, list[E]]:
        kind = self.kind
        turn = self._turn(aggregate_id)
        hold = turn.take_now()
        if hold is None:
            hold = await turn.take()
        try:
            for _ in range(self.decide_attempts):
                # A cached aggregate that needs no read is used as it is, with no coroutine.
                served = self._served(aggregate_id)
                trusted = served is not None
                aggregate = served if served is not None else await self._read_in(aggregate_id)
                # A cache trusted on a shared log may be behind (a commit still being heard
                # of); on the sole writer's log it cannot be, so nothing is read again there.
                maybe_behind = trusted and not self.log.sole_writer
                try:
                    try:
                        decided = decide(aggregate)
                    except Exception as error:
                        refusal = kind.refusal(error) if kind.refusal is not None else None
                        if refusal is None:
                            raise
                        raise refusal from error
                except errors.RequestError:
                    if maybe_behind and await self._moved_on(aggregate_id, aggregate):
                        continue  # refused on a cache that was behind: decide on the latest
                    raise
                rows = kind.rows(decided) if decided is not None else ()
                if not rows or decided is None:
                    if maybe_behind and await self._moved_on(aggregate_id, aggregate):
                        continue
                    return aggregate, []
                if trusted:
                    self.reads_skipped += 1
                try:
                    entries = await self._append_and_settle(
                        aggregate_id, aggregate, decided, rows, on_stored, (turn, hold)
                    )
                except VersionConflict:
                    if kind.metered:
                        metrics.APPEND_CONFLICTS.inc()
                    await self._refresh(aggregate_id, aggregate)  # another replica moved first
                    continue
                except ClaimTaken as taken:
                    # The claim has a first result already (another replica's): a refusal is
                    # the answer; an acceptance is in the log, and deciding again finds it.
                    claims = kind.claims
                    kept = claims.taken(taken.data) if claims is not None else None
                    if kept is not None:
                        raise kept from None
                    await self._refresh(aggregate_id, aggregate)
                    continue
                return aggregate, entries
        finally:
            turn.release(hold)  # (nothing when the commit that settled its rows let it go)
        raise errors.refuse(kind.contended.reason_code, kind.contended.reason)

    def _append_and_settle(
        self,
        aggregate_id: str,
        aggregate: A,
        decided: D,
        rows: Sequence[bytes],
        on_stored: Callable[[list[E]], None] | None,
        held: tuple[Turn, int],
    ) -> asyncio.Future[list[E]]:
        """Append a decision's rows at the aggregate's version; once stored, settle them into
        the aggregate (then ``on_stored``, then the change hub) whoever still awaits, and let
        the aggregate's turn go: the next command decides on what was settled, without
        waiting for this one's caller to run again."""
        done: asyncio.Future[list[E]] = asyncio.get_running_loop().create_future()
        started = time.perf_counter()

        def stored(outcome: list[StoredEvent] | BaseException) -> None:
            if isinstance(outcome, BaseException):
                if isinstance(outcome, LogUnavailable):  # storage's fault: say so, retry
                    outcome = log_unavailable(outcome)
                if not done.done():
                    done.set_exception(outcome)
                return
            if self.kind.metered:
                metrics.APPEND_SECONDS.observe(time.perf_counter() - started)
                metrics.EVENTS_APPENDED.inc(len(outcome))
            try:
                settle = self.kind.settle
                if settle is not None:
                    entries = settle(aggregate, decided, outcome)
                else:
                    entries = self._settle(aggregate, decided, outcome)
                if on_stored is not None:
                    on_stored(entries)
                self.hub.publish(aggregate_id, aggregate)
            except Exception as error:  # (a listener's fault) the caller hears of it
                if not done.done():
                    done.set_exception(error)
                return
            turn, hold = held
            turn.release(hold)
            if not done.done():
                done.set_result(entries)

        claims = self.kind.claims
        self.log.submit(
            self.stream_of(aggregate_id),
            aggregate.version,
            rows,
            stored,
            claim=claims.of(decided) if claims is not None else None,
        )
        return done

    def _settle(self, aggregate: A, decided: D, stored: Sequence[StoredEvent]) -> list[E]:
        kind = self.kind
        if kind.settle is not None:
            return kind.settle(aggregate, decided, stored)
        entries = [kind.decode(row) for row in stored]
        for entry in entries:
            kind.fold(aggregate, entry)
        return entries

    async def start(self, aggregate_id: str, decided: D) -> A:
        """Append an aggregate's first rows (expected version 0) and cache it; raises
        :class:`VersionConflict` when its stream exists (made by a retry, or taken)."""
        stored = await self._append(aggregate_id, 0, self.kind.rows(decided))
        aggregate = self._cache.get(aggregate_id) or self.kind.new(aggregate_id)
        self._settle(aggregate, decided, stored)
        self._keep(aggregate_id, aggregate)
        self._changed(aggregate_id, aggregate)
        return aggregate

    async def claim(self, aggregate_id: str, key: str, data: bytes) -> bytes | None:
        """Claim the stream's ``key`` with ``data`` unless it was claimed first: None when this
        claim was stored, else the first claim's data."""
        try:
            return await self.log.claim(self.stream_of(aggregate_id), key, data)
        except LogUnavailable as error:
            raise log_unavailable(error) from None

    # -- rows others appended -----------------------------------------------------------------

    def observe(self, stored: StoredEvent) -> None:
        """Fold a row another replica appended into the cached aggregate (or read it again)."""
        if not self._owns(stored.stream_id):
            return
        aggregate_id = stored.stream_id.removeprefix(self.kind.prefix)
        aggregate = self._cache.get(aggregate_id)
        if aggregate is None or stored.version <= aggregate.version:
            return
        if stored.version == aggregate.version + 1:
            self.kind.fold(aggregate, self.kind.decode(stored))
            self._changed(aggregate_id, aggregate)
        elif self._cache.pinned(aggregate_id):  # rows were missed: a held one reads them
            task = asyncio.get_running_loop().create_task(self._refresh(aggregate_id, aggregate))
            self._refreshing.add(task)
            task.add_done_callback(self._refreshing.discard)
        else:
            del self._cache[aggregate_id]  # rows were missed: the next load reads them all

    def _changed(self, aggregate_id: str, aggregate: A) -> None:
        self.hub.publish(aggregate_id, aggregate)

    # -- the log ------------------------------------------------------------------------------

    async def _read(self, aggregate_id: str, after: int) -> list[StoredEvent]:
        try:
            return await self.log.read(self.stream_of(aggregate_id), after_version=after)
        except LogUnavailable as error:
            if not self.kind.refuse_unreadable:
                raise
            raise log_unavailable(error) from None

    async def _append(
        self, aggregate_id: str, expected: int, rows: Sequence[bytes]
    ) -> list[StoredEvent]:
        started = time.perf_counter()
        try:
            stored = await self.log.append(self.stream_of(aggregate_id), expected, list(rows))
        except LogUnavailable as error:  # storage's fault, not the request's: say so, retry
            raise log_unavailable(error) from None
        if self.kind.metered:
            metrics.APPEND_SECONDS.observe(time.perf_counter() - started)
            metrics.EVENTS_APPENDED.inc(len(stored))
        return stored


class AggregateStore(Repository[A, D, StoredEvent]):
    """A repository whose rows fold as they are stored and whose commands answer the aggregate
    alone: the base of the accounts', challenges', tournaments' and rating pools' stores."""

    async def execute(self, aggregate_id: str, decide: Callable[[A], D | None]) -> A:
        """Decide on the latest aggregate and append with the expected version, deciding again
        on a conflict; the aggregate as it is after."""
        aggregate, _ = await self.execute_stored(aggregate_id, decide)
        return aggregate

    def cached(self) -> list[A]:
        """Every aggregate in the cache now."""
        return list(self._cache.values())
