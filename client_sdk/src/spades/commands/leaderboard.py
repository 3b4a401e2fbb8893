"""``spades leaderboard``: a rating pool's leaderboard, best first (RatingService).

spades leaderboard [--pool POOL] [--kind bot|person] [--limit N] [--json]
"""

from __future__ import annotations

import argparse
from typing import Any

from spades.client import LeaderboardLine, SpadesClient
from spades.commands.account import rating_json
from spades.commands.common import add_leaf, print_json

PROGRAM = "spades leaderboard"


def line_json(line: LeaderboardLine) -> dict[str, Any]:
    return {
        "rank": line.rank,
        "account_id": line.account_id,
        "name": line.name,
        "bot": line.bot,
        "house": line.house,
        "rating": rating_json(line.rating),
    }


async def _leaderboard(client: SpadesClient, arguments: argparse.Namespace) -> int:
    lines: list[LeaderboardLine] = []
    token = ""
    while len(lines) < arguments.limit:
        page = await client.leaderboard(arguments.pool, page_token=token, kind=arguments.kind)
        lines += page.lines
        token = page.next_page_token
        if not token:
            break
    lines = lines[: arguments.limit]
    if arguments.json:
        print_json([line_json(line) for line in lines])
        return 0
    for line in lines:
        marks = " (bot)" if line.bot else ""
        marks += " (house)" if line.house else ""
        provisional = "  provisional" if line.rating.provisional else ""
        print(
            f"{line.rank:>3}  {line.name}{marks}  {line.rating.score:.1f}  "
            f"({line.rating.matches} matches){provisional}"
        )
    if not lines:
        print(f"No one is rated in {arguments.pool} yet.")
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = add_leaf(
        commands,
        "leaderboard",
        "a rating pool's leaderboard, best first",
        _leaderboard,
        program=PROGRAM,
        json_output=True,
    )
    parser.add_argument("--pool", default="partnership", help="default: %(default)s")
    parser.add_argument(
        "--kind",
        choices=["bot", "person"],
        default="",
        help="one kind's lines (needed on a server with separate boards)",
    )
    parser.add_argument("--limit", type=int, default=50, help="default: %(default)s")
