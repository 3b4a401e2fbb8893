"""LobbyService: create, list, inspect, join and leave tables; the quick-match queue.

A thin servicer: requests are checked (:mod:`spades_server.checks`), decided
(:mod:`spades_server.decisions`) and run through the
:class:`~spades_server.tables.TableStore` like every other command; listings come from the
lobby's projection (:mod:`spades_server.projection`).
"""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import structlog

from spades import protocol
from spades.engine import Rules, new_match
from spades.v1 import lobby_pb2, lobby_pb2_grpc
from spades.wire import house_bot_kind
from spades_server import errors, tokens
from spades_server.auth import authenticate, seat_token_from
from spades_server.checks import MAX_PLAYER_NAME, MAX_TABLE_NAME, check_name, rules_of, seat_or_any
from spades_server.decisions import decide_join, decide_leave, decide_new_table
from spades_server.house import HousePool
from spades_server.limits import Limits
from spades_server.projection import LobbyProjection, open_table
from spades_server.tables import Table, TableStore

log = structlog.get_logger(__name__)
Context = grpc.aio.ServicerContext[Any, Any]

#: RULES.md section 1: a quick match plays the default rules, capped at 25 hands, so that
#: players who overbid (random bots do) cannot keep a table going forever.
QUICK_MATCH_RULES = Rules(max_hands=25)

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 100


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
        rules = rules_of(request.rules)
        self._limits.check_table_creation(context)
        join_code = tokens.new_join_code() if request.private else ""
        table = await self._create(name, rules, private=request.private, join_code=join_code)
        return lobby_pb2.CreateTableResponse(
            table=await self._summary(table.table_id), join_code=join_code
        )

    async def _create(
        self, name: str, rules: Rules, *, private: bool, join_code: str, quick_match: bool = False
    ) -> Table:
        decided = decide_new_table(
            new_match(rules),
            name=name,
            private=private,
            join_code=join_code,
            quick_match=quick_match,
        )
        table = await open_table(self._store, self._projection, decided)
        log.info("table created", table_id=table.table_id, private=private, quick_match=quick_match)
        return table

    async def _summary(self, table_id: str) -> lobby_pb2.Table:
        summary = await self._projection.find(table_id)
        if summary is None:
            raise errors.not_found(f"there is no table {table_id!r}")
        return summary

    async def ListTables(
        self, request: lobby_pb2.ListTablesRequest, context: Context
    ) -> lobby_pb2.ListTablesResponse:
        tables, next_token = await self._projection.page(
            status=request.status,
            public_only=True,
            page_size=request.page_size,
            page_token=request.page_token,
            default_size=DEFAULT_PAGE_SIZE,
            max_size=MAX_PAGE_SIZE,
        )
        return lobby_pb2.ListTablesResponse(tables=tables, next_page_token=next_token)

    async def GetTable(
        self, request: lobby_pb2.GetTableRequest, context: Context
    ) -> lobby_pb2.GetTableResponse:
        return lobby_pb2.GetTableResponse(table=await self._summary(request.table_id))

    async def JoinTable(
        self, request: lobby_pb2.JoinTableRequest, context: Context
    ) -> lobby_pb2.JoinTableResponse:
        name = check_name(request.player_name, "the player name", MAX_PLAYER_NAME)
        seat = seat_or_any(request.seat)
        return await self._join(request.table_id, seat, name, request.bot, request.join_code)

    async def _join(
        self, table_id: str, seat: int | None, name: str, bot: bool, join_code: str
    ) -> lobby_pb2.JoinTableResponse:
        if not table_id:
            raise errors.invalid("table_id is required")
        token = tokens.new_seat_token(table_id)
        _, entries = await self._store.execute(
            table_id, lambda table: decide_join(table, seat, name, bot, join_code, token)
        )
        await self._projection.caught_up(entries[-1].position)
        seat_taken = getattr(entries[0].event, "seat", 0)
        log.debug("seat taken", table_id=table_id, seat=seat_taken, sequence=entries[0].sequence)
        return lobby_pb2.JoinTableResponse(
            table_id=table_id, seat=protocol.seat_to_proto(seat_taken), seat_token=token
        )

    async def LeaveTable(
        self, request: lobby_pb2.LeaveTableRequest, context: Context
    ) -> lobby_pb2.LeaveTableResponse:
        token = seat_token_from(context)
        table, seat = await authenticate(self._store, token)
        _, entries = await self._store.execute(
            table.table_id, lambda latest: decide_leave(latest, seat, token)
        )
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
                    seated = await self._join(summary.table_id, None, name, request.bot, "")
                except errors.RequestError as error:
                    if error.code is grpc.StatusCode.FAILED_PRECONDITION:
                        continue  # filled or started meanwhile (another replica): next table
                    raise
                return self._quick_matched(address, seated)
            table = await self._create(
                "Quick match", QUICK_MATCH_RULES, private=False, join_code="", quick_match=True
            )
            seated = await self._join(table.table_id, None, name, request.bot, "")
            return self._quick_matched(address, seated)

    def _quick_matched(
        self, address: str, seated: lobby_pb2.JoinTableResponse
    ) -> lobby_pb2.QuickMatchResponse:
        seat = protocol.seat_from_proto(seated.seat)
        self._limits.quick_match_seated(address, seated.table_id, seat)
        return lobby_pb2.QuickMatchResponse(seat=seated)

    def _waiting(self, table_id: str, seat: int) -> bool:
        """Whether ``seat`` at ``table_id`` is still taken at a table that has not started."""
        summary = self._projection.summary(table_id)
        return (
            summary is not None
            and summary.status == lobby_pb2.TABLE_STATUS_WAITING
            and summary.seats[seat].occupied
        )

    async def AddHouseBot(
        self, request: lobby_pb2.AddHouseBotRequest, context: Context
    ) -> lobby_pb2.AddHouseBotResponse:
        # The pool joins through this same service (house.py): the table's own checks apply.
        if self._house_bots is None:
            raise errors.precondition("this server runs no house bots")
        kind = house_bot_kind(request.kind)
        if kind is None:
            raise errors.invalid(f"there is no house bot kind {request.kind}")
        seat = seat_or_any(request.seat)
        bot = await self._house_bots.add(request.table_id, seat, kind, request.join_code)
        return lobby_pb2.AddHouseBotResponse(
            table_id=bot.table_id, seat=protocol.seat_to_proto(bot.seat), player_name=bot.name
        )
