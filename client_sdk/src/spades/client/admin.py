"""The operator's client: AdminService calls, authenticated with the server's operator token.

>>> import asyncio
>>> async def close(address: str, token: str, table_id: str) -> str:
...     async with AdminClient(address, token) as admin:
...         return (await admin.close_table(table_id)).status
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc

from spades import protocol
from spades.client.client import DEFAULT_CHANNEL_OPTIONS, Channel, CreatedTable, TableInfo
from spades.client.connection import new_request_id
from spades.engine import Rules
from spades.v1 import admin_pb2, admin_pb2_grpc, events_pb2, lobby_pb2

#: The metadata key the operator token travels in.
OPERATOR_TOKEN_METADATA = "spades-operator-token"
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class TableDetail:
    """A table as the operator sees it: private ones too, with how it ended."""

    table: TableInfo
    preset_deals: int
    #: "target_score", "closed", ...; "" while the match is not over.
    end_reason: str


class AdminClient(Channel):
    """AdminService on one server, with the operator token (``--operator-token``); over TLS
    with ``credentials``, as :class:`~spades.client.SpadesClient`."""

    def __init__(
        self,
        address: str,
        operator_token: str,
        *,
        credentials: grpc.ChannelCredentials | None = None,
        channel_options: Sequence[tuple[str, Any]] = DEFAULT_CHANNEL_OPTIONS,
        timeout: float | None = 10.0,
    ) -> None:
        super().__init__(
            address, credentials=credentials, channel_options=channel_options, timeout=timeout
        )
        self._metadata = ((OPERATOR_TOKEN_METADATA, operator_token),)
        self.admin: admin_pb2_grpc.AdminServiceAsyncStub = admin_pb2_grpc.AdminServiceStub(
            self._channel
        )

    async def close_table(self, table_id: str) -> TableInfo:
        """End a table's match with no winner (the engine's close)."""
        response = await self._call(
            self.admin.CloseTable(
                admin_pb2.CloseTableRequest(table_id=table_id),
                metadata=self._metadata,
                timeout=self.timeout,
            )
        )
        return TableInfo.from_proto(response.table)

    async def list_tables(
        self, status: str | None = None, *, page_size: int = 0, page_token: str = ""
    ) -> tuple[list[TableDetail], str]:
        """One page of every table (private ones too); and the next page's token, or ""."""
        response = await self._call(
            self.admin.ListTablesDetailed(
                admin_pb2.ListTablesDetailedRequest(
                    status=_status(status), page_size=page_size, page_token=page_token
                ),
                metadata=self._metadata,
                timeout=self.timeout,
            )
        )
        details = [
            TableDetail(
                TableInfo.from_proto(detail.table),
                detail.preset_deals,
                _end_reason(detail.end_reason),
            )
            for detail in response.tables
        ]
        return details, response.next_page_token

    async def create_table_with_deals(
        self,
        name: str,
        deals: Sequence[Sequence[Sequence[int]]],
        rules: Rules | None = None,
        *,
        seed: bytes = b"",
        private: bool = False,
        request_id: str | None = None,
    ) -> CreatedTable:
        """A table whose first hands are ``deals`` (each: one hand of card numbers per seat, in
        seat order), the rest shuffled from ``seed`` (a fresh one when empty). Retried with
        ``request_id`` (a fresh one if None) while the server is unreachable: one table."""
        request = admin_pb2.CreateTableWithDealsRequest(
            name=name,
            rules=protocol.rules_to_proto(rules or Rules()),
            deals=[
                events_pb2.Deal(
                    hands=[
                        events_pb2.DealtHand(cards=protocol.cards_to_proto(hand)) for hand in deal
                    ]
                )
                for deal in deals
            ],
            seed=seed,
            private=private,
            request_id=request_id or new_request_id(),
        )
        response = await self._call_with_retries(
            lambda: self.admin.CreateTableWithDeals(
                request, metadata=self._metadata, timeout=self.timeout
            )
        )
        return CreatedTable(TableInfo.from_proto(response.table), response.join_code)


def _hand(cards: Sequence[int]) -> events_pb2.DealtHand:
    return events_pb2.DealtHand(cards=protocol.cards_to_proto(cards))


def _status(status: str | None) -> lobby_pb2.TableStatus.ValueType:
    if not status:
        return lobby_pb2.TABLE_STATUS_UNSPECIFIED
    return lobby_pb2.TableStatus.Value(f"TABLE_STATUS_{status.upper()}")


def _end_reason(reason: int) -> str:
    if reason == 0:
        return ""
    name = events_pb2.MatchEndReason.Name(reason)  # type: ignore[arg-type]
    return name.removeprefix("MATCH_END_REASON_").lower()
