"""Every bad tournament call has its status and reason code, and changes nothing: the
tournament's stream is exactly as long after it as before."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import pytest
import pytest_asyncio

from spades import protocol
from spades.engine import Rules
from spades.v1 import account_pb2, account_pb2_grpc, tournament_pb2, tournament_pb2_grpc
from spades_server.app.server import SpadesServer
from spades_server.store import tournament_store
from tests.support.accounts import bearer
from tests.support.backends import Storages
from tests.support.clients import rpc_error
from tests.support.refusals import assert_call_refused, nothing_written
from tests.support.servers import running_server

pytestmark = pytest.mark.asyncio
Code = grpc.StatusCode
OPERATOR = "operator-token-for-tournament-tests-0123456789"
Metadata = tuple[tuple[str, str], ...]
OP: Metadata = (("spades-operator-token", OPERATOR),)


def good_settings(**changes: object) -> tournament_pb2.TournamentSettings:
    settings = tournament_pb2.TournamentSettings(
        name="Refusal Cup",
        format=tournament_pb2.TOURNAMENT_FORMAT_ROUND_ROBIN,
        rules=protocol.rules_to_proto(Rules()),
        boards=1,
        start_when_entrants=2,
    )
    for name, value in changes.items():
        setattr(settings, name, value)
    return settings


@pytest_asyncio.fixture
async def server(storage: Storages) -> AsyncIterator[SpadesServer]:
    async with running_server(storage(), operator_token=OPERATOR) as running:
        yield running


async def stream_length(server: SpadesServer, tournament_id: str) -> int:
    return len(await server.log.read(tournament_store.stream_of(tournament_id)))


async def new_key(channel: grpc.aio.Channel, name: str) -> str:
    created = await account_pb2_grpc.AccountServiceStub(channel).CreateAccount(
        account_pb2.CreateAccountRequest(name=name, kind=account_pb2.ACCOUNT_KIND_BOT)
    )
    return created.key


async def test_entries_withdrawals_and_lookups_are_refused_with_their_codes(
    server: SpadesServer,
) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        service = tournament_pb2_grpc.TournamentServiceStub(channel)
        settings = good_settings(start_when_entrants=3)
        tid = (
            await service.CreateTournament(
                tournament_pb2.CreateTournamentRequest(settings=settings), metadata=OP
            )
        ).tournament.tournament_id
        ada, bob, cy, dee = [await new_key(channel, n) for n in ("Ada", "Bob", "Cy", "Dee")]
        enter = tournament_pb2.EnterTournamentRequest(tournament_id=tid)
        withdraw = tournament_pb2.WithdrawTournamentRequest(tournament_id=tid)
        await service.EnterTournament(enter, metadata=bearer(ada))

        # A second entry.
        length = await stream_length(server, tid)
        async with nothing_written(server):
            error = await rpc_error(service.EnterTournament(enter, metadata=bearer(ada)))
            assert_call_refused(error, Code.ALREADY_EXISTS, "ALREADY_ENTERED")
        # Withdrawing without having entered.
        async with nothing_written(server):
            error = await rpc_error(service.WithdrawTournament(withdraw, metadata=bearer(bob)))
            assert_call_refused(error, Code.FAILED_PRECONDITION, "NOT_ENTERED")
        # No key, a bad key.
        async with nothing_written(server):
            error = await rpc_error(service.EnterTournament(enter))
            assert_call_refused(error, Code.UNAUTHENTICATED, "KEY_REQUIRED")
        async with nothing_written(server):
            error = await rpc_error(service.EnterTournament(enter, metadata=bearer("spk.x.y")))
            assert_call_refused(error, Code.UNAUTHENTICATED, "KEY_NOT_VALID")
        assert await stream_length(server, tid) == length

        # Withdraw and enter again: allowed before the start.
        await service.WithdrawTournament(withdraw, metadata=bearer(ada))
        await service.EnterTournament(enter, metadata=bearer(ada))
        await service.EnterTournament(enter, metadata=bearer(bob))
        started = await service.EnterTournament(enter, metadata=bearer(cy))
        assert [e.name for e in started.tournament.entrants] == ["Ada", "Bob", "Cy"]
        # The third entry starts it (the driver, at once or on its next look).
        for _ in range(200):
            got = await service.GetTournament(
                tournament_pb2.GetTournamentRequest(tournament_id=tid)
            )
            if got.tournament.status == tournament_pb2.TOURNAMENT_STATUS_RUNNING:
                break
            await asyncio.sleep(0.05)
        assert got.tournament.status == tournament_pb2.TOURNAMENT_STATUS_RUNNING
        assert got.tournament.round == 1 and got.tournament.rounds == 3

        length = await stream_length(server, tid)
        # The tournament's driver writes meanwhile: the tournament's own stream is checked.
        error = await rpc_error(service.EnterTournament(enter, metadata=bearer(dee)))
        assert_call_refused(error, Code.FAILED_PRECONDITION, "TOURNAMENT_STARTED")
        error = await rpc_error(service.WithdrawTournament(withdraw, metadata=bearer(ada)))
        assert_call_refused(error, Code.FAILED_PRECONDITION, "TOURNAMENT_STARTED")
        assert await stream_length(server, tid) <= length + 40  # only the driver's own events
        after = await service.GetTournament(tournament_pb2.GetTournamentRequest(tournament_id=tid))
        assert [e.name for e in after.tournament.entrants] == ["Ada", "Bob", "Cy"]

        # Unknown tournaments, on every call that names one.
        unknown = "0123456789abcdef0123"
        for call in (
            service.GetTournament(tournament_pb2.GetTournamentRequest(tournament_id=unknown)),
            service.EnterTournament(
                tournament_pb2.EnterTournamentRequest(tournament_id=unknown), metadata=bearer(dee)
            ),
            service.GetTournamentRecord(
                tournament_pb2.GetTournamentRecordRequest(tournament_id=unknown)
            ),
        ):
            assert_call_refused(await rpc_error(call), Code.NOT_FOUND, "TOURNAMENT_NOT_FOUND")
        error = await rpc_error(
            service.GetTournament(tournament_pb2.GetTournamentRequest(tournament_id="x" * 65))
        )
        assert_call_refused(error, Code.INVALID_ARGUMENT, "FIELD_TOO_LONG", "tournament_id")
        assert await stream_length(server, unknown) == 0


async def test_organising_needs_the_operator_and_good_settings(server: SpadesServer) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        service = tournament_pb2_grpc.TournamentServiceStub(channel)
        key = await new_key(channel, "Would Be Organiser")
        index_before = await server.tournaments.index()
        create = tournament_pb2.CreateTournamentRequest(settings=good_settings())
        # An account, on a server where only the operator organises; nobody at all; a wrong token.
        async with nothing_written(server):
            error = await rpc_error(service.CreateTournament(create, metadata=bearer(key)))
            assert_call_refused(error, Code.PERMISSION_DENIED, "ORGANISER_NOT_ALLOWED")
        async with nothing_written(server):
            error = await rpc_error(service.CreateTournament(create))
            assert_call_refused(error, Code.PERMISSION_DENIED, "ORGANISER_NOT_ALLOWED")
        error = await rpc_error(
            service.CreateTournament(create, metadata=(("spades-operator-token", "wrong" * 8),))
        )
        assert error.code() in (Code.UNAUTHENTICATED, Code.PERMISSION_DENIED)
        # Bad settings, each naming its field.
        bad = [
            (good_settings(format=0), "INVALID_TOURNAMENT_SETTINGS", "settings.format"),
            (good_settings(boards=0), "INVALID_TOURNAMENT_SETTINGS", "settings.boards"),
            (good_settings(boards=14), "INVALID_TOURNAMENT_SETTINGS", "settings.boards"),
            (
                good_settings(start_when_entrants=1),
                "INVALID_TOURNAMENT_SETTINGS",
                "settings.start_when_entrants",
            ),
            (
                good_settings(start_when_entrants=0),
                "INVALID_TOURNAMENT_SETTINGS",
                "settings.start_when_entrants",
            ),
            (good_settings(name="x" * 65), "FIELD_TOO_LONG", "settings.name"),
            (good_settings(name="  "), "MISSING_FIELD", "name"),
        ]
        for settings, reason, field in bad:
            request = tournament_pb2.CreateTournamentRequest(settings=settings)
            async with nothing_written(server):
                error = await rpc_error(service.CreateTournament(request, metadata=OP))
                assert_call_refused(error, Code.INVALID_ARGUMENT, reason, field)
        three = good_settings()
        three.rules.players = 3
        async with nothing_written(server):
            error = await rpc_error(
                service.CreateTournament(
                    tournament_pb2.CreateTournamentRequest(settings=three), metadata=OP
                )
            )
            assert_call_refused(
                error,
                Code.INVALID_ARGUMENT,
                "INVALID_TOURNAMENT_SETTINGS",
                "settings.rules.players",
            )
        assert await server.tournaments.index() == index_before
        listed = await service.ListTournaments(tournament_pb2.ListTournamentsRequest())
        assert list(listed.tournaments) == []


async def test_a_server_that_lets_accounts_organise(storage: Storages) -> None:
    async with (
        running_server(storage(), tournaments="accounts") as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        service = tournament_pb2_grpc.TournamentServiceStub(channel)
        key = await new_key(channel, "Organiser")
        request = tournament_pb2.CreateTournamentRequest(
            settings=good_settings(), request_id="a" * 32
        )
        first = await service.CreateTournament(request, metadata=bearer(key))
        again = await service.CreateTournament(request, metadata=bearer(key))
        assert first.tournament.tournament_id == again.tournament.tournament_id
        assert first.tournament.organiser_account_id
        assert first.tournament.seed_commitment and not first.tournament.seed
        listed = await service.ListTournaments(tournament_pb2.ListTournamentsRequest())
        assert [t.tournament_id for t in listed.tournaments] == [first.tournament.tournament_id]
