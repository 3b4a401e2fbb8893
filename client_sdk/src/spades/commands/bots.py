"""``spades bots``: the bots on the server (PresenceService).

    spades bots online [--json]

``online`` lists the bots whose account stream is open now (a ``spades bot`` running with its
key, on any replica), longest online first, each with its manifest and ratings; challenge one
with ``spades challenge create NAME`` (docs/challenges.md).
"""

from __future__ import annotations

import argparse
import datetime
from typing import Any

from spades.client import SpadesClient
from spades.client.presence import OnlineBot
from spades.commands.account import manifest_json, rating_json
from spades.commands.common import add_leaf, gathered, print_listing
from spades.manifest import DEFAULT_MANIFEST, longest_series, target_range

PROGRAM = "spades bots"
#: At most this many bots are listed.
MOST = 1000


def online_json(bot: OnlineBot) -> dict[str, Any]:
    account = bot.account
    return {
        "account_id": account.account_id,
        "name": account.name,
        "owner_account_id": account.owner_account_id,
        "manifest": manifest_json(account.manifest or DEFAULT_MANIFEST),
        "ratings": [rating_json(rating) for rating in bot.ratings],
        "online_since": datetime.datetime.fromtimestamp(bot.online_since, datetime.UTC)
        .isoformat()
        .replace("+00:00", "Z"),
    }


def online_line(bot: OnlineBot) -> str:
    """A bot online in one line: its name, what it plays, its ratings."""
    manifest = bot.account.manifest or DEFAULT_MANIFEST
    players = "/".join(str(p) for p in (manifest.players or [4]))
    low, high = target_range(manifest)
    plays = f"{players} players, to {low}-{high}"
    options = manifest_json(manifest)["options"]
    if options:
        plays += ", " + ", ".join(options)
    longest = longest_series(manifest)
    plays += f", series up to {longest}" if longest > 1 else ", single matches"
    ratings = "  ".join(
        f"{r.pool} {r.score:.1f}{' provisional' if r.provisional else ''}" for r in bot.ratings
    )
    return f"{bot.account.name}  ({plays})  {ratings or 'unrated'}  id {bot.account.account_id}"


async def _online(client: SpadesClient, arguments: argparse.Namespace) -> int:
    async def page(token: str) -> tuple[tuple[OnlineBot, ...], str]:
        found = await client.online_bots(page_token=token)
        return found.bots, found.next_page_token

    return print_listing(
        await gathered(page, MOST),
        as_json=arguments.json,
        document=online_json,
        line=online_line,
        nothing="No bot is online.",
    )


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = commands.add_parser(
        "bots",
        help="the bots on the server: who is online now",
        description=__doc__.replace("``", "") if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verbs = group.add_subparsers(dest="verb", required=True, metavar="VERB")
    add_leaf(
        verbs,
        "online",
        "the bots online now (their account stream open), with manifests and ratings",
        _online,
        program=PROGRAM,
        json_output=True,
    )
