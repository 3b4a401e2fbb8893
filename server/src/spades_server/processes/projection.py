"""The lobby's projection: every table's summary, folded from the log's entries in global order.

It is kept current by following the log, so the listing is never a second source of truth. What
it holds in memory does not grow with history: the tables not finished live in memory, and a
finished table's summary moves to the log's projection rows (``EventLog.save_projection``) once
it has settled, from where listings page it. Beside the rows it keeps a *checkpoint*: the global
position it has folded up to and the tables in memory there, written at most every
``checkpoint_interval`` seconds of the server's clock (in the same transaction as the rows) and
at a clean stop, so a start folds only the events after it instead of the whole history. A
checkpoint the log does not reach (a log restored from an older copy) is dropped and the lobby
rebuilt from every event.

It is the table directory the house bots look tables up in
(:class:`spades_server.processes.house.TableDirectory`).

Most events change nothing a summary shows but its sequence (bids, cards, tricks): while no
listener wants every entry, those are not decoded into entries at all; only their kind is read
(``journal.kind_of``) and the summary's sequence moved. So a replica that follows the whole log
for its lobby spends little on the tables other replicas serve (those tables' entries are
folded only by the replicas that serve them, see
:class:`spades_server.store.table_store.TableStore`). On such a shared log the lobby also reads in
bursts: once caught up and woken, it waits up to ``LINGER`` (50 ms) so one read takes what every
replica committed meanwhile, unless a caller waits for it (``caught_up``: a CreateTable, a
JoinTable, a GetTable of a table this replica serves); the log's tracker gathers for as long
(``EventLog.lag_allowed``, set here). So the lobby lags other replicas' commits by design by at
most that, plus the log's own delay in proving positions final (milliseconds; up to its re-read
interval, 2 s, for a lost notification).

Besides following the log (:meth:`LobbyProjection.start`), a projection folds entries handed to
it (:meth:`LobbyProjection.fold`): a listing rebuilt from every event, to check the one served.
"""

from __future__ import annotations

import asyncio
import heapq
from collections.abc import Callable

import grpc
import structlog
from google.protobuf.message import DecodeError

from spades import protocol
from spades.engine import events as ev
from spades.reasons import Reason
from spades.v1 import lobby_pb2
from spades.wire import TABLE_STATUS_NAMES
from spades_server.domain import errors, paging, tokens
from spades_server.domain.table_events import Entry
from spades_server.domain.tables import Decided, Table, timestamp
from spades_server.eventlog.base import (
    EventLog,
    LogClosed,
    LogUnavailable,
    ProjectionCheckpoint,
    ProjectionRow,
    StoredEvent,
    VersionConflict,
)
from spades_server.ops import metrics
from spades_server.ops.clocks import SYSTEM_CLOCK, Clock
from spades_server.ops.tasks import stop_tasks
from spades_server.processes.games import GamesIndex
from spades_server.store import journal
from spades_server.store.stream_kinds import is_table_stream
from spades_server.store.table_store import TableStore
from spades_server.v1 import log_pb2

log = structlog.get_logger(__name__)

#: The lobby's name in the log's projection store (a new one if the summaries change meaning).
LOBBY = "lobby"
FINISHED = lobby_pb2.TABLE_STATUS_FINISHED
#: Seconds the lobby may lag behind other replicas' commits by design (see ``linger``).
LINGER = 0.05


