"""Two replicas on one PostgreSQL run one tournament: both drivers look at it all the time (a
short poll) and race to pair, open, seat, tell and score, yet every round is paired once, every
board scored once, every table seated once per seat, every entrant told of each round once."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest

from spades.client import SpadesClient
from spades.engine import Rules
from spades.engine import events as ev
from spades.v1 import tournament_pb2
from spades_bots.heuristic import HeuristicBot
from spades_bots.random_bot import RandomBot
from spades_server.store import journal
from tests.support.players import AccountPlayer
from tests.support.servers import replicas

pytestmark = pytest.mark.asyncio
FINISHED = tournament_pb2.TOURNAMENT_STATUS_FINISHED
OPERATOR = "operator-token-for-tournament-tests-0123456789"
FINISH_TIMEOUT = 120.0


async def test_two_replicas_never_pair_a_round_twice(tmp_path: Path) -> None:
    async with replicas(tmp_path, 2, operator_token=OPERATOR, tournament_poll=0.05) as servers:
        addresses = [f"127.0.0.1:{server.port}" for server in servers]
        async with SpadesClient(addresses[0]) as client:
            created = await client.create_tournament(
                "Replica Cup",
                rules=Rules(),
                boards=1,
                start_when_entrants=4,
                operator_token=OPERATOR,
            )
            tid = created.tournament_id
            players = []
            for n in range(4):
                address = addresses[n % 2]  # entrants on both replicas
                key = (await client.create_account(f"Replica Entrant {n}")).key
                async with SpadesClient(address, account_key=key) as own:
                    await own.enter_tournament(tid)
                make = HeuristicBot if n % 2 else (lambda n=n: RandomBot(seed=n))
                players.append(AccountPlayer(address, key, make))
            runs = [asyncio.create_task(player.run()) for player in players]
            try:
                async with asyncio.timeout(FINISH_TIMEOUT):
                    # Besides the drivers' own looks, both replicas are made to advance at once.
                    while (await client.get_tournament(tid)).status != FINISHED:
                        await asyncio.gather(
                            *(server.tournament_driver.advance(tid) for server in servers)
                        )
                        await asyncio.sleep(0.05)
            finally:
                for run in runs:
                    run.cancel()
                for player in players:
                    await player.stop()
        tournament = await servers[1].tournaments.load(tid)
        events = tournament.events
        kinds = Counter(e.WhichOneof("kind") for e in events)
        assert kinds["started"] == 1 and kinds["ended"] == 1
        assert kinds["round_paired"] == 3
        assert [e.round_paired.round for e in events if e.round_paired.round] == [1, 2, 3]
        boards = [
            (e.board_scored.round, e.board_scored.pairing, e.board_scored.board)
            for e in events
            if e.WhichOneof("kind") == "board_scored"
        ]
        assert len(boards) == len(set(boards)) >= 6
        matches = [
            (e.match_scored.round, e.match_scored.pairing)
            for e in events
            if e.WhichOneof("kind") == "match_scored"
        ]
        assert sorted(matches) == [(r, p) for r in (1, 2, 3) for p in (0, 1)]
        # Each table: four seats taken, once each, by the accounts the pairing names.
        for paired in tournament.paired:
            for pairing in paired.pairings:
                for table_id in pairing.table_ids:
                    rows = await servers[0].log.read(table_id)
                    taken = [
                        entry.event.seat
                        for entry in map(journal.decode, rows)
                        if isinstance(entry.event, ev.SeatTaken)
                    ]
                    assert sorted(taken) == [0, 1, 2, 3], table_id
        # Each entrant was told of each round once, and of the end once (just after it).
        for entrant in tournament.entrants:
            for _ in range(200):
                account = await servers[0].accounts.load(entrant.account_id)
                told = Counter(e.message.WhichOneof("kind") for e in account.entries)
                if told["tournament_finished"]:
                    break
                await asyncio.sleep(0.05)
            assert told["tournament_round_paired"] == 3
            assert told["table_assigned"] == 6
            assert told["tournament_finished"] == 1
