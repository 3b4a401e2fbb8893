"""The SDK's tournament calls, async and sync, against a real server: create, list (paged),
enter, withdraw, and a tournament that starts at its start time."""

from __future__ import annotations

import asyncio
import time

import grpc
import pytest

from spades import protocol
from spades.client import SpadesClient, SyncSpadesClient
from spades.engine import Rules
from spades.v1 import tournament_pb2, tournament_pb2_grpc
from tests.support.backends import Storages
from tests.support.servers import running_server

pytestmark = pytest.mark.asyncio
OPERATOR = "operator-token-for-tournament-tests-0123456789"


async def test_the_sdk_creates_lists_enters_and_withdraws(storage: Storages) -> None:
    async with running_server(storage(), operator_token=OPERATOR, tournament_poll=0.1) as server:
        address = f"127.0.0.1:{server.port}"

        def organise() -> list[str]:
            with SyncSpadesClient(address) as sync:
                made = [
                    sync.create_tournament(
                        f"Cup {n}", boards=1, start_when_entrants=4, operator_token=OPERATOR
                    ).tournament_id
                    for n in range(3)
                ]
                first, token = sync.list_tournaments(page_size=2)
                rest, last = sync.list_tournaments(page_size=2, page_token=token)
                assert token and not last
                assert [t.tournament_id for t in first + rest] == made[::-1]  # newest first
                return made

        made = await asyncio.to_thread(organise)
        async with SpadesClient(address) as client:
            ada = (await client.create_account("Ada")).key
            bob = (await client.create_account("Bob")).key
        async with SpadesClient(address, account_key=ada) as as_ada:
            entered = await as_ada.enter_tournament(made[0])
            assert [e.name for e in entered.entrants] == ["Ada"]

        def withdraw() -> tournament_pb2.Tournament:
            with SyncSpadesClient(address, account_key=ada) as sync:
                return sync.withdraw_tournament(made[0])

        assert list((await asyncio.to_thread(withdraw)).entrants) == []
        async with SpadesClient(address, account_key=bob) as as_bob:
            got = await as_bob.get_tournament(made[0])
            assert got.status == tournament_pb2.TOURNAMENT_STATUS_ENTERING
            assert got.settings.rules.max_hands == 1  # the rules play the boards


async def test_a_tournament_starts_at_its_start_time(storage: Storages) -> None:
    async with running_server(storage(), operator_token=OPERATOR, tournament_poll=0.1) as server:
        address = f"127.0.0.1:{server.port}"
        async with SpadesClient(address) as client, grpc.aio.insecure_channel(address) as channel:
            # (the SDK creates tournaments without a start time: the stub sends one)
            stub = tournament_pb2_grpc.TournamentServiceStub(channel)
            settings = tournament_pb2.TournamentSettings(
                name="Timed Cup",
                format=tournament_pb2.TOURNAMENT_FORMAT_ROUND_ROBIN,
                rules=protocol.rules_to_proto(Rules()),
                boards=1,
            )
            start_at = time.time() + 0.5
            settings.start_time.FromNanoseconds(int(start_at * 1e9))
            tid = (
                await stub.CreateTournament(
                    tournament_pb2.CreateTournamentRequest(settings=settings),
                    metadata=(("spades-operator-token", OPERATOR),),
                )
            ).tournament.tournament_id
            for name in ("Early", "Late"):
                key = (await client.create_account(name)).key
                async with SpadesClient(address, account_key=key) as own:
                    await own.enter_tournament(tid)
            # Answered before the start time, it is still taking entries (a loaded machine may
            # take longer than that to make the accounts: the log's times are checked below).
            status = (await client.get_tournament(tid)).status
            if time.time() < start_at:
                assert status == tournament_pb2.TOURNAMENT_STATUS_ENTERING
            for _ in range(200):
                got = await client.get_tournament(tid)
                if got.status == tournament_pb2.TOURNAMENT_STATUS_RUNNING:
                    break
                await asyncio.sleep(0.05)
            assert got.status == tournament_pb2.TOURNAMENT_STATUS_RUNNING
            assert got.rounds == 1 and len(got.pairings[0].pairings[0].table_ids) == 2
            # Never before its start time, and with both entries (the log's own times).
            events = list((await client.tournament_record(tid)).events)
            kinds = [event.WhichOneof("kind") for event in events]
            started = events[kinds.index("started")]
            assert started.time.ToNanoseconds() >= settings.start_time.ToNanoseconds()
            assert kinds[: kinds.index("started")].count("entered") == 2
