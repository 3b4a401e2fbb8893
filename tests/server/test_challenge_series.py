"""A challenge for a series of matches through a real server on both log backends: the flow
opens the next match when one ends, tells every party each table, and records each match's
scores and winner and the series' wins; a series longer than a bot's manifest declares (or
than the maximum) is refused, changing nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from spades import protocol
from spades.bot.account import AccountRunner, accept_all
from spades.client import SpadesClient
from spades.engine import Rules
from spades.manifest import manifest_of
from spades.v1 import challenge_pb2, challenge_pb2_grpc
from spades_bots.random_bot import RandomBot
from spades_server.app.server import SpadesServer
from spades_server.domain import challenges
from spades_server.store import challenge_store, codecs
from tests.support.accounts import bearer
from tests.support.refusals import refused_unchanged

pytestmark = pytest.mark.asyncio

Code = grpc.StatusCode
ONE_HAND = Rules(max_hands=1)


async def test_a_series_of_three_is_played_match_after_match_and_its_result_kept(
    server: SpadesServer,
) -> None:
    address = f"127.0.0.1:{server.port}"
    async with SpadesClient(address) as anonymous:
        made = {name: await anonymous.create_account(name, kind="bot") for name in ("Ada", "Bea")}
    ada, bea = (SpadesClient(address, account_key=made[name].key) for name in ("Ada", "Bea"))
    try:
        for client in (ada, bea):
            await client.set_manifest(manifest_of(max_series=3))
        bea_id = made["Bea"].account.account_id
        challenge = await ada.create_challenge([bea_id], ONE_HAND, series_length=3)
        assert (challenge.series_length, challenge.series, challenge.series_wins) == (3, (), (0, 0))
        runners = [AccountRunner(c, RandomBot, policy=accept_all, max_games=2) for c in (ada, bea)]
        tasks = [asyncio.create_task(runner.run()) for runner in runners]
        try:
            async with asyncio.timeout(180):
                while not (shown := await ada.get_challenge(challenge.challenge_id)).series_over:
                    await asyncio.sleep(0.1)
        finally:
            for runner in runners:
                runner.stop()
            await asyncio.gather(*tasks)
    finally:
        await ada.close()
        await bea.close()

    # Three tables, derived from the challenge, in order; the last is the challenge's table.
    tables = [match.table_id for match in shown.series]
    assert tables == [challenges.table_id_for(challenge.challenge_id, n) for n in range(3)]
    assert shown.table_id == tables[-1] and shown.state == "accepted"
    wins = [0, 0]
    for match in shown.series:
        table = await server.store.load(match.table_id)
        assert table.finished and table.seat_accounts[1] == bea_id
        assert list(match.scores) == list(table.state.scores)
        if match.winning_side:
            wins[match.winning_side - 1] += 1
    assert list(shown.series_wins) == wins
    # The stream records each match's end once, each but the last naming the next table.
    rows = await server.log.read(challenge_store.stream_of(challenge.challenge_id))
    ended = [codecs.decode_challenge(r).match_ended for r in rows[-3:]]
    assert [e.match.table_id for e in ended] == tables
    assert [e.next_table_id for e in ended] == [*tables[1:], ""]


async def test_a_series_longer_than_a_manifest_declares_is_refused(server: SpadesServer) -> None:
    address = f"127.0.0.1:{server.port}"
    async with SpadesClient(address) as anonymous:
        bot = await anonymous.create_account("Owl", kind="bot")
        person = await anonymous.create_account("Pat", kind="person")
    async with grpc.aio.insecure_channel(address) as channel:
        stub = challenge_pb2_grpc.ChallengeServiceStub(channel)
        as_pat = bearer(person.key)

        def create(series_length: int) -> Any:
            request = challenge_pb2.CreateChallengeRequest(
                opponent_ids=[bot.account.account_id],
                rules=protocol.rules_to_proto(ONE_HAND),
                series_length=series_length,
            )
            return stub.CreateChallenge(request, metadata=as_pat)

        # A bot without a manifest plays single matches only; a person plays any series.
        await refused_unchanged(server, create(2), Code.FAILED_PRECONDITION, "SERIES_NOT_DECLARED")
        await refused_unchanged(
            server,
            create(100),
            Code.INVALID_ARGUMENT,
            "SERIES_LENGTH_OUT_OF_RANGE",
            "series_length",
        )
        async with SpadesClient(address, account_key=bot.key) as owl:
            await owl.set_manifest(manifest_of(max_series=2))
            made = (await create(2)).challenge
            assert made.series_length == 2
            # Its manifest changed before it answered: its acceptance is refused.
            await owl.set_manifest(manifest_of())
            accept = challenge_pb2.AcceptChallengeRequest(challenge_id=made.challenge_id)
            await refused_unchanged(
                server,
                stub.AcceptChallenge(accept, metadata=bearer(bot.key)),
                Code.FAILED_PRECONDITION,
                "SERIES_NOT_DECLARED",
            )
