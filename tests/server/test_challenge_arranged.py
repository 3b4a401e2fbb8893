"""A person arranging a match of four bots (as from the web's "Online now"): the person
challenges four bots, holds no seat, and the bots play; a bot may not arrange one, and a
person challenging a person still holds a seat. Through a real server on both log backends."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from spades import protocol
from spades.bot.account import AccountRunner, accept_all
from spades.client import SpadesClient
from spades.engine import Rules
from spades.v1 import challenge_pb2, challenge_pb2_grpc
from spades_bots.random_bot import RandomBot
from spades_server.app.server import SpadesServer
from tests.support.accounts import bearer
from tests.support.refusals import refused_unchanged

pytestmark = pytest.mark.asyncio

Code = grpc.StatusCode
NAMES = ("North Bot", "East Bot", "South Bot", "West Bot")


async def test_a_person_arranges_four_bots_who_play_without_the_person(
    server: SpadesServer,
) -> None:
    address = f"127.0.0.1:{server.port}"
    async with SpadesClient(address) as anonymous:
        pat = await anonymous.create_account("Pat", kind="person")
        kim = await anonymous.create_account("Kim", kind="person")
        bots = [await anonymous.create_account(name, kind="bot") for name in NAMES]
    ids = [bot.account.account_id for bot in bots]
    seating = dict(enumerate(ids))
    clients = [SpadesClient(address, account_key=bot.key) for bot in bots]
    try:
        async with SpadesClient(address, account_key=pat.key) as person:
            made = await person.create_challenge(ids, Rules(max_hands=1), seating=seating)
            assert made.seating == seating and pat.account.account_id not in made.seating.values()
            runners = [AccountRunner(c, RandomBot, policy=accept_all) for c in clients]
            tasks = [asyncio.create_task(runner.run()) for runner in runners]
            try:
                async with asyncio.timeout(120):
                    while sum(len(r.stats.outcomes) for r in runners) < 4:
                        await asyncio.sleep(0.1)
            finally:
                for runner in runners:
                    runner.stop()
                await asyncio.gather(*tasks)
            shown = await person.get_challenge(made.challenge_id)
            table = await server.store.load(shown.table_id)
            assert table.finished and list(table.seat_accounts.values()) == ids
            # Named for who plays: the four bots, not the person who arranged it.
            listed = await person.get_table(shown.table_id)
            assert listed.message.name == "Challenge: " + " v ".join(NAMES)
            # The person was told of the answers, never given a seat.
            told = await server.accounts.load(pat.account.account_id)
            assert (made.challenge_id, True) in told.challenges
            assert shown.table_id not in told.assigned_tables
    finally:
        for client in clients:
            await client.close()

    # A bot arranging a match holding no seat, or a person seating no one but a person: refused.
    async with grpc.aio.insecure_channel(address) as channel:
        stub = challenge_pb2_grpc.ChallengeServiceStub(channel)
        rules = protocol.rules_to_proto(Rules(max_hands=1))
        by_bot = challenge_pb2.CreateChallengeRequest(
            opponent_ids=ids[1:],
            rules=rules,
            seating=[
                challenge_pb2.SeatHolder(seat=protocol.seat_to_proto(n), account_id=ids[n % 3 + 1])
                for n in range(4)
            ],
        )
        await refused_unchanged(
            server,
            stub.CreateChallenge(by_bot, metadata=bearer(bots[0].key)),
            Code.INVALID_ARGUMENT,
            "CHALLENGE_SEATING_INVALID",
            "seating",
        )
        with_person = challenge_pb2.CreateChallengeRequest(
            opponent_ids=[kim.account.account_id],
            rules=rules,
            seating=[
                challenge_pb2.SeatHolder(
                    seat=protocol.seat_to_proto(n), account_id=kim.account.account_id
                )
                for n in range(4)
            ],
        )
        await refused_unchanged(
            server,
            stub.CreateChallenge(with_person, metadata=bearer(pat.key)),
            Code.INVALID_ARGUMENT,
            "CHALLENGE_SEATING_INVALID",
            "seating",
        )
