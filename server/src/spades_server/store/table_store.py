"""Tables in the one repository: the table's :class:`AggregateKind`, and its store's conveniences.

A :class:`Table` is everything the log says about one table: its entries (see
:mod:`spades_server.store.journal`), the engine's match state plus what only the server keeps.
:class:`TableStore` is the generic :class:`~spades_server.store.repository.Repository` over
:data:`TABLES` (load from the bounded, pinned cache, followed on a shared log; decide; append
with the expected version; settle in the log's commit callback; retry; hand the result to the
change hub), with what only tables ask of it. What the kind says of a table:

- its stream id is the table id itself (lowercase hex, no prefix), and a row is one journal
  entry (:func:`journal.decode`);
- a decision (:data:`~spades_server.domain.tables.Decision`) returns a
  :class:`~spades_server.domain.tables.Decided`: the state it reached and the drafts to append.
  What was stored is *adopted*, not folded again: a command's events are folded once, by the
  engine, when it decides. The engine's ``IllegalAction`` is a refusal in its words;
- a seat's action id has one first result, kept in the log beside the table's events as a
  write-once claim (``table_events.action_claim_key``): an acceptance claims it in the same
  transaction as its events, a refusal claims it alone (:meth:`TableStore.first_result`,
  taking no table version, so no seat's sequence goes stale). Whichever claim is first, on any
  replica, is the answer to every repeat of the id;
- a table loaded cold is checked before it is served (versions without a gap, every event
  decoded, a finished one replayed by the engine): a damaged one is refused with DATA_LOSS
  (LOG_DAMAGED), never served;
- a table kept changing under a command is TABLE_BUSY; a log that cannot be read is the log's
  own ``LogUnavailable`` (the processes tell it apart from a refusal).

The cache is bounded (``--table-cache-size``): the least recently used tables leave it, finished
or idle alike, unless a stream has the table open or a command is running on it."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import grpc
import structlog
from google.protobuf.message import DecodeError

from spades.engine import IllegalAction
from spades.reasons import Reason
from spades_server.domain import errors, replays, table_events
from spades_server.domain.table_events import Entry, Refusal
from spades_server.domain.tables import Decided, Table
from spades_server.eventlog.base import EventLog, StoredEvent
from spades_server.ops.settings import DEFAULT_CACHE_SIZE
from spades_server.store import journal, stream_kinds
from spades_server.store.repository import (
    MAX_DECIDE_ATTEMPTS,
    AggregateKind,
    Claims,
    Contended,
    Repository,
)

log = structlog.get_logger(__name__)


def _check_id(table_id: str) -> None:
    if not table_id:
        raise errors.refuse(Reason.MISSING_FIELD, "table_id is required", field="table_id")
    if "\x00" in table_id:  # PostgreSQL text cannot hold one (it refuses the query): none has
        raise errors.table_not_found(table_id)


def _rows(decided: Decided) -> list[bytes]:
    return [journal.encode(draft) for draft in decided.drafts]


def _adopt(table: Table, decided: Decided, stored: Sequence[StoredEvent]) -> list[Entry]:
    """Take the state the decision reached, with the entries its drafts were stored as."""
    entries = [
        journal.appended(row, draft) for row, draft in zip(stored, decided.drafts, strict=True)
    ]
    table.adopt(decided.state, entries)
    return entries


async def _checked(table_id: str, stored: Sequence[StoredEvent]) -> list[Entry]:
    """A table's whole history, checked: versions from 1 without a gap, every event decoded,
    and, once the match is over, replayed by the engine (a finished table is not replayed at
    start; one in play is, on SQLite). DATA_LOSS (LOG_DAMAGED) naming the first bad sequence,
    logged as an error, when it is not: a damaged table is never served."""
    entries: list[Entry] = []
    for event in stored:
        expected = len(entries) + 1
        if event.version != expected:
            raise _damaged(
                table_id,
                expected,
                f"its versions jump from {expected - 1} to {event.version}: events are missing",
            )
        try:
            entries.append(journal.decode(event))
        except (DecodeError, ValueError) as error:
            raise _damaged(
                table_id, event.version, f"the event does not decode ({error})"
            ) from None
    if entries and isinstance(entries[-1].event, replays.FINISHED):
        # In a worker thread: a long match's replay takes a while on the pure-Python engine.
        bad = await asyncio.to_thread(
            replays.first_unreplayed, table_id, [entry.event for entry in entries]
        )
        if bad is not None:
            raise _damaged(table_id, bad.sequence, bad.reason)
    return entries


def _damaged(table_id: str, sequence: int, fault: str) -> errors.RequestError:
    log.error("damaged table in the event log", table_id=table_id, sequence=sequence, fault=fault)
    return errors.refuse(
        Reason.LOG_DAMAGED,
        f"the event log's table {table_id} is damaged at sequence {sequence}: {fault}; the"
        " operator's spades-server check lists every fault",
        metadata={"table_id": table_id, "sequence": str(sequence)},
    )


def _action_claim(decided: Decided) -> tuple[str, bytes] | None:
    """The claim an action's events make on its id (None for events no seat's action caused)."""
    first = decided.drafts[0]
    actor = first.event.actor
    if not first.action_id or actor is None:
        return None
    return table_events.action_claim_key(actor, first.action_id), table_events.ACCEPTED_CLAIM


def _claimed_first(data: bytes) -> errors.RequestError | None:
    """The refusal an action id's claim kept first, or None when it is an acceptance."""
    kept = journal.decode_claim(data)
    return refused_again(kept) if kept is not None else None


