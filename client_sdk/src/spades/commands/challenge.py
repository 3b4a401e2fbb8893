"""``spades challenge``: challenge accounts to a match, answer, cancel and list challenges
(ChallengeService), as the account whose key is configured.

    spades challenge create OPPONENT... [--rated] [--target-score N] [--max-hands N]
                            [--seat SEAT=ACCOUNT ...] [--expiry SECONDS] [--series N]
                            [--json]
    spades challenge list [--incoming | --outgoing] [--pending] [--json]
    spades challenge show CHALLENGE_ID [--json]
    spades challenge accept CHALLENGE_ID [--json]
    spades challenge decline CHALLENGE_ID [--reason REASON] [--json]
    spades challenge cancel CHALLENGE_ID [--json]

An OPPONENT (or a seat's ACCOUNT) is an account id or name. The key comes from
``SPADES_ACCOUNT_KEY``, else the config file (docs/challenges.md).
"""

from __future__ import annotations

import argparse
import datetime
from typing import Any

from spades.client import ChallengeInfo, SpadesClient
from spades.client.challenges import DECLINE_REASONS
from spades.commands.account import find_account
from spades.commands.common import add_leaf, gathered, print_json, print_listing
from spades.engine import SEAT_NAMES, Rules, seat_name

PROGRAM = "spades challenge"
#: At most this many challenges are listed.
MOST = 1000


def challenge_json(challenge: ChallengeInfo) -> dict[str, Any]:
    return {
        "challenge_id": challenge.challenge_id,
        "challenger_id": challenge.challenger_id,
        "challenger_name": challenge.challenger_name,
        "opponents": [
            {
                "account_id": opponent.account_id,
                "name": opponent.name,
                "bot": opponent.bot,
                "accepted": opponent.accepted,
            }
            for opponent in challenge.opponents
        ],
        "rules": challenge.rules.badges(),
        "target_score": challenge.rules.target_score,
        "rated": challenge.rated,
        "seating": {seat_name(seat).lower(): holder for seat, holder in challenge.seating.items()},
        "state": challenge.state,
        "expire_time": datetime.datetime.fromtimestamp(challenge.expire_time, datetime.UTC)
        .isoformat()
        .replace("+00:00", "Z"),
        "table_id": challenge.table_id,
        "declined_by": challenge.declined_by,
        "decline_reason": challenge.decline_reason,
        "series_length": challenge.series_length,
        "series": [
            {"table_id": m.table_id, "scores": list(m.scores), "winning_side": m.winning_side}
            for m in challenge.series
        ],
        "series_wins": list(challenge.series_wins),
    }


def series_text(challenge: ChallengeInfo) -> str:
    """A series' standing in words: "series match 2 of 3, 1-0" ("" for a single match)."""
    if challenge.series_length <= 1:
        return ""
    played = len(challenge.series)
    wins = "-".join(str(won) for won in challenge.series_wins)
    if challenge.series_over:
        return f"series of {challenge.series_length} over, {wins}"
    return f"series match {played + 1} of {challenge.series_length}, {wins}"


def challenge_line(challenge: ChallengeInfo) -> str:
    """A challenge in one line: id, state, who, rules, and its table once accepted."""
    opponents = ", ".join(
        f"{opponent.name}{' (accepted)' if opponent.accepted else ''}"
        for opponent in challenge.opponents
    )
    rules = ", ".join(challenge.rules.badges()) or "standard rules"
    line = (
        f"{challenge.challenge_id}  {challenge.state:<9}  {challenge.challenger_name} vs "
        f"{opponents}  ({rules}{', rated' if challenge.rated else ''})"
    )
    if challenge.table_id:
        line += f"  table {challenge.table_id}"
    if challenge.decline_reason:
        line += f"  declined: {challenge.decline_reason}"
    if challenge.series_length > 1:
        accepted = challenge.state == "accepted"
        line += "  " + (
            series_text(challenge) if accepted else f"series of {challenge.series_length}"
        )
    return line


def _print(challenge: ChallengeInfo, arguments: argparse.Namespace) -> int:
    if arguments.json:
        print_json(challenge_json(challenge))
    else:
        print(challenge_line(challenge))
    return 0


