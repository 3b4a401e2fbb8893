"""AdminService: the operator's calls, each needing the operator token.

The token is the server's ``--operator-token`` (``SPADES_OPERATOR_TOKEN``); callers send it as
the ``spades-operator-token`` metadata. It is compared in constant time (as SHA-256 digests, so
its length does not show either). With no token configured, every call is refused.

A table made here is made like any other (its TableCreated event, through the TableStore), with
the given deals as the engine's preset deals: they stay secret like the seed and are dealt by
the engine, never by the server.
"""

from __future__ import annotations

from typing import Any

import grpc
import structlog

from spades import protocol
from spades.engine import InvalidRules, new_match
from spades.engine import events as ev
from spades.engine.shuffle import SEED_BYTES
from spades.v1 import admin_pb2, admin_pb2_grpc, lobby_pb2
from spades_server import errors, journal, tokens
from spades_server.lobby import MAX_TABLE_NAME, LobbyProjection, check_name, open_table
from spades_server.tables import Decided, Table, TableStore

log = structlog.get_logger(__name__)
Context = grpc.aio.ServicerContext[Any, Any]

OPERATOR_TOKEN_METADATA = "spades-operator-token"
DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000
#: More deals than any match plays; the message-size limit bounds a request too.
MAX_DEALS = 500


class OperatorGate:
    """Checks the operator token of a call."""

    def __init__(self, operator_token: str) -> None:
        self._digest = tokens.digest(operator_token) if operator_token else b""

    def check(self, context: Context) -> None:
        if not self._digest:
            raise errors.denied("no operator token is configured, so admin calls are refused")
        sent = None
        for key, value in context.invocation_metadata() or ():
            if key == OPERATOR_TOKEN_METADATA:
                sent = value if isinstance(value, str) else value.decode(errors="replace")
        if not sent:
            raise errors.unauthenticated(
                f"send the operator token in the {OPERATOR_TOKEN_METADATA!r} metadata"
            )
        if not tokens.matches(sent, self._digest):
            raise errors.denied("that is not the operator token")


class AdminServicer(admin_pb2_grpc.AdminServiceServicer):
    def __init__(self, store: TableStore, projection: LobbyProjection, operator_token: str) -> None:
        self._store = store
        self._projection = projection
        self._gate = OperatorGate(operator_token)

    async def CloseTable(
        self, request: admin_pb2.CloseTableRequest, context: Context
    ) -> admin_pb2.CloseTableResponse:
        self._gate.check(context)
        if not request.table_id:
            raise errors.invalid("table_id is required")

        def decide(table: Table) -> Decided:
            # The engine ends the match (MatchEnded, no winners, then SeedRevealed); an
            # IllegalAction ("the match is already over") becomes FAILED_PRECONDITION.
            return Decided.of(table.state.close())

        _, entries = await self._store.execute(request.table_id, decide)
        await self._projection.caught_up(entries[-1].position)
        log.info("table closed by the operator", table_id=request.table_id)
        summary = self._projection.tables.get(request.table_id)
        return admin_pb2.CloseTableResponse(table=summary)

    async def ListTablesDetailed(
        self, request: admin_pb2.ListTablesDetailedRequest, context: Context
    ) -> admin_pb2.ListTablesDetailedResponse:
        self._gate.check(context)
        page_size = request.page_size or DEFAULT_PAGE_SIZE
        if not 1 <= page_size <= MAX_PAGE_SIZE:
            raise errors.invalid(f"page_size must be 1 to {MAX_PAGE_SIZE}")
        token = request.page_token or "0"
        if not token.isdigit():
            raise errors.invalid("page_token is not one this server gave out")
        offset = int(token)
        listed = [
            summary
            for summary in self._projection.tables.values()
            if not request.status or summary.status == request.status
        ]
        listed.sort(key=lambda summary: -summary.create_time.ToNanoseconds())
        page = listed[offset : offset + page_size]
        details = []
        for summary in page:
            details.append(await self._detail(summary))
        more = offset + page_size < len(listed)
        return admin_pb2.ListTablesDetailedResponse(
            tables=details, next_page_token=str(offset + page_size) if more else ""
        )

    async def _detail(self, summary: lobby_pb2.Table) -> admin_pb2.TableDetail:
        """From the log's first and last events (the table is not loaded, nor cached)."""
        detail = admin_pb2.TableDetail(table=summary)
        log_ = self._store.log
        for stored in await log_.read(summary.table_id, limit=1):
            created = journal.decode(stored).event
            if isinstance(created, ev.TableCreated):
                detail.preset_deals = len(created.preset_deals or ())
        if summary.status == lobby_pb2.TABLE_STATUS_FINISHED:
            for stored in await log_.read(summary.table_id, after_version=summary.sequence - 2):
                message = journal.decode(stored).message
                if message.WhichOneof("kind") == "match_ended":
                    detail.end_reason = message.match_ended.reason
        return detail

    async def CreateTableWithDeals(
        self, request: admin_pb2.CreateTableWithDealsRequest, context: Context
    ) -> admin_pb2.CreateTableWithDealsResponse:
        self._gate.check(context)
        name = check_name(request.name, "the table name", MAX_TABLE_NAME)
        try:
            rules = protocol.rules_from_proto(request.rules)
        except InvalidRules as error:
            raise errors.invalid(f"rules.{error.field}: {error.reason}") from error
        if len(request.deals) > MAX_DEALS:
            raise errors.invalid(f"at most {MAX_DEALS} deals")
        if request.seed and len(request.seed) != SEED_BYTES:
            raise errors.invalid(f"seed must be {SEED_BYTES} bytes, or empty for a fresh one")
        try:
            deals = [
                [
                    protocol.cards_from_proto(hand.cards, f"deals[{number}].hands[{seat}].cards")
                    for seat, hand in enumerate(deal.hands)
                ]
                for number, deal in enumerate(request.deals)
            ]
        except protocol.ProtocolError as error:
            raise errors.invalid(str(error)) from error
        try:
            created = new_match(rules, seed=request.seed or None, preset_deals=deals)
        except InvalidRules as error:
            raise errors.invalid(f"{error.field}: {error.reason}") from error
        join_code = tokens.new_join_code() if request.private else ""
        table = await open_table(
            self._store,
            self._projection,
            created,
            name=name,
            private=request.private,
            join_code=join_code,
        )
        table_id = table.table_id
        log.info("table created by the operator", table_id=table_id, deals=len(deals))
        summary = self._projection.tables.get(table_id) or lobby_pb2.Table(table_id=table_id)
        return admin_pb2.CreateTableWithDealsResponse(table=summary, join_code=join_code)
