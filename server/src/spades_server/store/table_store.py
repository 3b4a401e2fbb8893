"""Tables as event-sourced aggregates, and command handling on the event log.

A :class:`Table` is everything the log says about one table: its entries (see
:mod:`spades_server.store.journal`), the engine's match state plus what only the server keeps
(seat-token digests, substitutes' token digests, the table's name and privacy, the action ids
already answered). :class:`TableStore` handles every command the same stateless way: load the
table (from a cache checked against the log's version), decide with the engine, append with the
expected version (on a conflict reload and decide again), and adopt the state the decision
reached: a command's events are folded once, by the engine, when it decides.

A seat's action id has one first result, kept in the log beside the table's events as a
write-once claim (``table_events.action_claim_key``): an acceptance claims it in the same
transaction as its events, a refusal claims it alone (taking no table version, so no seat's
sequence goes stale). Whichever claim is first, on any replica, is the answer to every repeat of
the id.

On a log other processes append to (PostgreSQL, several replicas), a table that a stream or a
command holds here is *followed*: the log's notifications say when another replica committed to
it, and the store then reads and folds just those events. While a followed table's cache has
every version another replica was heard to commit, a command trusts it and does not read the log
first: its append still names the expected version, so an event the cache missed (a notification
still on its way) is a conflict, after which the store reads and decides again. A command the
trusted cache would refuse, or that would do nothing, is decided again after a read, so no
refusal rests on a cache that was behind. A table no stream or command holds here is not
followed: it is read before every command, as before. A replica so follows only the tables it
serves, not every table of the log.

The cache is bounded (``--table-cache-size``): the least recently used tables leave it, finished
or idle alike, unless a stream has the table open or a command is running on it (those are
*pinned*, so every stream and command of a table shares one object). A table that left is
loaded again from the log exactly as the first time, so the cache changes no answer, only how
much memory history costs. A table loaded cold is checked before it is served (versions without
a gap, every event decoded, a finished one replayed by the engine): a damaged one is refused with
DATA_LOSS (LOG_DAMAGED), never served."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Sequence

import grpc
import structlog
from google.protobuf.message import DecodeError

from spades.engine import IllegalAction
from spades.reasons import Reason
from spades_server.domain import errors, replays, table_events
from spades_server.domain.table_events import Draft, Entry, Refusal
from spades_server.domain.tables import Decided, Decision, Table
from spades_server.eventlog.base import (
    ClaimTaken,
    EventLog,
    LogClosed,
    LogUnavailable,
    StoredEvent,
    VersionConflict,
)
from spades_server.ops import metrics
from spades_server.ops.settings import DEFAULT_CACHE_SIZE
from spades_server.store import journal
from spades_server.store.repository import MAX_DECIDE_ATTEMPTS, log_unavailable

log = structlog.get_logger(__name__)


#: Seconds a table's follower waits before it follows again after the log failed it.
FOLLOW_RETRY = 0.5


class TableStore:
    """Loads tables from the log (with a version-checked, bounded cache) and runs commands on
    them. ``cache_size`` tables are kept, the most recently used, besides the pinned ones."""

    def __init__(
        self,
        log: EventLog,
        cache_size: int = DEFAULT_CACHE_SIZE,
        decide_attempts: int = MAX_DECIDE_ATTEMPTS,
    ) -> None:
        self.log = log
        self.cache_size = cache_size
        #: How often a command is decided on conflicts before it is refused (TABLE_BUSY).
        self.decide_attempts = decide_attempts
        #: Least recently used first.
        self._cache: OrderedDict[str, Table] = OrderedDict()
        #: How many streams (and commands) hold each table: those are never evicted.
        self._pins: dict[str, int] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        #: Who waits for each table's next change (TableStore.changed), woken by poke.
        self._waiters: dict[str, list[asyncio.Future[None]]] = {}
        self._refreshing: set[asyncio.Task[None]] = set()
        #: On a log others append to: the follower of each held table, and the tables whose
        #: follower is watching (their cache has every version others were heard to commit).
        self._followers: dict[str, asyncio.Task[None]] = {}
        self._followed: set[str] = set()
        #: Reads of the log a command skipped because the followed cache was current.
        self.reads_skipped = 0
        #: Called with a table each time new events were folded into it.
        self.listeners: list[Callable[[Table], None]] = []

    def _lock(self, table_id: str) -> asyncio.Lock:
        lock = self._locks.get(table_id)
        if lock is None:
            lock = self._locks[table_id] = asyncio.Lock()
        return lock

    async def load(self, table_id: str) -> Table:
        """The table as of the log's latest version; NOT_FOUND when there is none."""
        table, _ = await self._load(table_id)
        return table

    def _current(self, table_id: str) -> Table | None:
        """The cached table when it needs no read: on the sole writer's log always; on a shared
        log when it is followed and has every version others were heard to commit."""
        table = self._cache.get(table_id)
        if table is None:
            return None
        if self.log.sole_writer:
            return table  # every append to this log went through this store and was folded
        if table_id in self._followed and self.log.notifier.foreign_head(table_id) <= table.version:
            return table
        return None

    async def _load(self, table_id: str) -> tuple[Table, bool]:
        """The table, and whether it came from the cache without reading the log."""
        if not table_id:
            raise errors.refuse(Reason.MISSING_FIELD, "table_id is required", field="table_id")
        if "\x00" in table_id:  # PostgreSQL text cannot hold one (it refuses the query): none has
            raise errors.table_not_found(table_id)
        current = self._current(table_id)
        if current is not None:
            self._cache.move_to_end(table_id)
            return current, True
        before = self._cache.get(table_id)
        table = before or Table(table_id)
        stored = await self.log.read(table_id, after_version=table.version)
        # A table loaded cold is checked before any of it is served (its events come whole).
        entries = (
            await self._checked(table_id, stored)
            if before is None
            else [journal.decode(event) for event in stored]
        )
        # Another load may have cached this table meanwhile: keep one object per table, or
        # commands and streams would fold into different copies.
        table = self._cache.get(table_id) or table
        for entry in entries:
            table.fold(entry)  # folding skips what the table already has
        if table.version == 0:
            raise errors.table_not_found(table_id)
        self._keep(table)
        if stored:
            self._changed(table)
        return table, False

    async def _checked(self, table_id: str, stored: Sequence[StoredEvent]) -> list[Entry]:
        """A table's whole history, checked: versions from 1 without a gap, every event
        decoded, and, once the match is over, replayed by the engine (a finished table is not
        replayed at start; one in play is, on SQLite). DATA_LOSS (LOG_DAMAGED) naming the first
        bad sequence, logged as an error, when it is not: a damaged table is never served."""
        entries: list[Entry] = []
        for event in stored:
            expected = len(entries) + 1
            if event.version != expected:
                raise self._damaged(
                    table_id,
                    expected,
                    f"its versions jump from {expected - 1} to {event.version}: events are missing",
                )
            try:
                entries.append(journal.decode(event))
            except (DecodeError, ValueError) as error:
                raise self._damaged(
                    table_id, event.version, f"the event does not decode ({error})"
                ) from None
        if entries and isinstance(entries[-1].event, replays.FINISHED):
            # In a worker thread: a long match's replay takes a while on the pure-Python engine.
            bad = await asyncio.to_thread(
                replays.first_unreplayed, table_id, [entry.event for entry in entries]
            )
            if bad is not None:
                raise self._damaged(table_id, bad.sequence, bad.reason)
        return entries

    @staticmethod
    def _damaged(table_id: str, sequence: int, fault: str) -> errors.RequestError:
        log.error(
            "damaged table in the event log", table_id=table_id, sequence=sequence, fault=fault
        )
        return errors.refuse(
            Reason.LOG_DAMAGED,
            f"the event log's table {table_id} is damaged at sequence {sequence}: {fault}; the"
            " operator's spades-server check lists every fault",
            metadata={"table_id": table_id, "sequence": str(sequence)},
        )

    def _keep(self, table: Table) -> None:
        """Cache the table as the most recently used, and evict past the bound."""
        self._cache[table.table_id] = table
        self._cache.move_to_end(table.table_id)
        self._evict()

    def _evict(self) -> None:
        """Drop the least recently used tables that no stream or command holds."""
        if len(self._cache) <= self.cache_size:
            return
        for table_id in list(self._cache):
            if len(self._cache) <= self.cache_size:
                return
            if table_id in self._pins or self._lock_in_use(table_id):
                continue
            del self._cache[table_id]
            self._locks.pop(table_id, None)
            self._waiters.pop(table_id, None)

    def _lock_in_use(self, table_id: str) -> bool:
        lock = self._locks.get(table_id)
        # A released lock may still have a waiter about to take it: that one must stay.
        return lock is not None and (lock.locked() or bool(getattr(lock, "_waiters", None)))

    @contextlib.asynccontextmanager
    async def holding(self, table_id: str) -> AsyncIterator[Table]:
        """Load the table and keep it cached (pinned) until the block ends: a stream's view
        of a table must stay the one object commands fold into."""
        self._pins[table_id] = self._pins.get(table_id, 0) + 1
        try:
            table = await self.load(table_id)
            if not self.log.sole_writer and table_id not in self._followers:
                self._followers[table_id] = asyncio.get_running_loop().create_task(
                    self._follow(table_id), name=f"follow-{table_id}"
                )
            yield table
        finally:
            left = self._pins.pop(table_id) - 1
            if left > 0:
                self._pins[table_id] = left
            else:
                follower = self._followers.pop(table_id, None)
                if follower is not None:
                    follower.cancel()
                    self._followed.discard(table_id)
                self._evict()

    async def _follow(self, table_id: str) -> None:
        """Fold what other processes commit to a held table as they are heard to (until the
        last stream lets it go): the cache then serves its commands without a read."""
        notifier = self.log.notifier
        while True:
            try:
                notifier.watch_stream(table_id)
            except LogClosed:
                return
            try:
                # Watching: every commit heard of from now on raises the foreign head. One read
                # covers what others committed before, then the cache is current.
                table = self._cache[table_id]
                await self._refresh(table)
                self._followed.add(table_id)
                while True:
                    await notifier.wait_for_foreign(table_id, table.version)
                    table = self._cache[table_id]
                    if notifier.foreign_head(table_id) > table.version:
                        await self._refresh(table)
                        if notifier.foreign_head(table_id) > table.version:
                            await asyncio.sleep(0.01)  # not visible to this read yet
            except (LogClosed, asyncio.CancelledError):
                return
            except Exception as error:  # the log failed a read: follow again a moment later
                log.warning("table not followed", table_id=table_id, reason=str(error))
            finally:
                if self._followers.get(table_id) is asyncio.current_task():
                    self._followed.discard(table_id)  # (else it was let go, or follows anew)
                notifier.unwatch_stream(table_id)
            await asyncio.sleep(FOLLOW_RETRY)

    async def _refresh(self, table: Table) -> None:
        """Fold whatever the log has past the cached table (after a conflict: always read)."""
        version = table.version
        for event in await self.log.read(table.table_id, after_version=version):
            table.fold(journal.decode(event))
        if table.version != version:
            self._changed(table)

    def observe(self, entry: Entry) -> None:
        """Fold an entry another process appended into the cached table, if it is cached
        (entries this store appended are already folded)."""
        table = self._cache.get(entry.table_id)
        if table is None or entry.sequence <= table.version:
            return
        if entry.sequence == table.version + 1:
            table.fold(entry)
            self._changed(table)
        else:  # events were missed: read them in order
            task = asyncio.get_running_loop().create_task(self._refresh(table))
            self._refreshing.add(task)
            task.add_done_callback(self._refreshing.discard)

    def following(self, table_id: str) -> bool:
        """Whether the table is followed here (held, on a log others append to, and watched)."""
        return table_id in self._followed

    def cached(self, table_id: str) -> Table:
        """The table as last loaded (call :meth:`load` once first)."""
        return self._cache[table_id]

    def cached_tables(self) -> list[Table]:
        """Every table in the cache now."""
        return list(self._cache.values())

    def folded_entry(self, stored: StoredEvent) -> Entry | None:
        """The entry of ``stored`` if a cached table folded it already (this replica appended
        or followed it), so a reader of the whole log (the lobby) need not decode it again."""
        table = self._cache.get(stored.stream_id)
        if table is None or not 0 < stored.version <= len(table.entries):
            return None
        entry = table.entries[stored.version - 1]
        return entry if entry.position == stored.position else None

    def cached_version(self, table_id: str) -> int:
        """The cached table's version; -1 when it is not cached (never loaded, or evicted)."""
        table = self._cache.get(table_id)
        return table.version if table is not None else -1

    def _changed(self, table: Table) -> None:
        for listener in self.listeners:
            listener(table)
        self.poke(table.table_id)

    def poke(self, table_id: str) -> None:
        """Wake everyone waiting on the table (it changed, or a stream has news)."""
        waiters = self._waiters.pop(table_id, None)
        if waiters is not None:
            for waiter in waiters:
                if not waiter.done():  # (a waiter cancelled meanwhile)
                    waiter.set_result(None)

    def wake_all(self) -> None:
        """Wake every waiter (on shutdown)."""
        for table_id in list(self._waiters):
            self.poke(table_id)

    def changed(self, table_id: str) -> asyncio.Future[None]:
        """A future done at the table's next :meth:`poke` (its next change, or a stream's news):
        the caller looks at what it waits for first, then awaits this. One future per waiter,
        so cancelling one waiter cancels no other."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters = self._waiters.get(table_id)
        if waiters is None:
            self._waiters[table_id] = [waiter]
        else:
            waiters.append(waiter)
        return waiter

    async def create(self, table_id: str, decided: Decided) -> Table:
        """Start a new table's log with what was decided (its TableCreated first)."""
        stored = await self._append(table_id, 0, decided.drafts)
        table = Table(table_id)
        table.adopt(
            decided.state,
            [journal.appended(*pair) for pair in zip(stored, decided.drafts, strict=True)],
        )
        self._keep(table)
        self._changed(table)
        return table

    async def execute(
        self,
        table_id: str,
        decide: Decision,
        on_stored: Callable[[list[Entry]], None] | None = None,
    ) -> tuple[Table, list[Entry]]:
        """Run a command: decide on the latest table, append, retry on a conflict.

        ``decide`` raises :class:`errors.RequestError` to refuse (nothing is written) and may
        return no events (nothing to do). What an append stored is folded into the table when
        the log says it is stored, whether or not the caller still waits (a client vanishing
        mid-append): an appended event is always folded. ``on_stored`` is called with the
        stored entries right after they are folded and before anyone waiting on the table is
        woken (an action's result so goes out with the events it caused).
        """
        try:
            return await self._decide_and_append(table_id, decide, on_stored)
        finally:
            if table_id not in self._cache and not self._lock_in_use(table_id):
                self._locks.pop(table_id, None)  # no table (or evicted): keep no lock for it
            self._evict()  # the table was held while it ran: it may go now

    async def _decide_and_append(
        self,
        table_id: str,
        decide: Decision,
        on_stored: Callable[[list[Entry]], None] | None,
    ) -> tuple[Table, list[Entry]]:
        async with self._lock(table_id):
            for _ in range(self.decide_attempts):
                table, trusted = await self._load(table_id)
                try:
                    try:
                        decided = decide(table)
                    except IllegalAction as error:
                        raise errors.from_illegal(error) from error
                except errors.RequestError:
                    if trusted and await self._moved_on(table):
                        continue  # refused on a cache that was behind: decide on the latest
                    raise
                if decided is None or not decided.drafts:
                    if trusted and await self._moved_on(table):
                        continue
                    return table, []
                if trusted:
                    self.reads_skipped += 1
                try:
                    entries = await self._append_and_fold(table, decided, on_stored)
                except VersionConflict:
                    metrics.APPEND_CONFLICTS.inc()
                    await self._refresh(table)
                    continue
                except ClaimTaken as taken:
                    # The action id has a first result already (another replica's): a refusal
                    # is the answer; an acceptance is in the log, and deciding again finds it.
                    kept = journal.decode_claim(taken.data)
                    if kept is not None:
                        raise refused_again(kept) from None
                    await self._refresh(table)
                    continue
                return table, entries
        raise errors.refuse(
            Reason.TABLE_BUSY, "the table kept changing under this request; try again"
        )

    async def _moved_on(self, table: Table) -> bool:
        """Read the log past the (trusted) cached table: whether it had moved on."""
        version = table.version
        await self._refresh(table)
        return table.version != version

    async def first_result(
        self, table_id: str, seat: int, action_id: str, refusal: Refusal
    ) -> Refusal | int:
        """Keep ``refusal`` as the first result of the seat's ``action_id`` unless the id has
        one already; return the first result: a refusal (this one or the one kept before), or
        the sequence of the first event of the action accepted under the id."""
        key = table_events.action_claim_key(seat, action_id)
        try:
            data = await self.log.claim(table_id, key, journal.encode_refusal(refusal))
        except LogUnavailable as error:
            raise log_unavailable(error) from None
        if data is None:
            return refusal
        kept = journal.decode_claim(data)
        if kept is not None:
            return kept
        table = await self.load(table_id)
        if (seat, action_id) not in table.answered_actions:
            await self._refresh(table)  # accepted through another replica a moment ago
        return table.answered_actions[(seat, action_id)]

    def _append_and_fold(
        self,
        table: Table,
        decided: Decided,
        on_stored: Callable[[list[Entry]], None] | None,
    ) -> asyncio.Future[list[Entry]]:
        """Append what was decided at the table's version; once stored, fold it into the table
        (then ``on_stored``, then wake the table's waiters) whoever still awaits the result."""
        done: asyncio.Future[list[Entry]] = asyncio.get_running_loop().create_future()
        started = time.perf_counter()

        def stored(outcome: list[StoredEvent] | BaseException) -> None:
            if isinstance(outcome, BaseException):
                if isinstance(outcome, LogUnavailable):  # storage's fault: say so, retry
                    outcome = log_unavailable(outcome)
                if not done.done():
                    done.set_exception(outcome)
                return
            metrics.APPEND_SECONDS.observe(time.perf_counter() - started)
            metrics.EVENTS_APPENDED.inc(len(outcome))
            try:
                entries = _entries(outcome, decided)
                table.adopt(decided.state, entries)
                if on_stored is not None:
                    on_stored(entries)
                self._changed(table)
            except Exception as error:  # (a listener's fault) the caller hears of it
                if not done.done():
                    done.set_exception(error)
                return
            if not done.done():
                done.set_result(entries)

        self.log.submit(
            table.table_id,
            table.version,
            [journal.encode(draft) for draft in decided.drafts],
            stored,
            claim=_action_claim(decided),
        )
        return done

    async def _append(
        self,
        table_id: str,
        expected: int,
        drafts: Sequence[Draft],
        claim: tuple[str, bytes] | None = None,
    ) -> list[StoredEvent]:
        started = time.perf_counter()
        try:
            stored = await self.log.append(
                table_id, expected, [journal.encode(d) for d in drafts], claim=claim
            )
        except LogUnavailable as error:  # storage's fault, not the request's: say so, retry
            raise log_unavailable(error) from None
        metrics.APPEND_SECONDS.observe(time.perf_counter() - started)
        metrics.EVENTS_APPENDED.inc(len(stored))
        return stored


def _action_claim(decided: Decided) -> tuple[str, bytes] | None:
    """The claim an action's events make on its id (None for events no seat's action caused)."""
    first = decided.drafts[0]
    actor = first.event.actor
    if not first.action_id or actor is None:
        return None
    return table_events.action_claim_key(actor, first.action_id), table_events.ACCEPTED_CLAIM


def refused_again(refusal: Refusal) -> errors.RequestError:
    """The refusal an action id got first, whole (its field and metadata too), to answer a
    repeat of the id with."""
    return errors.RequestError(
        _CODES.get(refusal.code, grpc.StatusCode.UNKNOWN),
        refusal.reason,
        reason_code=refusal.reason_code,
        field=refusal.field,
        metadata=refusal.metadata,
    )


_CODES = {code.value[0]: code for code in grpc.StatusCode}


def _entries(stored: Sequence[StoredEvent], decided: Decided) -> list[Entry]:
    return [journal.appended(row, draft) for row, draft in zip(stored, decided.drafts, strict=True)]
