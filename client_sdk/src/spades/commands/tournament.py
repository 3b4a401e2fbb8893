"""``spades tournament``: duplicate tournaments (TournamentService, docs/tournaments.md).

    spades tournament create NAME [--boards N] [--entrants N] [--rated] [--swiss ROUNDS]
                                  [--target-score N] [--json]
    spades tournament list [--json]
    spades tournament enter TOURNAMENT_ID         your account enters (before the start)
    spades tournament withdraw TOURNAMENT_ID      and withdraws
    spades tournament standings TOURNAMENT_ID [--json]
    spades tournament watch TOURNAMENT_ID         the standings after every event, to the end

``create`` is the operator's (its token from ``SPADES_OPERATOR_TOKEN`` or the config file) or,
where the server lets accounts organise, the configured account's. The record of a finished
tournament: ``spades record fetch --tournament TOURNAMENT_ID``.
"""

from __future__ import annotations

import argparse
from typing import Any

from google.protobuf import json_format

from spades.client import SpadesClient
from spades.commands.common import (
    account_key,
    add_account_key_flag,
    add_leaf,
    configured,
    print_json,
    print_listing,
)
from spades.engine import Rules
from spades.records.tournament import render_standings
from spades.v1 import tournament_pb2

PROGRAM = "spades tournament"
#: At most this many tournaments are listed.
MOST = 1000
STATUS_NAMES = {
    tournament_pb2.TOURNAMENT_STATUS_ENTERING: "entering",
    tournament_pb2.TOURNAMENT_STATUS_RUNNING: "running",
    tournament_pb2.TOURNAMENT_STATUS_FINISHED: "finished",
}


def status_name(tournament: tournament_pb2.Tournament) -> str:
    return STATUS_NAMES.get(tournament.status, "unknown")


def tournament_json(tournament: tournament_pb2.Tournament) -> dict[str, Any]:
    return {
        "tournament_id": tournament.tournament_id,
        "name": tournament.settings.name,
        "status": status_name(tournament),
        "format": "swiss"
        if tournament.settings.format == tournament_pb2.TOURNAMENT_FORMAT_SWISS
        else "round_robin",
        "boards": tournament.settings.boards,
        "start_when_entrants": tournament.settings.start_when_entrants,
        "rated": tournament.settings.rated,
        "entrants": [
            {"account_id": entrant.account_id, "name": entrant.name}
            for entrant in tournament.entrants
        ],
        "round": tournament.round,
        "rounds": tournament.rounds,
    }


def standings_json(standings: tournament_pb2.Standings) -> list[dict[str, Any]]:
    return [
        json_format.MessageToDict(line, always_print_fields_with_no_presence=True)
        for line in standings.lines
    ]


def tournament_line(tournament: tournament_pb2.Tournament) -> str:
    entrants = ", ".join(entrant.name for entrant in tournament.entrants) or "no entrants yet"
    progress = f"round {tournament.round} of {tournament.rounds}" if tournament.round else ""
    return (
        f"{tournament.tournament_id}  {status_name(tournament):<8}  {tournament.settings.name}  "
        f"[{entrants}]  {tournament.settings.boards} boards"
        f"{'  rated' if tournament.settings.rated else ''}{'  ' + progress if progress else ''}"
    )


def _print(tournament: tournament_pb2.Tournament, arguments: argparse.Namespace) -> int:
    if getattr(arguments, "json", False):
        print_json(tournament_json(tournament))
    else:
        print(tournament_line(tournament))
    return 0


async def _create(client: SpadesClient, arguments: argparse.Namespace) -> int:
    token = configured("operator_token")
    if not token:
        client.account_key = account_key(arguments)  # an account organises it, if allowed
    created = await client.create_tournament(
        arguments.name,
        rules=Rules(target_score=arguments.target_score),
        boards=arguments.boards,
        start_when_entrants=arguments.entrants,
        rated=arguments.rated,
        swiss_rounds=arguments.swiss,
        operator_token=token,
    )
    return _print(created, arguments)


async def _list(client: SpadesClient, arguments: argparse.Namespace) -> int:
    found: list[tournament_pb2.Tournament] = []
    token = ""
    while len(found) < MOST:
        page, token = await client.list_tournaments(page_token=token)
        found += page
        if not token:
            break
    return print_listing(
        found,
        as_json=arguments.json,
        document=tournament_json,
        line=tournament_line,
        nothing="No tournaments.",
    )


async def _enter(client: SpadesClient, arguments: argparse.Namespace) -> int:
    return _print(await client.enter_tournament(arguments.tournament_id), arguments)


async def _withdraw(client: SpadesClient, arguments: argparse.Namespace) -> int:
    return _print(await client.withdraw_tournament(arguments.tournament_id), arguments)


async def _standings(client: SpadesClient, arguments: argparse.Namespace) -> int:
    tournament = await client.get_tournament(arguments.tournament_id)
    if arguments.json:
        print_json(
            tournament_json(tournament) | {"standings": standings_json(tournament.standings)}
        )
        return 0
    print(tournament_line(tournament))
    print(render_standings(tournament.standings), end="")
    return 0


async def _watch(client: SpadesClient, arguments: argparse.Namespace) -> int:
    tournament = await client.get_tournament(arguments.tournament_id)
    print(tournament_line(tournament), flush=True)
    async for update in client.watch_tournament(arguments.tournament_id):
        kind = update.event.WhichOneof("kind") or "event"
        print(f"#{update.event.sequence} {kind.replace('_', ' ')}", flush=True)
        if kind in ("board_scored", "match_scored", "ended"):
            print(render_standings(update.standings), end="", flush=True)
        if kind == "ended":
            break
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = commands.add_parser(
        "tournament",
        help="create, enter, withdraw, list, watch duplicate tournaments and their standings",
        description=__doc__.replace("``", "") if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verbs = group.add_subparsers(dest="verb", required=True, metavar="VERB")
    create = add_leaf(
        verbs,
        "create",
        "a new duplicate tournament (the operator's, or an account's where allowed)",
        _create,
        program=PROGRAM,
        json_output=True,
    )
    create.add_argument("name")
    create.add_argument(
        "--boards", type=int, default=2, metavar="N", help="boards a round (default: 2)"
    )
    create.add_argument(
        "--entrants",
        type=int,
        default=4,
        metavar="N",
        help="start once this many entered (default: 4)",
    )
    create.add_argument("--rated", action="store_true")
    create.add_argument(
        "--swiss", type=int, default=0, metavar="ROUNDS", help="a Swiss of ROUNDS rounds"
    )
    create.add_argument(
        "--target-score", type=int, default=Rules().target_score, metavar="N", help="default: 500"
    )
    add_account_key_flag(create)  # without the operator token, an account organises it
    add_leaf(verbs, "list", "tournaments, newest first", _list, program=PROGRAM, json_output=True)
    for name, help, action, needs_key, json_output in (
        ("enter", "enter your account (before the start)", _enter, True, True),
        ("withdraw", "withdraw your account (before the start)", _withdraw, True, True),
        ("standings", "the tournament and its standings now", _standings, False, True),
        ("watch", "the standings after every event, until the end", _watch, False, False),
    ):
        verb = add_leaf(
            verbs,
            name,
            help,
            action,
            program=PROGRAM,
            needs_key=needs_key,
            json_output=json_output,
        )
        verb.add_argument("tournament_id")