class LobbyProjection:
    """Every table's lobby summary, folded from the log in global order: the tables not finished
    in memory, the finished ones in the log's projection rows."""

    def __init__(
        self,
        log_: EventLog,
        *,
        checkpoint_interval: float = 1.0,
        settle_positions: int = 64,
        move_after: int = 256,
        linger: float = LINGER,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._log = log_
        #: What the checkpoints' interval is counted on.
        self._clock = clock
        #: The tables not finished, and the finished ones not moved to the log's rows yet.
        self.tables: dict[str, lobby_pb2.Table] = {}
        self.position = 0
        #: Seconds between checkpoints (while the log moves on).
        self.checkpoint_interval = checkpoint_interval
        #: A finished table moves to the rows once the log is this many positions past its last
        #: event (a late event, such as SeedRevealed after MatchEnded, then finds it here) ...
        self.settle_positions = settle_positions
        #: ... at the next checkpoint, or at once when this many finished tables wait.
        self.move_after = move_after
        #: Finished tables in memory -> the position of their last event.
        self._finished: dict[str, int] = {}
        #: How many finished tables are in the rows.
        self._stored_finished = 0
        self._checkpointed = -1
        self._checkpoint_due = 0.0
        #: Held while finished tables move from memory to the rows, and by a listing, so a
        #: listing never sees a table in both places or in neither.
        self._moving = asyncio.Lock()
        self._advanced = asyncio.Condition()
        #: Callers of ``caught_up`` waiting now: without one, no event wakes anyone.
        self._catching_up = 0
        #: On a log others append to: seconds the lobby may wait, once caught up and woken, to
        #: read what other replicas commit in one go (a caller of ``caught_up`` cuts it short).
        self.linger = linger
        self._hurry = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        #: Called with every entry as the projection follows the log (after the rebuild).
        self.listeners: list[Callable[[Entry], None]] = []
        #: Request-id digest of a quick-match join -> (table, seat), until its match ends:
        #: where a retried QuickMatch finds its seat (a JoinTable retry asks its table instead).
        self._quick_match_requests: dict[bytes, tuple[str, int]] = {}
        self._quick_match_requests_of: dict[str, list[bytes]] = {}
        #: Called with every row it follows of a stream that is not a table's (an account's,
        #: a rating pool's), undecoded: each kind has its own reader.
        self.stream_listeners: list[Callable[[StoredEvent], None]] = []
        #: The entry of a row this process's table store folded already (None: decode it), so
        #: the lobby does not decode again what the process itself just encoded.
        self.folded: Callable[[StoredEvent], Entry | None] = lambda stored: None
        #: Every account's finished matches, indexed as their ends are folded.
        self.games = GamesIndex(log_)

    async def start(self) -> None:
        """Resume from the checkpoint (or rebuild from the whole log), then follow the log."""
        await self._restore()
        while batch := await self._log.read_all(self.position, limit=5000):
            for stored in batch:
                if not is_table_stream(stored.stream_id):
                    self.position = max(self.position, stored.position)
                elif not await self._fold_unseen(stored):
                    await self.fold(journal.decode(stored))
        if self.position != self._checkpointed:
            await self._save()
        if not await self.games.built():
            await self.games.mark_built(self.position)
        self._refresh_gauges()
        self._task = asyncio.create_task(self._follow(), name="lobby-projection")

    async def stop(self) -> None:
        """Stop following, and checkpoint (with every finished table moved) for the next start."""
        if self._task is None:
            return
        await stop_tasks(self._task)
        self._task = None
        await self._save(everything=True)

    async def _restore(self) -> None:
        checkpoint = await self._log.load_projection(LOBBY)
        if checkpoint is None:
            return
        if not await self.games.built():  # a log from before the games index: fold it all
            await self._log.drop_projection(LOBBY)
            return
        try:
            state = log_pb2.LobbyCheckpoint.FromString(checkpoint.data)
        except DecodeError:
            state = None
        if state is None or not await self._log_reaches(checkpoint.position):
            log.warning(
                "the lobby checkpoint does not fit the log: rebuilding the lobby from every event",
                checkpoint_position=checkpoint.position,
            )
            await self._log.drop_projection(LOBBY)
            return
        for summary in state.tables:
            self.tables[summary.table_id] = summary
            if summary.status == FINISHED:
                self._finished[summary.table_id] = checkpoint.position
        self._stored_finished = state.finished_tables
        for request in state.quick_match_requests:
            digest = request.request_id_sha256
            self._quick_match_requests[digest] = (request.table_id, request.seat)
            self._quick_match_requests_of.setdefault(request.table_id, []).append(digest)
        self.position = self._checkpointed = checkpoint.position

    async def _log_reaches(self, position: int) -> bool:
        """Whether the log holds the event at ``position`` (the last one a checkpoint folded)."""
        if position == 0:
            return True
        found = await self._log.read_all(position - 1, limit=1)
        return bool(found) and found[0].position == position

    async def _follow(self) -> None:
        # On a log others append to, most events are other replicas' and arrive in bursts:
        # read them at most every ``linger`` seconds, unless a caller waits (``caught_up``).
        linger = 0.0 if self._log.sole_writer else self.linger
        self._log.lag_allowed = linger
        async for stored in self._log.subscribe_all(
            self.position, linger=linger, hurry=self._hurry
        ):
            try:
                if not is_table_stream(stored.stream_id):
                    self.position = max(self.position, stored.position)
                    for stream_listener in self.stream_listeners:
                        stream_listener(stored)
                elif not self.listeners and await self._fold_unseen(stored):
                    pass  # nothing the lobby shows but the sequence: not decoded
                else:
                    # Once, for the lobby and every listener; not at all if the store has it.
                    entry = self.folded(stored) or journal.decode(stored)
                    if await self.fold(entry):
                        self._refresh_gauges()
                    for listener in self.listeners:
                        listener(entry)
            except Exception:
                # One bad event must not stop the lobby (or every caller waiting on it).
                log.exception(
                    "event not folded", table_id=stored.stream_id, sequence=stored.version
                )
                self.position = max(self.position, stored.position)
            if self._catching_up:
                async with self._advanced:
                    self._advanced.notify_all()

    async def caught_up(self, position: int) -> None:
        """Wait until the projection has folded the event at ``position``."""
        if self.position < position:
            self._hurry.set()
            self._log.hurry()
        self._catching_up += 1
        try:
            async with self._advanced:
                await self._advanced.wait_for(lambda: self.position >= position)
        finally:
            self._catching_up -= 1

    async def _fold_unseen(self, stored: StoredEvent) -> bool:
        """Fold an event of a table in memory whose kind changes nothing the lobby shows but
        the sequence, without decoding it; False (nothing done) for any other event."""
        summary = self.tables.get(stored.stream_id)
        if summary is None or stored.version != summary.sequence + 1:
            return False
        if journal.kind_of(stored) in _SHOWN_KINDS:
            return False
        summary.sequence = stored.version
        if summary.status == FINISHED:
            self._finished[stored.stream_id] = stored.position
        self.position = max(self.position, stored.position)
        await self._checkpoint_when_due()
        return True

    async def fold(self, entry: Entry) -> bool:
        """Fold one entry; True when it changed what the gauges count (seats or a status).

        Public for a reader that rebuilds a lobby from the log's entries itself (a check of
        the listing against every event, a benchmark's template), as :meth:`start` does."""
        table_id = entry.table_id
        summary = self.tables.get(table_id)
        if isinstance(entry.event, ev.TableCreated):
            summary = self.tables[table_id] = _new_summary(entry, entry.event)
            changed = True
        elif summary is not None:
            changed = _apply(summary, entry)
            if isinstance(entry.event, ev.MatchEnded):
                self.games.match_ended(summary, entry)
        else:
            changed = await self._fold_stored(entry)
        if summary is not None and summary.quick_match:
            self._index_quick_match(entry)
        if summary is not None and summary.status == FINISHED:
            self._finished[table_id] = entry.position
        self.position = max(self.position, entry.position)
        await self._checkpoint_when_due()
        return changed

    def _index_quick_match(self, entry: Entry) -> None:
        """Keep where a QuickMatch with a request id was seated, until its match ends."""
        if isinstance(entry.event, ev.SeatTaken) and entry.secrets.request_id_sha256:
            digest = entry.secrets.request_id_sha256
            self._quick_match_requests[digest] = (entry.table_id, entry.event.seat)
            self._quick_match_requests_of.setdefault(entry.table_id, []).append(digest)
        elif isinstance(entry.event, ev.MatchEnded):
            for digest in self._quick_match_requests_of.pop(entry.table_id, ()):
                self._quick_match_requests.pop(digest, None)

    async def _fold_stored(self, entry: Entry) -> bool:
        """An event of a table already moved to the rows (or of no table): fold it there."""
        row = await self._log.projection_row(LOBBY, entry.table_id)
        if row is None:
            return False
        summary = lobby_pb2.Table.FromString(row.data)
        if entry.sequence <= summary.sequence:
            return False  # folded before this start's checkpoint
        changed = _apply(summary, entry)
        await self._log.save_projection(LOBBY, [row_of(summary)])
        return changed

    async def _checkpoint_when_due(self) -> None:
        if len(self._finished) >= self.move_after or (
            self.position != self._checkpointed and self._clock.monotonic() >= self._checkpoint_due
        ):
            await self._save()

    async def _save(self, *, everything: bool = False) -> None:
        """Move the settled finished tables to the rows, and checkpoint the rest, at once."""
        settled_by = self.position - self.settle_positions
        async with self._moving:
            moving = [
                table_id
                for table_id, last in self._finished.items()
                if everything or last <= settled_by
            ]
            moved = set(moving)
            kept = log_pb2.LobbyCheckpoint(
                finished_tables=self._stored_finished + len(moving),
                tables=[s for table_id, s in self.tables.items() if table_id not in moved],
                quick_match_requests=[
                    log_pb2.QuickMatchRequest(request_id_sha256=digest, table_id=table, seat=seat)
                    for digest, (table, seat) in self._quick_match_requests.items()
                ],
            )
            self._checkpoint_due = self._clock.monotonic() + self.checkpoint_interval
            try:
                await self.games.flush()  # before a checkpoint passes their matches' ends
                await self._log.save_projection(
                    LOBBY,
                    [row_of(self.tables[table_id]) for table_id in moving],
                    ProjectionCheckpoint(self.position, kept.SerializeToString()),
                )
            except (LogUnavailable, LogClosed) as error:
                # Nothing is lost: the tables stay here, and the next checkpoint tries again.
                log.warning("lobby checkpoint not written", reason=str(error))
                return
            for table_id in moving:
                del self.tables[table_id]
                del self._finished[table_id]
            self._stored_finished += len(moving)
            self._checkpointed = self.position

    def _refresh_gauges(self) -> None:
        counts = dict.fromkeys(TABLE_STATUS_NAMES.values(), 0)
        waiting_quick = 0
        for summary in self.tables.values():
            counts[TABLE_STATUS_NAMES[summary.status]] += 1
            if summary.quick_match and summary.status == lobby_pb2.TABLE_STATUS_WAITING:
                waiting_quick += sum(seat.occupied for seat in summary.seats)
        counts[TABLE_STATUS_NAMES[FINISHED]] += self._stored_finished
        for status, count in counts.items():
            metrics.TABLES.labels(status).set(count)
        metrics.QUICK_MATCH_WAITING.set(waiting_quick)

    def summary(self, table_id: str) -> lobby_pb2.Table | None:
        """The table's summary when it is in memory (every table not finished is), else None."""
        return self.tables.get(table_id)

    def quick_match_seat(self, request_digest: bytes) -> tuple[str, int] | None:
        """The (table, seat) a QuickMatch with this request-id digest took, while its match
        is not over."""
        return self._quick_match_requests.get(request_digest)

    async def find(self, table_id: str) -> lobby_pb2.Table | None:
        """The table's summary, from memory or the rows; None when the lobby has not seen it."""
        summary = self.tables.get(table_id)
        if summary is not None or not table_id or "\x00" in table_id:
            return summary  # (PostgreSQL text cannot hold a NUL: no table id has one)
        row = await self._log.projection_row(LOBBY, table_id)
        return None if row is None else lobby_pb2.Table.FromString(row.data)

    async def page(
        self,
        *,
        status: int,
        public_only: bool,
        page_size: int,
        page_token: str,
        default_size: int,
        max_size: int,
    ) -> tuple[list[lobby_pb2.Table], str]:
        """One page of the tables (of ``status``, unless 0; without the private ones when
        ``public_only``), the newest first, and the next page's token ("" at the end).

        The tables in memory and the rows are merged without reading the rows before the page:
        a page at offset ``o`` of ``size`` holds no row below ``o - len(in memory)``.
        """
        offset, size = paging.window(page_size, page_token, default_size, max_size)
        async with self._moving:
            here = sorted(
                (
                    summary
                    for summary in self.tables.values()
                    if (not status or summary.status == status)
                    and not (public_only and summary.private)
                ),
                key=_order,
                reverse=True,
            )
            if status not in (0, FINISHED):
                return paging.page(
                    here,
                    page_size=page_size,
                    page_token=page_token,
                    default_size=default_size,
                    max_size=max_size,
                )
            # Another replica may have stored a finished table this one still has in memory
            # (this one's view of it is the one it lists).
            excluded = [summary.table_id for summary in here]
            first_row = max(0, offset - len(here))
            rows = await self._rows(public_only, first_row, offset + size - first_row + 1, excluded)
            if first_row and not rows:  # fewer rows than that: read them from the first
                first_row = 0
                rows = await self._rows(public_only, 0, offset + size + 1, excluded)
        if first_row:
            oldest_above = _order(rows[0])
            above = sum(1 for summary in here if _order(summary) > oldest_above)
            base = first_row + above
            here = [summary for summary in here if _order(summary) < oldest_above]
        else:
            base = 0
        merged = list(heapq.merge(rows, here, key=_order, reverse=True))
        start = offset - base
        more = len(merged) > start + size
        return merged[start : start + size], str(offset + size) if more else ""

    async def _rows(
        self, public_only: bool, offset: int, limit: int, excluded: list[str]
    ) -> list[lobby_pb2.Table]:
        rows = await self._log.projection_rows(
            LOBBY, listed_only=public_only, offset=offset, limit=limit, excluded=excluded
        )
        return [lobby_pb2.Table.FromString(row.data) for row in rows]

    def waiting_table_ids(self) -> list[str]:
        """Tables waiting for players (each is in memory: only finished tables leave it)."""
        return [
            table_id
            for table_id, summary in self.tables.items()
            if summary.status == lobby_pb2.TABLE_STATUS_WAITING
        ]

    def active_table_ids(self) -> list[str]:
        """Tables whose match is being played."""
        return [
            table_id
            for table_id, summary in self.tables.items()
            if summary.status == lobby_pb2.TABLE_STATUS_PLAYING
        ]

    def finished_rated_ids(self) -> list[str]:
        """Rated tables whose match is over."""
        return [
            table_id
            for table_id, summary in self.tables.items()
            if summary.rated and summary.status == lobby_pb2.TABLE_STATUS_FINISHED
        ]

    def open_quick_match_tables(self, rated: bool = False) -> list[lobby_pb2.Table]:
        """Quick-match tables (rated ones, or unrated ones) with a free seat, oldest first."""
        found = [
            summary
            for summary in self.tables.values()
            if summary.quick_match
            and summary.rated == rated
            and summary.status == lobby_pb2.TABLE_STATUS_WAITING
            and not all(seat.occupied for seat in summary.seats)
        ]
        return sorted(found, key=lambda summary: summary.create_time.ToNanoseconds())


def _order(summary: lobby_pb2.Table) -> tuple[int, str]:
    """A listing's order, newest first (the rows' ``sort_key`` and ``key``)."""
    return summary.create_time.ToNanoseconds(), summary.table_id


def row_of(summary: lobby_pb2.Table) -> ProjectionRow:
    return ProjectionRow(
        key=summary.table_id,
        sort_key=summary.create_time.ToNanoseconds(),
        listed=not summary.private,
        version=summary.sequence,
        data=summary.SerializeToString(),
    )


def _apply(summary: lobby_pb2.Table, entry: Entry) -> bool:
    """Fold a table's next entry into its summary; True when it changed what the gauges count."""
    summary.sequence = entry.sequence
    match entry.event:
        case ev.SeatTaken(seat=number, name=name, bot=bot):
            seat = summary.seats[number]
            seat.occupied, seat.player_name, seat.bot = True, name, bot
            seat.account_id = entry.message.seat_taken.account_id
        case ev.SeatLeft(seat=number):
            seat = summary.seats[number]
            seat.occupied, seat.player_name, seat.bot = False, "", False
            seat.account_id = ""
        case ev.HandStarted(hand_number=number):
            summary.status = lobby_pb2.TABLE_STATUS_PLAYING
            summary.hand_number = number
        case ev.HandScored(sides=sides):
            del summary.scores[:]
            summary.scores.extend(side.total_score for side in sides)
        case ev.MatchEnded():
            summary.status = lobby_pb2.TABLE_STATUS_FINISHED
    return isinstance(entry.event, _COUNTED_TYPES)


#: The kinds of event that change more of a summary than its sequence (see ``_apply``, and
#: the quick-match index), by their ``spades.v1.Event`` oneof names.
_SHOWN_KINDS = frozenset(
    {"table_created", "seat_taken", "seat_left", "hand_started", "hand_scored", "match_ended"}
)

#: The events that change a table's status or seats, the things the gauges count.
_COUNTED_TYPES = (ev.SeatTaken, ev.SeatLeft, ev.HandStarted, ev.MatchEnded)


def _new_summary(entry: Entry, event: ev.TableCreated) -> lobby_pb2.Table:
    rules = event.rules
    created = entry.message.table_created
    return lobby_pb2.Table(
        table_id=entry.table_id,
        name=created.name,
        rules=protocol.rules_to_proto(rules),
        badges=rules.badges(),
        private=created.private,
        quick_match=created.quick_match,
        rated=created.rated,
        status=lobby_pb2.TABLE_STATUS_WAITING,
        seats=[
            lobby_pb2.SeatStatus(seat=protocol.seat_to_proto(seat)) for seat in range(rules.players)
        ],
        scores=[0] * len(rules.sides),
        sequence=entry.sequence,
        create_time=timestamp(entry.recorded_at),
    )


async def open_table(
    store: TableStore,
    projection: LobbyProjection,
    decided: Decided,
    *,
    table_id: str = "",
    request_id: str = "",
) -> Table:
    """Start a new table's log with what was decided (see ``decide_new_table``), and return
    once the lobby lists it (so the caller's next GetTable finds it).

    A call with a client ``request_id`` gives ``table_id``, derived from it
    (``tokens.request_table_id``): when that table exists already (the same request through
    another replica, or a retry racing the first call), the log's expected version refuses the
    second creation and that table is this call's outcome too."""
    try:
        table = await store.create(table_id or tokens.new_table_id(), decided)
    except VersionConflict:
        earlier = await created_before(store, projection, table_id, request_id)
        if earlier is None:
            raise
        return earlier
    await projection.caught_up(table.entries[-1].position)
    return table


async def created_before(
    store: TableStore, projection: LobbyProjection, table_id: str, request_id: str
) -> Table | None:
    """The table a call with ``request_id`` created as ``table_id``, None if it made none."""
    if not request_id:
        return None
    try:
        table = await store.load(table_id)
    except errors.RequestError as error:
        if error.code is grpc.StatusCode.NOT_FOUND:
            return None
        raise
    if table.created_by_request != tokens.digest(request_id):
        raise errors.refuse(
            Reason.REQUEST_ID_REUSED,
            "this request_id was used for another call; send a fresh one",
        )
    await projection.caught_up(table.entries[0].position)
    log.info("table creation retried", table_id=table_id)
    return table
