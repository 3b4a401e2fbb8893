"""The lobby's projection: every table's summary, folded from the log's entries in global order.

It is rebuilt on start by reading the whole log and kept current by following it, so the listing
is never a second source of truth. It is the table directory the house bots look tables up in
(:class:`spades_server.house.TableDirectory`), and its listeners get every entry it follows
(decoded once, by the journal), so other replicas' events reach this one's cached tables.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import grpc
import structlog

from spades import protocol
from spades.engine import events as ev
from spades.reasons import Reason
from spades.v1 import lobby_pb2
from spades.wire import TABLE_STATUS_NAMES
from spades_server import errors, journal, metrics, tokens
from spades_server.eventlog.base import EventLog, StoredEvent, VersionConflict
from spades_server.journal import Entry
from spades_server.streams import is_table_stream
from spades_server.tables import Decided, Table, TableStore, timestamp

log = structlog.get_logger(__name__)


class LobbyProjection:
    """Every table's lobby summary, folded from the log in global order."""

    def __init__(self, log_: EventLog) -> None:
        self._log = log_
        self.tables: dict[str, lobby_pb2.Table] = {}
        self.position = 0
        self._advanced = asyncio.Condition()
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

    async def start(self) -> None:
        """Rebuild from the whole log, then follow it."""
        while batch := await self._log.read_all(self.position, limit=5000):
            for stored in batch:
                if not is_table_stream(stored.stream_id):
                    self.position = max(self.position, stored.position)
                else:
                    self._apply(journal.decode(stored))
        self._refresh_gauges()
        self._task = asyncio.create_task(self._follow(), name="lobby-projection")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    async def _follow(self) -> None:
        async for stored in self._log.subscribe_all(self.position):
            try:
                if not is_table_stream(stored.stream_id):
                    self.position = max(self.position, stored.position)
                    for stream_listener in self.stream_listeners:
                        stream_listener(stored)
                else:
                    entry = journal.decode(stored)  # once, for the lobby and every listener
                    if self._apply(entry):
                        self._refresh_gauges()
                    for listener in self.listeners:
                        listener(entry)
            except Exception:
                # One bad event must not stop the lobby (or every caller waiting on it).
                log.exception(
                    "event not folded", table_id=stored.stream_id, sequence=stored.version
                )
            async with self._advanced:
                self._advanced.notify_all()

    async def caught_up(self, position: int) -> None:
        """Wait until the projection has folded the event at ``position``."""
        async with self._advanced:
            await self._advanced.wait_for(lambda: self.position >= position)

    def _apply(self, entry: Entry) -> bool:
        """Fold one entry; True when it changed what the gauges count (seats or a status)."""
        self.position = max(self.position, entry.position)
        event = entry.event
        if isinstance(event, ev.TableCreated):
            self.tables[entry.table_id] = _new_summary(entry, event)
            return True
        summary = self.tables.get(entry.table_id)
        if summary is None:
            return False
        summary.sequence = entry.sequence
        match event:
            case ev.SeatTaken(seat=number, name=name, bot=bot):
                seat = summary.seats[number]
                seat.occupied, seat.player_name, seat.bot = True, name, bot
                request_digest = entry.secrets.request_id_sha256
                if summary.quick_match and request_digest:
                    self._quick_match_requests[request_digest] = (entry.table_id, number)
                    self._quick_match_requests_of.setdefault(entry.table_id, []).append(
                        request_digest
                    )
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
                for request_digest in self._quick_match_requests_of.pop(entry.table_id, ()):
                    self._quick_match_requests.pop(request_digest, None)
        return isinstance(event, _COUNTED_TYPES)

    def _refresh_gauges(self) -> None:
        counts = dict.fromkeys(TABLE_STATUS_NAMES.values(), 0)
        waiting_quick = 0
        for summary in self.tables.values():
            counts[TABLE_STATUS_NAMES[summary.status]] += 1
            if summary.quick_match and summary.status == lobby_pb2.TABLE_STATUS_WAITING:
                waiting_quick += sum(seat.occupied for seat in summary.seats)
        for status, count in counts.items():
            metrics.TABLES.labels(status).set(count)
        metrics.QUICK_MATCH_WAITING.set(waiting_quick)

    def summary(self, table_id: str) -> lobby_pb2.Table | None:
        """The table's summary, None when the lobby has not seen it."""
        return self.tables.get(table_id)

    def quick_match_seat(self, request_digest: bytes) -> tuple[str, int] | None:
        """The (table, seat) a QuickMatch with this request-id digest took, while its match
        is not over."""
        return self._quick_match_requests.get(request_digest)

    def newest_first(self, status: int = 0) -> list[lobby_pb2.Table]:
        """Every table (of ``status``, unless 0), the newest first."""
        listed = [
            summary for summary in self.tables.values() if not status or summary.status == status
        ]
        listed.sort(key=lambda summary: -summary.create_time.ToNanoseconds())
        return listed

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
