"""A Swiss tournament: each round pairs entrants of like standings who have not met, and the
offline check recomputes every round's pairings from the events before it."""

from __future__ import annotations

import asyncio
from itertools import combinations
from pathlib import Path

import pytest

from spades.client import SpadesClient
from spades.engine import Rules
from spades.records.tournament import swiss_round, verify_tournament
from spades_bots.heuristic import HeuristicBot
from spades_bots.random_bot import RandomBot
from tests.support.players import AccountPlayer
from tests.support.servers import running_server

OPERATOR = "operator-token-for-tournament-tests-0123456789"


def test_a_swiss_round_avoids_rematches_and_gives_the_bye_to_the_lowest_without_one() -> None:
    ranked = ["a", "b", "c", "d", "e"]
    pairs = swiss_round(ranked, {frozenset("ab"), frozenset("cd")}, {"e"})
    assert pairs == [("a", "c"), ("b", "e"), ("d", "")]
    # When only rematches are left, it pairs in order rather than fail.
    every = {frozenset(pair) for pair in combinations("abcd", 2)}
    assert swiss_round(["a", "b", "c", "d"], every, set()) == [("a", "b"), ("c", "d")]


@pytest.mark.asyncio
async def test_a_swiss_of_six_plays_three_rounds_without_a_rematch(tmp_path: Path) -> None:
    # On SQLite only: the log's part is the round robin's (both backends, test_tournament_flow).
    async with running_server(
        tmp_path / "swiss.db", operator_token=OPERATOR, tournament_poll=0.2
    ) as server:
        address = f"127.0.0.1:{server.port}"
        async with SpadesClient(address) as client:
            cup = await client.create_tournament(
                "Swiss Cup",
                rules=Rules(),
                boards=1,
                start_when_entrants=6,
                swiss_rounds=3,
                operator_token=OPERATOR,
            )
            players = []
            for n in range(6):
                key = (await client.create_account(f"Swiss {n}")).key
                async with SpadesClient(address, account_key=key) as own:
                    await own.enter_tournament(cup.tournament_id)
                make = HeuristicBot if n % 2 else (lambda n=n: RandomBot(seed=n))
                players.append(AccountPlayer(address, key, make))
            runs = [asyncio.create_task(player.run()) for player in players]
            try:
                async with asyncio.timeout(120):
                    async for update in client.watch_tournament(cup.tournament_id):
                        if update.event.WhichOneof("kind") == "ended":
                            break
            finally:
                for run in runs:
                    run.cancel()
                for player in players:
                    await player.stop()
            final = await client.get_tournament(cup.tournament_id)
            record = await client.tournament_record(cup.tournament_id)
    assert final.rounds == 3 and len(final.pairings) == 3
    met = [
        frozenset((p.home_account_id, p.away_account_id))
        for paired in final.pairings
        for p in paired.pairings
    ]
    assert len(met) == 9 and len(set(met)) == 9  # three pairings a round, no rematch
    checked = verify_tournament(record)  # the pairings recomputed from the standings too
    assert checked.tables == 18
    assert all(line.won + line.tied + line.lost == 3 for line in final.standings.lines)