def _seating(pairs: list[str]) -> dict[str, str]:
    seating = {}
    names = [name.lower() for name in SEAT_NAMES]
    for pair in pairs:
        seat, _, account = pair.partition("=")
        if seat.lower() not in names or not account:
            raise ValueError(f"--seat takes SEAT=ACCOUNT with a seat of {names}, not {pair!r}")
        seating[seat.lower()] = account
    return seating


async def _create(client: SpadesClient, arguments: argparse.Namespace) -> int:
    opponents = [(await find_account(client, name)).account_id for name in arguments.opponents]
    seating = {
        seat: (await find_account(client, account)).account_id
        for seat, account in _seating(arguments.seat).items()
    }
    rules = Rules(target_score=arguments.target_score, max_hands=arguments.max_hands)
    made = await client.create_challenge(
        opponents,
        rules,
        rated=arguments.rated,
        seating=seating,
        expiry_seconds=arguments.expiry,
        series_length=arguments.series,
    )
    return _print(made, arguments)


async def _list(client: SpadesClient, arguments: argparse.Namespace) -> int:
    async def page(token: str) -> tuple[tuple[ChallengeInfo, ...], str]:
        found = await client.list_challenges(
            arguments.direction, pending_only=arguments.pending, page_token=token
        )
        return found.challenges, found.next_page_token

    return print_listing(
        await gathered(page, MOST),
        as_json=arguments.json,
        document=challenge_json,
        line=challenge_line,
        nothing="No challenges.",
    )


async def _show(client: SpadesClient, arguments: argparse.Namespace) -> int:
    return _print(await client.get_challenge(arguments.challenge_id), arguments)


async def _accept(client: SpadesClient, arguments: argparse.Namespace) -> int:
    return _print(await client.accept_challenge(arguments.challenge_id), arguments)


async def _decline(client: SpadesClient, arguments: argparse.Namespace) -> int:
    return _print(
        await client.decline_challenge(arguments.challenge_id, arguments.reason), arguments
    )


async def _cancel(client: SpadesClient, arguments: argparse.Namespace) -> int:
    return _print(await client.cancel_challenge(arguments.challenge_id), arguments)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = commands.add_parser(
        "challenge",
        help="challenge accounts to a match; accept, decline, cancel, list",
        description=__doc__.replace("``", "") if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verbs = group.add_subparsers(dest="verb", required=True, metavar="VERB")
    create = add_leaf(
        verbs,
        "create",
        "challenge accounts to a match",
        _create,
        program=PROGRAM,
        needs_key=True,
        json_output=True,
    )
    create.add_argument("opponents", nargs="+", metavar="OPPONENT", help="an account id or name")
    create.add_argument("--rated", action="store_true", help="a rated match")
    create.add_argument(
        "--target-score", type=int, default=Rules().target_score, metavar="N", help="default: 500"
    )
    create.add_argument(
        "--max-hands", type=int, default=None, metavar="N", help="end after this many hands"
    )
    create.add_argument(
        "--seat",
        action="append",
        default=[],
        metavar="SEAT=ACCOUNT",
        help="propose who sits where (repeat; default: the server's seating)",
    )
    create.add_argument(
        "--expiry", type=int, default=0, metavar="SECONDS", help="default: the server's"
    )
    create.add_argument(
        "--series",
        type=int,
        default=0,
        metavar="N",
        help="a series of N matches, the next opened when one ends (default: one match)",
    )
    listing = add_leaf(
        verbs,
        "list",
        "your challenges, newest first",
        _list,
        program=PROGRAM,
        needs_key=True,
        json_output=True,
    )
    direction = listing.add_mutually_exclusive_group()
    direction.add_argument(
        "--incoming", dest="direction", action="store_const", const="incoming", default=""
    )
    direction.add_argument("--outgoing", dest="direction", action="store_const", const="outgoing")
    listing.add_argument("--pending", action="store_true", help="only those still open")
    show = add_leaf(verbs, "show", "one challenge", _show, program=PROGRAM, json_output=True)
    show.add_argument("challenge_id")
    for name, help, action in (
        ("accept", "accept a challenge addressed to you", _accept),
        ("decline", "decline a challenge addressed to you", _decline),
        ("cancel", "withdraw a challenge you made", _cancel),
    ):
        verb = add_leaf(
            verbs, name, help, action, program=PROGRAM, needs_key=True, json_output=True
        )
        verb.add_argument("challenge_id")
        if name == "decline":
            verb.add_argument(
                "--reason", default="", choices=[reason for reason in DECLINE_REASONS if reason]
            )