def _engine_refusal(error: Exception) -> errors.RequestError | None:
    return errors.from_illegal(error) if isinstance(error, IllegalAction) else None


#: The table, as the repository handles it.
TABLES: AggregateKind[Table, Decided, Entry] = AggregateKind(
    prefix="",
    new=Table,
    decode=journal.decode,
    fold=Table.fold,
    rows=_rows,
    not_found=errors.table_not_found,
    contended=Contended(Reason.TABLE_BUSY, "the table kept changing under this request; try again"),
    check_id=_check_id,
    owns=stream_kinds.is_table_stream,
    settle=_adopt,
    history=_checked,
    claims=Claims(of=_action_claim, taken=_claimed_first),
    refusal=_engine_refusal,
    refuse_unreadable=False,
    metered=True,
)


class TableStore(Repository[Table, Decided, Entry]):
    """The tables: the one repository over :data:`TABLES`, ``cache_size`` tables kept (the most
    recently used) besides the pinned ones, with what only tables ask of it."""

    def __init__(
        self,
        log: EventLog,
        cache_size: int = DEFAULT_CACHE_SIZE,
        decide_attempts: int = MAX_DECIDE_ATTEMPTS,
    ) -> None:
        super().__init__(log, TABLES, decide_attempts, cache_size)

    #: Run a command on a table: (the table after, the entries it stored); see
    #: :meth:`Repository.execute_stored`.
    execute = Repository.execute_stored
    #: Start a new table's log with what was decided (its TableCreated first).
    create = Repository.start

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

    async def first_result(
        self, table_id: str, seat: int, action_id: str, refusal: Refusal
    ) -> Refusal | int:
        """Keep ``refusal`` as the first result of the seat's ``action_id`` unless the id has
        one already; return the first result: a refusal (this one or the one kept before), or
        the sequence of the first event of the action accepted under the id."""
        key = table_events.action_claim_key(seat, action_id)
        data = await self.claim(table_id, key, journal.encode_refusal(refusal))
        if data is None:
            return refusal
        kept = journal.decode_claim(data)
        if kept is not None:
            return kept
        table = await self.load(table_id)
        if (seat, action_id) not in table.answered_actions:
            await self._refresh(table_id, table)  # accepted through another replica a moment ago
        return table.answered_actions[(seat, action_id)]


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
