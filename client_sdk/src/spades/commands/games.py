"""``spades account games``: an account's finished matches ("my games"), newest first.

    spades account games [ACCOUNT] [--rated | --unrated] [--opponents bots|people]
                         [--opponent NAME] [--page-size N] [--page-token TOKEN] [--json]

ACCOUNT is an id or a name; without it, the signed-in person's (or the saved account's) games.
The session (else the account key) is sent when one is saved, so your own games at private
tables are listed too. Each line has the outcome, the score, the partners and opponents, the
rating change of a rated match, and the table id, whose record ``spades record show TABLE_ID``
prints. A page ends with the command for the next one.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from google.protobuf import json_format

from spades.client import SpadesClient, rating_change_text
from spades.commands.common import add_leaf, configured, print_json, usage_error
from spades.v1 import games_pb2

PROGRAM = "spades account"

OUTCOMES = {
    games_pb2.GAME_OUTCOME_WON: "won",
    games_pb2.GAME_OUTCOME_LOST: "lost",
    games_pb2.GAME_OUTCOME_CLOSED: "closed",
}


def _players(game: games_pb2.Game, relation: games_pb2.GameRelation.ValueType) -> str:
    names = [
        f"{player.name} ({'bot' if player.bot else 'person'})"
        for player in game.players
        if player.relation == relation
    ]
    return ", ".join(dict.fromkeys(names)) or "-"


def game_line(game: games_pb2.Game) -> str:
    """One game as a line of text."""
    ended = time.strftime("%Y-%m-%d %H:%M", time.gmtime(game.end_time.seconds))
    scores = list(game.final_scores)
    own = scores[game.side] if game.side < len(scores) else 0
    others = "/".join(str(score) for index, score in enumerate(scores) if index != game.side)
    parts = [ended, f"{OUTCOMES.get(game.outcome, '?'):6}", f"{own}-{others}"]
    parts.append(f"rated {game.pool}" if game.rated else "unrated")
    if game.HasField("rating_change"):
        parts.append(rating_change_text(game.rating_change))
    parts.append(f"with {_players(game, games_pb2.GAME_RELATION_PARTNER)}")
    parts.append(f"vs {_players(game, games_pb2.GAME_RELATION_OPPONENT)}")
    parts.append(f"table {game.table_id}" + ("  (private)" if game.private else ""))
    return "  ".join(parts)


def games_json(response: games_pb2.ListGamesResponse) -> dict[str, Any]:
    return json_format.MessageToDict(
        response, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )


async def _games(client: SpadesClient, arguments: argparse.Namespace) -> int:
    # Your own credential, so your games at private tables are listed too.
    client.account_key = configured("session_token") or configured("account_key")
    account = arguments.account or configured("account_id")
    if not account:
        return usage_error(
            PROGRAM,
            "name the account (its id or name), or sign in: `spades account sign-in NAME`",
        )
    response = await client.games(
        account,
        rated="rated" if arguments.rated else "unrated" if arguments.unrated else "",
        opponents=arguments.opponents or "",
        opponent=arguments.opponent or "",
        page_size=arguments.page_size,
        page_token=arguments.page_token,
    )
    if arguments.json:
        print_json(games_json(response))
        return 0
    for game in response.games:
        print(game_line(game))
    if not response.games:
        print("No finished games." if not arguments.page_token else "No more games.")
    if response.next_page_token:
        print(f"More: add --page-token {response.next_page_token}")
    return 0


def register_verb(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``games`` to ``spades account``."""
    games = add_leaf(
        verbs,
        "games",
        "an account's finished matches, newest first (yours by default)",
        _games,
        program=PROGRAM,
        json_output=True,
    )
    games.add_argument("account", nargs="?", help="its id or name (default: yours)")
    rated = games.add_mutually_exclusive_group()
    rated.add_argument("--rated", action="store_true", help="only rated matches")
    rated.add_argument("--unrated", action="store_true", help="only matches not rated")
    games.add_argument(
        "--opponents",
        choices=["bots", "people"],
        help="only games against bots alone, or against at least one person",
    )
    games.add_argument("--opponent", metavar="NAME", help="only games against this account")
    games.add_argument(
        "--page-size", type=int, default=20, metavar="N", help="games per page (1..100)"
    )
    games.add_argument("--page-token", default="", metavar="TOKEN", help="the page to show")
