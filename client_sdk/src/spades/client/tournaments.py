"""Tournaments in the async client (TournamentService, docs/tournaments.md): create one (the
operator, or an account where the server allows it), enter and withdraw with the client's
account key, look one up, list them, watch the standings, and fetch the record to verify with
``spades.records.tournament.verify_tournament`` (or ``spades-record tournament FILE``).

>>> async def main() -> None:  # doctest: +SKIP
...     async with SpadesClient("127.0.0.1:50051", account_key=key) as client:
...         await client.enter_tournament(tournament_id)
...         async for update in client.watch_tournament(tournament_id):
...             print(update.standings.lines[0].name)
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import TypeVar

import grpc

from spades import protocol
from spades.client.connection import new_request_id
from spades.client.errors import from_rpc_error
from spades.engine import Rules
from spades.v1 import tournament_pb2, tournament_pb2_grpc
from spades.wire import AUTHORIZATION_METADATA, OPERATOR_TOKEN_METADATA

T = TypeVar("T")


class TournamentCalls:
    """The TournamentService calls of :class:`~spades.client.SpadesClient`."""

    _channel: grpc.aio.Channel
    timeout: float | None
    account_key: str

    async def _call(self, call: Awaitable[T]) -> T:
        raise NotImplementedError  # the client's

    async def _call_with_retries(self, call: Callable[[], Awaitable[T]]) -> T:
        raise NotImplementedError  # the client's

    @property
    def _tournaments(self) -> tournament_pb2_grpc.TournamentServiceAsyncStub:
        return tournament_pb2_grpc.TournamentServiceStub(self._channel)

    def _key_metadata(self) -> tuple[tuple[str, str], ...]:
        key = self.account_key
        return ((AUTHORIZATION_METADATA, f"Bearer {key}"),) if key else ()

    async def create_tournament(
        self,
        name: str,
        *,
        rules: Rules | None = None,
        boards: int = 2,
        start_when_entrants: int = 4,
        rated: bool = False,
        swiss_rounds: int = 0,
        operator_token: str = "",
        request_id: str | None = None,
    ) -> tournament_pb2.Tournament:
        """A new duplicate round robin (or, with ``swiss_rounds``, a Swiss of that many
        rounds); ``operator_token`` for the operator, else the client's account organises it
        (where the server allows that). Sent with ``request_id`` (a fresh one if None) and
        tried again with it while the server is unreachable."""
        settings = tournament_pb2.TournamentSettings(
            name=name,
            format=(
                tournament_pb2.TOURNAMENT_FORMAT_SWISS
                if swiss_rounds
                else tournament_pb2.TOURNAMENT_FORMAT_ROUND_ROBIN
            ),
            rules=protocol.rules_to_proto(rules or Rules()),
            boards=boards,
            start_when_entrants=start_when_entrants,
            rated=rated,
            rounds=swiss_rounds,
        )
        request = tournament_pb2.CreateTournamentRequest(
            settings=settings, request_id=request_id or new_request_id()
        )
        metadata = (
            ((OPERATOR_TOKEN_METADATA, operator_token),) if operator_token else self._key_metadata()
        )
        response = await self._call_with_retries(
            lambda: self._tournaments.CreateTournament(
                request, metadata=metadata, timeout=self.timeout
            )
        )
        return response.tournament

    async def enter_tournament(self, tournament_id: str) -> tournament_pb2.Tournament:
        """Enter the client's account (before the tournament starts)."""
        request = tournament_pb2.EnterTournamentRequest(tournament_id=tournament_id)
        response = await self._call(
            self._tournaments.EnterTournament(
                request, metadata=self._key_metadata(), timeout=self.timeout
            )
        )
        return response.tournament

    async def withdraw_tournament(self, tournament_id: str) -> tournament_pb2.Tournament:
        """Withdraw the client's account (before the tournament starts)."""
        request = tournament_pb2.WithdrawTournamentRequest(tournament_id=tournament_id)
        response = await self._call(
            self._tournaments.WithdrawTournament(
                request, metadata=self._key_metadata(), timeout=self.timeout
            )
        )
        return response.tournament

    async def get_tournament(self, tournament_id: str) -> tournament_pb2.Tournament:
        """The tournament now: settings, entrants, pairings, standings."""
        request = tournament_pb2.GetTournamentRequest(tournament_id=tournament_id)
        response = await self._call(self._tournaments.GetTournament(request, timeout=self.timeout))
        return response.tournament

    async def list_tournaments(
        self, *, page_size: int = 0, page_token: str = ""
    ) -> tuple[list[tournament_pb2.Tournament], str]:
        """One page of tournaments, newest first, and the next page's token ("" at the end)."""
        request = tournament_pb2.ListTournamentsRequest(page_size=page_size, page_token=page_token)
        response = await self._call(
            self._tournaments.ListTournaments(request, timeout=self.timeout)
        )
        return list(response.tournaments), response.next_page_token

    async def watch_tournament(
        self, tournament_id: str, after_sequence: int = 0
    ) -> AsyncGenerator[tournament_pb2.WatchTournamentResponse, None]:
        """The tournament's events after ``after_sequence``, each with the standings after it,
        until it ends. Resume from the last ``event.sequence`` seen."""
        call = self._tournaments.WatchTournament(
            tournament_pb2.WatchTournamentRequest(
                tournament_id=tournament_id, after_sequence=after_sequence
            )
        )
        try:
            async for message in call:
                yield message
        except grpc.RpcError as error:
            raise from_rpc_error(error) from error
        finally:
            call.cancel()

    async def tournament_record(self, tournament_id: str) -> tournament_pb2.TournamentRecord:
        """The tournament's record (every table's GameRecord, its events and standings)."""
        request = tournament_pb2.GetTournamentRecordRequest(tournament_id=tournament_id)
        response = await self._call(
            self._tournaments.GetTournamentRecord(request, timeout=self.timeout)
        )
        return response.record
