"""Analyses over the wire: a table played to its end by the server's house bots, the
AnalysisService's stream read to its end, and the refusal a stream ends with."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
from prometheus_client import REGISTRY

from spades.client import AdminClient, SpadesClient
from spades.engine import Rules
from spades.v1 import analysis_pb2
from spades_bots.heuristic import HeuristicBot
from spades_bots.random_bot import RandomBot
from tests.support.clients import READ_TIMEOUT
from tests.support.players import AccountPlayer
from tests.support.processes import clean_environment

#: How long a one-hand match of house bots may take to end on a loaded machine.
MATCH_TIMEOUT = 120.0


def _quick_deal() -> list[list[int]]:
    """Each seat holds one suit but for four pairs of cards swapped: a deal the double-dummy
    solver judges in well under a second a hand (a random deal takes tens of seconds on a
    loaded machine), where a card can still lose points (the bots' play loses 59 here)."""
    hands = [list(range(suit * 13, suit * 13 + 13)) for suit in range(4)]
    for (a, i), (b, j) in (
        ((0, 0), (1, 12)),
        ((2, 5), (3, 0)),
        ((0, 12), (2, 3)),
        ((1, 4), (3, 11)),
    ):
        hands[a][i], hands[b][j] = hands[b][j], hands[a][i]
    return hands


#: The one hand of the tables the analysis tests analyse.
QUICK_DEAL = _quick_deal()


async def played_out_table(address: str, operator_token: str) -> str:
    """A one-hand table dealt :data:`QUICK_DEAL` (by the operator: AdminService) that four
    house bots play to its end, once it has ended (a spectator's Watch stream ends with the
    match)."""
    rules = Rules(max_hands=1)
    async with AdminClient(address, operator_token) as admin:
        table_id = (await admin.create_table_with_deals("Played out", [QUICK_DEAL], rules)).table_id
    async with SpadesClient(address) as client:
        for _ in range(rules.players):
            await client.add_house_bot(table_id)
        async with asyncio.timeout(MATCH_TIMEOUT):
            async for _ in client.watch(table_id):
                pass
    return table_id


#: The rules of the tournaments analysed: no Nil (the double-dummy solver's slowest positions
#: are Nil's, docs/solver.md), one board a pairing.
TOURNAMENT_RULES = Rules(nil_allowed=False)


async def entered_tournament(
    address: str, operator_token: str, names: tuple[str, str] = ("Heuristic", "Random")
) -> tuple[str, list[AccountPlayer]]:
    """A duplicate tournament of two new bot accounts named ``names`` (a heuristic and a random
    one) that starts when its second entrant enters: its id and its players, the first one
    entered (so it is still entering). :func:`played_tournament` plays it."""
    async with SpadesClient(address) as client:
        cup = await client.create_tournament(
            "Judged Cup",
            rules=TOURNAMENT_RULES,
            boards=1,
            start_when_entrants=2,
            operator_token=operator_token,
        )
        players = []
        for name, make in zip(names, (HeuristicBot, RandomBot), strict=True):
            key = (await client.create_account(name)).key
            players.append(AccountPlayer(address, key, make))
    async with SpadesClient(address, account_key=players[0].key) as own:
        await own.enter_tournament(cup.tournament_id)
    return cup.tournament_id, players


async def played_tournament(address: str, tournament_id: str, players: list[AccountPlayer]) -> None:
    """The second entrant entered (the tournament starts) and every table played to the
    tournament's end (one round: a pairing's two tables of one hand)."""
    runs = [asyncio.create_task(player.run()) for player in players]
    try:
        async with SpadesClient(address, account_key=players[1].key) as own:
            await own.enter_tournament(tournament_id)
        async with SpadesClient(address) as client, asyncio.timeout(MATCH_TIMEOUT):
            async for update in client.watch_tournament(tournament_id):
                if update.event.WhichOneof("kind") == "ended":
                    break
    finally:
        for run in runs:
            run.cancel()
        for player in players:
            await player.stop()


def analyses_counted(result: str) -> float:
    """The server's ``spades_analyses_total`` of ``result`` (``started``, ``refused``, ...)."""
    return REGISTRY.get_sample_value("spades_analyses_total", {"result": result}) or 0.0


async def analysis_steps(call: Any) -> list[analysis_pb2.AnalyseTableResponse]:
    """Every message of an AnalyseTable stream, to its end."""
    return [message async for message in call]


async def tournament_steps(call: Any) -> list[analysis_pb2.AnalyseTournamentResponse]:
    """Every message of an AnalyseTournament stream, to its end."""
    return [message async for message in call]


async def next_step(call: Any) -> analysis_pb2.AnalyseTableResponse:
    """The next message of an AnalyseTable stream (which must not have ended)."""
    message = await asyncio.wait_for(call.read(), READ_TIMEOUT)
    assert isinstance(message, analysis_pb2.AnalyseTableResponse), message
    return message


async def stream_refusal(call: Any) -> grpc.aio.AioRpcError:
    """The status a server-streaming call ends with; fails if it ends well."""
    try:
        async with asyncio.timeout(READ_TIMEOUT):
            async for _ in call:
                pass
    except grpc.aio.AioRpcError as error:
        return error
    raise AssertionError("the stream ended well, but an error status was expected")


async def command_output(*command: str, status: int = 0, **environment: str) -> str:
    """Run a command (``spades ...``) to its end, with ``environment`` added to the test's: its
    stdout, or its stderr when it is to fail (``status`` not 0); fails on any other exit
    status."""
    process = await asyncio.create_subprocess_exec(
        *command,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=clean_environment(**environment),
    )
    async with asyncio.timeout(MATCH_TIMEOUT):
        out, err = await process.communicate()
    assert process.returncode == status, (process.returncode, err.decode())
    return (out if status == 0 else err).decode()
