"""Arena matches against a running server, through the SDK like any player.

Duplicate play needs two tables with the same deals, which only the operator can ask for
(``AdminService.CreateTableWithDeals`` with a seed), so this needs the server's operator token.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc

from spades import protocol
from spades.bot import play_match
from spades.client import SpadesClient, SpadesError
from spades.client.errors import from_rpc_error
from spades.engine import Rules
from spades.records import events_of, save_record
from spades.v1 import admin_pb2, admin_pb2_grpc
from spades_bots.arena.duplicate import (
    MatchResult,
    MatchSpec,
    record_path,
    result_from_events,
    seat_bots,
)

OPERATOR_TOKEN_METADATA = "spades-operator-token"
#: No arena match takes this long; a stuck one fails instead of hanging the run.
MATCH_TIMEOUT = 600.0


class RemoteArena:
    """Plays arena matches at ``address``; use as an async context manager."""

    def __init__(self, address: str, operator_token: str) -> None:
        self.address = address
        self._operator = ((OPERATOR_TOKEN_METADATA, operator_token),)
        self._channel = grpc.aio.insecure_channel(address)
        self._admin = admin_pb2_grpc.AdminServiceStub(self._channel)
        self.client = SpadesClient(address)

    async def __aenter__(self) -> RemoteArena:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.client.close()
        await self._channel.close(None)

    async def create_table(self, spec: MatchSpec, rules: Rules) -> str:
        """A table that deals the pair's deal set."""
        request = admin_pb2.CreateTableWithDealsRequest(
            name=f"arena {spec.name}", rules=protocol.rules_to_proto(rules), seed=spec.seed
        )
        try:
            response = await self._admin.CreateTableWithDeals(
                request, metadata=self._operator, timeout=10
            )
        except grpc.RpcError as error:
            raise from_rpc_error(error) from error
        return str(response.table.table_id)

    async def play(
        self,
        spec: MatchSpec,
        team_a: str,
        team_b: str,
        rules: Rules,
        records: str | Path | None = None,
        keep_events: bool = False,
    ) -> MatchResult:
        """Play one match on the server: a table with the pair's seed, four SDK bots."""
        table_id = await self.create_table(spec, rules)
        bots, names = seat_bots(spec, team_a, team_b, rules.players)
        tokens = []
        for seat, name in enumerate(names):
            ticket = await self.client.join_table(table_id, name, seat=seat, bot=True)
            tokens.append(ticket.token)
        await asyncio.wait_for(
            asyncio.gather(
                *(
                    play_match(self.client, bot, token, table_id=table_id)
                    for bot, token in zip(bots, tokens, strict=True)
                )
            ),
            MATCH_TIMEOUT,
        )
        record = await self.client.get_record(table_id)
        path = ""
        if records is not None:
            target = record_path(records, spec)
            target.parent.mkdir(parents=True, exist_ok=True)
            save_record(record, target)
            path = str(target)
        return result_from_events(spec, events_of(record), path, keep_events)


__all__ = ["RemoteArena", "SpadesError"]
