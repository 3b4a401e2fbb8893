"""The lobby: a projection of every table's log, and the LobbyService that creates and seats.

The projection is rebuilt on start by reading the whole log and kept current by following it,
so the listing is never a second source of truth. Commands that change a table go through the
:class:`~spades_server.tables.TableStore`, like every other command.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import grpc
import structlog

from spades import protocol
from spades.engine import InvalidRules, MatchState, Rules, new_match, seat_name
from spades.engine import events as ev
from spades.v1 import cards_pb2, lobby_pb2, lobby_pb2_grpc
from spades_server import errors, journal, metrics, tokens
from spades_server.eventlog.base import EventLog
from spades_server.journal import Entry, Listing, Secrets
from spades_server.limits import Limits
from spades_server.tables import Decided, Table, TableStore, timestamp

if TYPE_CHECKING:
    from spades_server.house import HousePool

log = structlog.get_logger(__name__)
Context = grpc.aio.ServicerContext[Any, Any]

MAX_TABLE_NAME = 64
MAX_PLAYER_NAME = 32
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 100
SEAT_TOKEN_METADATA = "spades-seat-token"
_PRINTABLE = re.compile(r"^[^\x00-\x1f\x7f]+$")


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

    async def start(self) -> None:
        """Rebuild from the whole log, then follow it."""
        while batch := await self._log.read_all(self.position, limit=5000):
            for stored in batch:
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
            case ev.SeatLeft(seat=number):
                seat = summary.seats[number]
                seat.occupied, seat.player_name, seat.bot = False, "", False
            case ev.HandStarted(hand_number=number):
                summary.status = lobby_pb2.TABLE_STATUS_PLAYING
                summary.hand_number = number
            case ev.HandScored(sides=sides):
                del summary.scores[:]
                summary.scores.extend(side.total_score for side in sides)
            case ev.MatchEnded():
                summary.status = lobby_pb2.TABLE_STATUS_FINISHED
        return isinstance(event, _COUNTED_TYPES)

    def _refresh_gauges(self) -> None:
        counts = dict.fromkeys(("waiting", "playing", "finished"), 0)
        waiting_quick = 0
        for summary in self.tables.values():
            counts[_STATUS_NAMES[summary.status]] += 1
            if summary.quick_match and summary.status == lobby_pb2.TABLE_STATUS_WAITING:
                waiting_quick += sum(seat.occupied for seat in summary.seats)
        for status, count in counts.items():
            metrics.TABLES.labels(status).set(count)
        metrics.QUICK_MATCH_WAITING.set(waiting_quick)

    def active_table_ids(self) -> list[str]:
        """Tables whose match is being played."""
        return [
            table_id
            for table_id, summary in self.tables.items()
            if summary.status == lobby_pb2.TABLE_STATUS_PLAYING
        ]

    def open_quick_match_tables(self) -> list[lobby_pb2.Table]:
        """Quick-match tables with a free seat, oldest first."""
        found = [
            summary
            for summary in self.tables.values()
            if summary.quick_match
            and summary.status == lobby_pb2.TABLE_STATUS_WAITING
            and not all(seat.occupied for seat in summary.seats)
        ]
        return sorted(found, key=lambda summary: summary.create_time.ToNanoseconds())


#: The events that change a table's status or seats, the things the gauges count.
_COUNTED_TYPES = (ev.SeatTaken, ev.SeatLeft, ev.HandStarted, ev.MatchEnded)

_STATUS_NAMES = {
    lobby_pb2.TABLE_STATUS_WAITING: "waiting",
    lobby_pb2.TABLE_STATUS_PLAYING: "playing",
    lobby_pb2.TABLE_STATUS_FINISHED: "finished",
}


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
        status=lobby_pb2.TABLE_STATUS_WAITING,
        seats=[
            lobby_pb2.SeatStatus(seat=protocol.seat_to_proto(seat)) for seat in range(rules.players)
        ],
        scores=[0] * len(rules.sides),
        sequence=entry.sequence,
        create_time=timestamp(entry.recorded_at),
    )


def check_name(name: str, what: str, limit: int) -> str:
    cleaned = name.strip()
    if not 1 <= len(cleaned) <= limit or not _PRINTABLE.match(cleaned):
        raise errors.invalid(f"{what} must be 1 to {limit} printable characters")
    return cleaned


def seat_token_from(context: Context) -> str:
    for key, value in context.invocation_metadata() or ():
        if key == SEAT_TOKEN_METADATA:
            return value if isinstance(value, str) else value.decode()
    raise errors.unauthenticated(f"send your seat token in the {SEAT_TOKEN_METADATA!r} metadata")


async def authenticate(store: TableStore, token: str) -> tuple[Table, int]:
    """The table and seat a seat token is good for (a player's, or a substitute's while it
    plays the seat), or UNAUTHENTICATED."""
    table_id = tokens.table_of_token(token)
    if table_id is None:
        raise errors.unauthenticated("this is not a seat token")
    try:
        table = await store.load(table_id)
    except errors.RequestError:
        raise errors.unauthenticated("this seat token is not valid") from None
    for seat, token_digest in table.seat_token_digests.items():
        if tokens.matches(token, token_digest):
            return table, seat
    # A substitute (a house bot playing for an absent player) while the substitution lasts.
    for seat, token_digest in table.substitute_token_digests.items():
        if tokens.matches(token, token_digest):
            return table, seat
    raise errors.unauthenticated("this seat token is not valid (or its seat was given up)")


def decide_join(
    table: Table, seat_wanted: int, name: str, bot: bool, join_code: str, token: str
) -> Decided:
    if table.private and not (join_code and tokens.matches(join_code, table.join_code_sha256)):
        raise errors.denied(
            "this private table needs its join code"
            if not join_code
            else "that is not this table's join code"
        )
    if table.started:
        raise errors.precondition("the match at this table has already started")
    state = table.state
    if seat_wanted >= state.players_count:
        raise errors.invalid(f"this table has {state.players_count} seats")
    if seat_wanted < 0:
        free = [seat for seat, player in enumerate(state.players) if player is None]
        if not free:
            raise errors.precondition("every seat at this table is taken")
        seat_wanted = free[0]
    elif state.players[seat_wanted] is not None:
        raise errors.precondition(f"{seat_name(seat_wanted)} is already taken")
    return Decided.of(
        state.apply_seat(seat_wanted, name, bot=bot),
        secrets=Secrets(seat_token_sha256=tokens.digest(token)),
    )


async def open_table(
    store: TableStore,
    projection: LobbyProjection,
    created: tuple[MatchState, list[ev.Event]],
    *,
    name: str,
    private: bool,
    join_code: str,
    quick_match: bool = False,
) -> Table:
    """Start a new table's log with its TableCreated (``created``: the engine's new match, and
    what the server adds to it), and return once the lobby lists it (so the caller's next
    GetTable finds it)."""
    decided = Decided.of(
        created,
        secrets=Secrets(join_code_sha256=tokens.digest(join_code) if join_code else b""),
        listing=Listing(name, private, quick_match),
    )
    table = await store.create(tokens.new_table_id(), decided)
    await projection.caught_up(table.entries[-1].position)
    return table


class LobbyServicer(lobby_pb2_grpc.LobbyServiceServicer):
    """Create, list, inspect, join and leave tables; the quick-match queue."""

    def __init__(
        self,
        store: TableStore,
        projection: LobbyProjection,
        limits: Limits | None = None,
        house_bots: HousePool | None = None,
    ) -> None:
        self._store = store
        self._projection = projection
        self._quick_match_lock = asyncio.Lock()
        self._limits = limits or Limits()
        self._house_bots = house_bots

    async def CreateTable(
        self, request: lobby_pb2.CreateTableRequest, context: Context
    ) -> lobby_pb2.CreateTableResponse:
        name = check_name(request.name, "the table name", MAX_TABLE_NAME)
        try:
            rules = protocol.rules_from_proto(request.rules)
        except InvalidRules as error:
            raise errors.invalid(f"rules.{error.field}: {error.reason}") from error
        self._limits.check_table_creation(context)
        join_code = tokens.new_join_code() if request.private else ""
        table = await self._create(name, rules, private=request.private, join_code=join_code)
        return lobby_pb2.CreateTableResponse(table=self._summary(table), join_code=join_code)

    async def _create(
        self, name: str, rules: Rules, *, private: bool, join_code: str, quick_match: bool = False
    ) -> Table:
        table = await open_table(
            self._store,
            self._projection,
            new_match(rules),
            name=name,
            private=private,
            join_code=join_code,
            quick_match=quick_match,
        )
        log.info("table created", table_id=table.table_id, private=private, quick_match=quick_match)
        return table

    def _summary(self, table: Table) -> lobby_pb2.Table:
        summary = self._projection.tables.get(table.table_id)
        if summary is None:
            raise errors.not_found(f"there is no table {table.table_id!r}")
        return summary

    async def ListTables(
        self, request: lobby_pb2.ListTablesRequest, context: Context
    ) -> lobby_pb2.ListTablesResponse:
        page_size = request.page_size or DEFAULT_PAGE_SIZE
        if not 1 <= page_size <= MAX_PAGE_SIZE:
            raise errors.invalid(f"page_size must be 1 to {MAX_PAGE_SIZE}")
        try:
            offset = int(request.page_token or "0")
        except ValueError:
            raise errors.invalid("page_token is not one this server gave out") from None
        if offset < 0:
            raise errors.invalid("page_token is not one this server gave out")
        listed = [
            summary
            for summary in self._projection.tables.values()
            if not summary.private and (not request.status or summary.status == request.status)
        ]
        listed.sort(key=lambda summary: -summary.create_time.ToNanoseconds())
        page = listed[offset : offset + page_size]
        more = offset + page_size < len(listed)
        return lobby_pb2.ListTablesResponse(
            tables=page, next_page_token=str(offset + page_size) if more else ""
        )

    async def GetTable(
        self, request: lobby_pb2.GetTableRequest, context: Context
    ) -> lobby_pb2.GetTableResponse:
        summary = self._projection.tables.get(request.table_id)
        if summary is None:
            raise errors.not_found(f"there is no table {request.table_id!r}")
        return lobby_pb2.GetTableResponse(table=summary)

    async def JoinTable(
        self, request: lobby_pb2.JoinTableRequest, context: Context
    ) -> lobby_pb2.JoinTableResponse:
        name = check_name(request.player_name, "the player name", MAX_PLAYER_NAME)
        seat = _seat_or_any(request.seat)
        return await self._join(request.table_id, seat, name, request.bot, request.join_code)

    async def _join(
        self, table_id: str, seat: int, name: str, bot: bool, join_code: str
    ) -> lobby_pb2.JoinTableResponse:
        if not table_id:
            raise errors.invalid("table_id is required")
        token = tokens.new_seat_token(table_id)
        _, entries = await self._store.execute(
            table_id, lambda table: decide_join(table, seat, name, bot, join_code, token)
        )
        await self._projection.caught_up(entries[-1].position)
        seat_taken = getattr(entries[0].event, "seat", 0)
        log.info("seat taken", table_id=table_id, seat=seat_taken, sequence=entries[0].sequence)
        return lobby_pb2.JoinTableResponse(
            table_id=table_id, seat=protocol.seat_to_proto(seat_taken), seat_token=token
        )

    async def LeaveTable(
        self, request: lobby_pb2.LeaveTableRequest, context: Context
    ) -> lobby_pb2.LeaveTableResponse:
        token = seat_token_from(context)
        table, seat = await authenticate(self._store, token)

        def decide(table: Table) -> Decided:
            # Checked again on the latest table: a late retry must not free a newcomer's seat.
            if not tokens.matches(token, table.seat_token_digests.get(seat, b"")):
                raise errors.unauthenticated(
                    "this seat token is not valid (or its seat was given up)"
                )
            if table.started:
                raise errors.precondition(
                    "the match has started: seats cannot be left now (you may concede)"
                )
            return Decided.of(table.state.leave_seat(seat))

        _, entries = await self._store.execute(table.table_id, decide)
        await self._projection.caught_up(entries[-1].position)
        return lobby_pb2.LeaveTableResponse(
            table_id=table.table_id, seat=protocol.seat_to_proto(seat)
        )

    async def QuickMatch(
        self, request: lobby_pb2.QuickMatchRequest, context: Context
    ) -> lobby_pb2.QuickMatchResponse:
        name = check_name(request.player_name, "the player name", MAX_PLAYER_NAME)
        async with self._quick_match_lock:
            address = self._limits.check_quick_match(context, self._waiting)
            for summary in self._projection.open_quick_match_tables():
                try:
                    seated = await self._join(summary.table_id, -1, name, request.bot, "")
                except errors.RequestError as error:
                    if error.code is grpc.StatusCode.FAILED_PRECONDITION:
                        continue  # filled or started meanwhile (another replica): next table
                    raise
                return self._quick_matched(address, seated)
            table = await self._create(
                "Quick match", Rules(), private=False, join_code="", quick_match=True
            )
            seated = await self._join(table.table_id, -1, name, request.bot, "")
            return self._quick_matched(address, seated)

    def _quick_matched(
        self, address: str, seated: lobby_pb2.JoinTableResponse
    ) -> lobby_pb2.QuickMatchResponse:
        seat = protocol.seat_from_proto(seated.seat)
        self._limits.quick_match_seated(address, seated.table_id, seat)
        return lobby_pb2.QuickMatchResponse(seat=seated)

    def _waiting(self, table_id: str, seat: int) -> bool:
        """Whether ``seat`` at ``table_id`` is still taken at a table that has not started."""
        summary = self._projection.tables.get(table_id)
        return (
            summary is not None
            and summary.status == lobby_pb2.TABLE_STATUS_WAITING
            and summary.seats[seat].occupied
        )

    async def AddHouseBot(
        self, request: lobby_pb2.AddHouseBotRequest, context: Context
    ) -> lobby_pb2.AddHouseBotResponse:
        # The pool joins through this same service (house.py): the table's own checks apply.
        from spades_server.house import KINDS

        if self._house_bots is None:
            raise errors.precondition("this server runs no house bots")
        if request.kind not in KINDS:
            raise errors.invalid(f"there is no house bot kind {request.kind}")
        seat = _seat_or_any(request.seat)
        bot = await self._house_bots.add(
            request.table_id, None if seat < 0 else seat, KINDS[request.kind], request.join_code
        )
        return lobby_pb2.AddHouseBotResponse(
            table_id=bot.table_id, seat=protocol.seat_to_proto(bot.seat), player_name=bot.name
        )


def _seat_or_any(seat: cards_pb2.Seat.ValueType) -> int:
    if seat == cards_pb2.SEAT_UNSPECIFIED:
        return -1
    if seat not in cards_pb2.Seat.values():
        raise errors.invalid(f"there is no seat {seat}")
    return protocol.seat_from_proto(seat)
