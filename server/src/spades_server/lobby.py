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
from spades.engine import InvalidRules, Rules, new_match, seat_name
from spades.engine import events as ev
from spades.v1 import cards_pb2, events_pb2, lobby_pb2, lobby_pb2_grpc
from spades_server import errors, metrics, tokens
from spades_server.eventlog.base import EventLog, StoredEvent
from spades_server.limits import Limits
from spades_server.tables import Table, TableStore, timestamp, to_proto_events

if TYPE_CHECKING:
    from spades_server.house import HousePool

log = structlog.get_logger(__name__)
Context = grpc.aio.ServicerContext[Any, Any]

#: RULES.md section 1: a quick match plays the default rules, capped at 25 hands, so that
#: players who overbid (random bots do) cannot keep a table going forever.
QUICK_MATCH_RULES = Rules(max_hands=25)
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
        #: Called with every event as the projection follows the log (after the rebuild).
        self.listeners: list[Callable[[StoredEvent], None]] = []

    async def start(self) -> None:
        """Rebuild from the whole log, then follow it."""
        while batch := await self._log.read_all(self.position, limit=5000):
            for stored in batch:
                self._apply(stored)
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
                if self._apply(stored):
                    self._refresh_gauges()
                for listener in self.listeners:
                    listener(stored)
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

    def _apply(self, stored: StoredEvent) -> bool:
        """Fold one event; True when it changed what the gauges count (seats or a status)."""
        self.position = max(self.position, stored.position)
        event = events_pb2.Event.FromString(stored.data)
        kind = event.WhichOneof("kind")
        if kind == "table_created":
            self.tables[stored.stream_id] = _new_summary(stored, event.table_created)
            return True
        summary = self.tables.get(stored.stream_id)
        if summary is None:
            return False
        summary.sequence = stored.version
        if kind == "seat_taken":
            player = event.seat_taken.player
            seat = summary.seats[protocol.seat_from_proto(player.seat)]
            seat.occupied, seat.player_name, seat.bot = True, player.name, player.bot
        elif kind == "seat_left":
            seat = summary.seats[protocol.seat_from_proto(event.seat_left.seat)]
            seat.occupied, seat.player_name, seat.bot = False, "", False
        elif kind == "hand_started":
            summary.status = lobby_pb2.TABLE_STATUS_PLAYING
            summary.hand_number = event.hand_started.hand_number
        elif kind == "hand_scored":
            del summary.scores[:]
            summary.scores.extend(side.total_score for side in event.hand_scored.sides)
        elif kind == "match_ended":
            summary.status = lobby_pb2.TABLE_STATUS_FINISHED
        return kind in _COUNTED_KINDS

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
_COUNTED_KINDS = frozenset(("seat_taken", "seat_left", "hand_started", "match_ended"))

_STATUS_NAMES = {
    lobby_pb2.TABLE_STATUS_WAITING: "waiting",
    lobby_pb2.TABLE_STATUS_PLAYING: "playing",
    lobby_pb2.TABLE_STATUS_FINISHED: "finished",
}


def _new_summary(stored: StoredEvent, created: events_pb2.TableCreated) -> lobby_pb2.Table:
    rules = protocol.rules_from_proto(created.rules)
    return lobby_pb2.Table(
        table_id=stored.stream_id,
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
        sequence=stored.version,
        create_time=timestamp(stored.recorded_at),
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
) -> list[events_pb2.Event]:
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
    _, engine_events = state.apply_seat(seat_wanted, name, bot=bot)
    events = to_proto_events(engine_events)
    events[0].seat_taken.seat_token_sha256 = tokens.digest(token)
    return events


async def open_table(
    store: TableStore,
    projection: LobbyProjection,
    engine_events: list[ev.Event],
    *,
    name: str,
    private: bool,
    join_code: str,
    quick_match: bool = False,
) -> Table:
    """Start a new table's log with its TableCreated (and what the server adds to it), and
    return once the lobby lists it (so the caller's next GetTable finds it)."""
    events = to_proto_events(engine_events)
    created = events[0].table_created
    created.name = name
    created.private = private
    created.quick_match = quick_match
    if join_code:
        created.join_code_sha256 = tokens.digest(join_code)
    table = await store.create(tokens.new_table_id(), events)
    stored = await store.log.read(table.table_id, after_version=table.version - 1)
    await projection.caught_up(stored[-1].position)
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
        _, engine_events = new_match(rules)
        table = await open_table(
            self._store,
            self._projection,
            engine_events,
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
        _, stored = await self._store.execute(
            table_id, lambda table: decide_join(table, seat, name, bot, join_code, token)
        )
        taken = protocol.event_from_proto(events_pb2.Event.FromString(stored[0].data))
        await self._projection.caught_up(stored[-1].position)
        seat_taken = getattr(taken, "seat", 0)
        log.debug("seat taken", table_id=table_id, seat=seat_taken, sequence=stored[0].version)
        return lobby_pb2.JoinTableResponse(
            table_id=table_id, seat=protocol.seat_to_proto(seat_taken), seat_token=token
        )

    async def LeaveTable(
        self, request: lobby_pb2.LeaveTableRequest, context: Context
    ) -> lobby_pb2.LeaveTableResponse:
        token = seat_token_from(context)
        table, seat = await authenticate(self._store, token)

        def decide(table: Table) -> list[events_pb2.Event]:
            # Checked again on the latest table: a late retry must not free a newcomer's seat.
            if not tokens.matches(token, table.seat_token_digests.get(seat, b"")):
                raise errors.unauthenticated(
                    "this seat token is not valid (or its seat was given up)"
                )
            if table.started:
                raise errors.precondition(
                    "the match has started: seats cannot be left now (you may concede)"
                )
            _, engine_events = table.state.leave_seat(seat)
            return to_proto_events(engine_events)

        _, stored = await self._store.execute(table.table_id, decide)
        await self._projection.caught_up(stored[-1].position)
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
                "Quick match", QUICK_MATCH_RULES, private=False, join_code="", quick_match=True
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
