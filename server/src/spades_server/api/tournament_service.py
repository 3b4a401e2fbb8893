"""TournamentService: create, enter, withdraw, look up, list and watch tournaments, and their
records. A thin servicer over :mod:`spades_server.domain.tournaments`: who may call is settled here,
what is appended is decided there."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import grpc
import structlog

from spades.reasons import Reason
from spades.records import tournament as rules_of_play
from spades.v1 import tournament_pb2, tournament_pb2_grpc
from spades.wire import OPERATOR_TOKEN_METADATA
from spades_server.api.auth import (
    OperatorGate,
    bearer_key_from,
    caller_address,
    metadata_value,
)
from spades_server.domain import errors, paging, tournaments
from spades_server.domain.accounts import Account
from spades_server.domain.checks import check_request_id
from spades_server.eventlog.base import LogClosed
from spades_server.processes.tournament_driver import TournamentDriver
from spades_server.store import codecs, tournament_store
from spades_server.store.account_store import AccountStore
from spades_server.store.table_store import TableStore
from spades_server.store.tournament_store import TournamentStore
from spades_server.streams.records import record_of

log = structlog.get_logger(__name__)
Context = grpc.aio.ServicerContext[Any, Any]

DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100
MAX_ID = 64


def _check_id(tournament_id: str) -> str:
    if not tournament_id:
        raise errors.refuse(
            Reason.MISSING_FIELD, "tournament_id is required", field="tournament_id"
        )
    if len(tournament_id) > MAX_ID:
        raise errors.refuse(
            Reason.FIELD_TOO_LONG,
            f"tournament_id has {len(tournament_id)} characters; at most {MAX_ID}",
            field="tournament_id",
        )
    return tournament_id


class TournamentServicer(tournament_pb2_grpc.TournamentServiceServicer):
    def __init__(
        self,
        store: TournamentStore,
        driver: TournamentDriver,
        account_store: AccountStore,
        tables: TableStore,
        operator: OperatorGate,
        organisers: str,
        shutdown: asyncio.Event | None = None,
    ) -> None:
        self._store = store
        self._driver = driver
        self._accounts = account_store
        self._tables = tables
        self._operator = operator
        self._organisers = organisers
        self._shutdown = shutdown or asyncio.Event()

    async def _account(self, context: Context) -> Account:
        key = bearer_key_from(context)
        if key is None:
            raise errors.refuse(
                Reason.KEY_REQUIRED,
                "send the account's key as the 'authorization: Bearer <key>' metadata",
            )
        return await self._accounts.authenticate(key, address=caller_address(context))

    async def CreateTournament(
        self, request: tournament_pb2.CreateTournamentRequest, context: Context
    ) -> tournament_pb2.CreateTournamentResponse:
        organiser = ""
        if metadata_value(context, OPERATOR_TOKEN_METADATA) is not None:
            self._operator.check(context)
        elif self._organisers == "accounts" and bearer_key_from(context) is not None:
            organiser = (await self._account(context)).account_id
        else:
            raise errors.refuse(
                Reason.ORGANISER_NOT_ALLOWED,
                "only the operator organises tournaments on this server (send the operator "
                "token as 'spades-operator-token')"
                + ("" if self._organisers == "operator" else ", or an account its key"),
            )
        settings = tournaments.check_settings(request.settings)
        request_id = check_request_id(request.request_id)
        tournament = await self._store.create(settings, organiser, request_id)
        self._driver.watch(tournament.tournament_id)
        log.info("tournament created", tournament_id=tournament.tournament_id)
        return tournament_pb2.CreateTournamentResponse(tournament=tournament.to_proto())

    async def EnterTournament(
        self, request: tournament_pb2.EnterTournamentRequest, context: Context
    ) -> tournament_pb2.EnterTournamentResponse:
        tournament_id = _check_id(request.tournament_id)
        account = await self._account(context)
        tournament = await self._store.execute(
            tournament_id, lambda latest: tournaments.decide_entry(latest, account)
        )
        self._driver.watch(tournament_id)
        return tournament_pb2.EnterTournamentResponse(tournament=tournament.to_proto())

    async def WithdrawTournament(
        self, request: tournament_pb2.WithdrawTournamentRequest, context: Context
    ) -> tournament_pb2.WithdrawTournamentResponse:
        tournament_id = _check_id(request.tournament_id)
        account = await self._account(context)
        tournament = await self._store.execute(
            tournament_id,
            lambda latest: tournaments.decide_withdrawal(latest, account.account_id),
        )
        return tournament_pb2.WithdrawTournamentResponse(tournament=tournament.to_proto())

    async def GetTournament(
        self, request: tournament_pb2.GetTournamentRequest, context: Context
    ) -> tournament_pb2.GetTournamentResponse:
        tournament = await self._store.load(_check_id(request.tournament_id))
        return tournament_pb2.GetTournamentResponse(tournament=tournament.to_proto())

    async def ListTournaments(
        self, request: tournament_pb2.ListTournamentsRequest, context: Context
    ) -> tournament_pb2.ListTournamentsResponse:
        newest_all = list(reversed(await self._store.index()))
        listed_ids, next_token = paging.page(
            newest_all,
            page_size=request.page_size,
            page_token=request.page_token,
            default_size=DEFAULT_PAGE_SIZE,
            max_size=MAX_PAGE_SIZE,
        )
        listed = [(await self._store.load(tid)).to_proto(detail=False) for tid in listed_ids]
        return tournament_pb2.ListTournamentsResponse(
            tournaments=listed, next_page_token=next_token
        )

    async def WatchTournament(
        self, request: tournament_pb2.WatchTournamentRequest, context: Context
    ) -> AsyncIterator[tournament_pb2.WatchTournamentResponse]:
        tournament_id = _check_id(request.tournament_id)
        tournament = await self._store.load(tournament_id)
        if request.after_sequence > tournament.version:
            raise errors.refuse(
                Reason.SEQUENCE_AHEAD,
                f"after_sequence {request.after_sequence} is past the tournament's last event "
                f"({tournament.version})",
            )
        seen = tournament.events[: request.after_sequence]
        rows = self._store.log.subscribe(
            tournament_store.stream_of(tournament_id), request.after_sequence
        )
        shutdown = asyncio.ensure_future(self._shutdown.wait())
        next_row: asyncio.Future[Any] | None = None
        try:
            while True:
                next_row = asyncio.ensure_future(anext(rows))
                await asyncio.wait({next_row, shutdown}, return_when=asyncio.FIRST_COMPLETED)
                if shutdown.done():
                    next_row.cancel()
                    raise errors.refuse(
                        Reason.SHUTTING_DOWN,
                        "the server is shutting down; reconnect and resume from your last sequence",
                    )
                try:
                    entry = codecs.decode_tournament(next_row.result())
                except (LogClosed, StopAsyncIteration):
                    raise errors.refuse(
                        Reason.SHUTTING_DOWN, "the server is shutting down; reconnect"
                    ) from None
                seen.append(entry.message)
                yield tournament_pb2.WatchTournamentResponse(
                    event=entry.message, standings=rules_of_play.standings(seen)
                )
                if entry.message.WhichOneof("kind") == "ended":
                    return
        finally:
            if next_row is not None:
                next_row.cancel()  # a client that went away leaves it waiting on the log
            shutdown.cancel()
            with contextlib.suppress(Exception):
                await rows.aclose()

    async def GetTournamentRecord(
        self, request: tournament_pb2.GetTournamentRecordRequest, context: Context
    ) -> tournament_pb2.GetTournamentRecordResponse:
        tournament = await self._store.load(_check_id(request.tournament_id))
        record = tournament_pb2.TournamentRecord(
            format_version=1,
            tournament_id=tournament.tournament_id,
            events=tournament.events,
            standings=tournament.standings(),
        )
        for paired in tournament.paired:
            for pairing in paired.pairings:
                for table_id in pairing.table_ids:
                    try:
                        table = await self._tables.load(table_id)
                    except errors.RequestError:
                        continue  # not opened yet (the driver opens it in a moment)
                    record.tables.append(record_of(table))
        return tournament_pb2.GetTournamentRecordResponse(record=record)
