"""AdminService: the operator's calls, each needing the operator token.

The token is the server's ``--operator-token`` (``SPADES_OPERATOR_TOKEN``); callers send it as
the ``spades-operator-token`` metadata, checked by :class:`~spades_server.api.auth.OperatorGate`.
With no token configured, every call is refused.

A table made here is made like any other (its TableCreated event, through the TableStore), with
the given deals as the engine's preset deals: they stay secret like the seed (in the journal's
secrets) and are dealt by the engine, never by the server.
"""

from __future__ import annotations

from typing import Any

import grpc
import structlog

from spades import protocol
from spades.engine import InvalidRules, new_match
from spades.engine import events as ev
from spades.engine.shuffle import SEED_BYTES
from spades.reasons import Reason
from spades.v1 import admin_pb2, admin_pb2_grpc, lobby_pb2
from spades_server.api.auth import OperatorGate
from spades_server.domain import errors, tokens
from spades_server.domain.checks import (
    MAX_TABLE_NAME,
    check_name,
    check_request_id,
    require_id,
    rules_of,
)
from spades_server.domain.decisions import decide_close, decide_new_table
from spades_server.domain.tables import Table
from spades_server.processes.projection import LobbyProjection, created_before, open_table
from spades_server.store import journal
from spades_server.store.table_store import TableStore

log = structlog.get_logger(__name__)
Context = grpc.aio.ServicerContext[Any, Any]

DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000
#: More deals than any match plays; the message-size limit bounds a request too.
MAX_DEALS = 500


class AdminServicer(admin_pb2_grpc.AdminServiceServicer):
    def __init__(self, store: TableStore, projection: LobbyProjection, operator_token: str) -> None:
        self._store = store
        self._projection = projection
        self._gate = OperatorGate(operator_token)

    async def CloseTable(
        self, request: admin_pb2.CloseTableRequest, context: Context
    ) -> admin_pb2.CloseTableResponse:
        self._gate.check(context)
        require_id(request.table_id)
        _, entries = await self._store.execute(request.table_id, decide_close)
        await self._projection.caught_up(entries[-1].position)
        log.info("table closed by the operator", table_id=request.table_id)
        return admin_pb2.CloseTableResponse(table=await self._projection.find(request.table_id))

    async def ListTablesDetailed(
        self, request: admin_pb2.ListTablesDetailedRequest, context: Context
    ) -> admin_pb2.ListTablesDetailedResponse:
        self._gate.check(context)
        listed, next_token = await self._projection.page(
            status=request.status,
            public_only=False,
            page_size=request.page_size,
            page_token=request.page_token,
            default_size=DEFAULT_PAGE_SIZE,
            max_size=MAX_PAGE_SIZE,
        )
        details = [await self._detail(summary) for summary in listed]
        return admin_pb2.ListTablesDetailedResponse(tables=details, next_page_token=next_token)

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
        name = check_name(request.name, "the table name", MAX_TABLE_NAME, "name")
        rules = rules_of(request.rules)
        request_id = check_request_id(request.request_id)
        table_id = (
            tokens.request_table_id(request_id, tokens.CREATED_BY_ADMIN) if request_id else ""
        )
        earlier = await created_before(self._store, self._projection, table_id, request_id)
        if earlier is not None:
            return await self._created(earlier, request_id)
        if len(request.deals) > MAX_DEALS:
            raise errors.refuse(Reason.TOO_MANY_DEALS, f"at most {MAX_DEALS} deals", field="deals")
        if request.seed and len(request.seed) != SEED_BYTES:
            raise errors.refuse(
                Reason.INVALID_SEED,
                f"seed must be {SEED_BYTES} bytes, or empty for a fresh one",
                field="seed",
            )
        try:
            deals = [
                [
                    protocol.cards_from_proto(hand.cards, f"deals[{number}].hands[{seat}].cards")
                    for seat, hand in enumerate(deal.hands)
                ]
                for number, deal in enumerate(request.deals)
            ]
        except protocol.ProtocolError as error:
            raise errors.refuse(Reason.INVALID_DEALS, str(error), field=error.field) from error
        try:
            created = new_match(rules, seed=request.seed or None, preset_deals=deals)
        except InvalidRules as error:
            raise errors.refuse(
                error.code, f"{error.field}: {error.reason}", field="deals"
            ) from error
        join_code = ""
        if request.private:
            join_code = (
                tokens.request_join_code(request_id, table_id)
                if request_id
                else tokens.new_join_code()
            )
        decided = decide_new_table(
            created,
            name=name,
            private=request.private,
            join_code=join_code,
            request_digest=tokens.digest(request_id) if request_id else b"",
        )
        table = await open_table(
            self._store, self._projection, decided, table_id=table_id, request_id=request_id
        )
        log.info("table created by the operator", table_id=table.table_id, deals=len(deals))
        return await self._created(table, request_id, join_code)

    async def _created(
        self, table: Table, request_id: str, join_code: str = ""
    ) -> admin_pb2.CreateTableWithDealsResponse:
        table_id = table.table_id
        if request_id:  # a retry's code is derived again (only its digest is in the log)
            join_code = tokens.request_join_code(request_id, table_id) if table.private else ""
        summary = await self._projection.find(table_id) or lobby_pb2.Table(table_id=table_id)
        return admin_pb2.CreateTableWithDealsResponse(table=summary, join_code=join_code)
