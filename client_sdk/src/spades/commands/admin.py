"""``spades admin`` (and its alias ``spades-admin``): the operator's calls (AdminService), with
the token from ``SPADES_OPERATOR_TOKEN``, else ``operator_token`` in the config file.

    spades admin list [--status waiting|playing|finished] [--json]  every table, private ones too
    spades admin close TABLE_ID                             end a match with no winner
    spades admin create-with-deals DEALS.json [--name N]    a table whose first hands are given

A deals file is JSON: ``{"deals": [["AS KS ...", "...", "...", "..."], ...], "seed": "hex"}``,
one list per hand with each seat's cards in seat order (North first); ``seed`` (optional, 64 hex
digits) shuffles the hands after them. The token is never taken from a flag: a flag shows in
the process list.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spades.client import AdminClient, SpadesError, TableDetail
from spades.commands.common import (
    USAGE,
    MissingCredential,
    add_json_flag,
    add_server_flag,
    channel_credentials,
    fail,
    operator_token,
    parse_command_line,
    print_json,
    program_of,
)
from spades.commands.tables import table_json, table_line
from spades.engine import Rules, parse_cards

PROGRAM = "spades-admin"
TOKEN_VARIABLE = "SPADES_OPERATOR_TOKEN"
DESCRIPTION = "the operator's calls (AdminService)"


def read_deals(path: Path) -> tuple[list[list[list[int]]], bytes]:
    """The deals and seed of a deals file; ValueError saying what is wrong."""
    try:
        document: Any = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"cannot read {path}: {error}") from None
    if not isinstance(document, dict) or not isinstance(document.get("deals"), list):
        raise ValueError(f"{path}: expected an object with a list 'deals'")
    deals = []
    for number, deal in enumerate(document["deals"], start=1):
        if not isinstance(deal, list) or not all(isinstance(hand, str) for hand in deal):
            raise ValueError(f"{path}: deal {number} must be a list of card strings, one a seat")
        try:
            deals.append([[int(card) for card in parse_cards(hand)] for hand in deal])
        except ValueError as error:
            raise ValueError(f"{path}: deal {number}: {error}") from None
    seed_text = document.get("seed", "")
    try:
        seed = bytes.fromhex(seed_text) if seed_text else b""
    except (TypeError, ValueError):
        raise ValueError(f"{path}: 'seed' must be hexadecimal") from None
    return deals, seed


def detail_line(detail: TableDetail) -> str:
    """A table as the lobby line shows it, plus what only the operator sees."""
    line = table_line(detail.table)
    if detail.table.private:
        line += "  private"
    if detail.preset_deals:
        line += f"  preset deals {detail.preset_deals}"
    if detail.end_reason:
        line += f"  ended: {detail.end_reason}"
    return line


async def _main(arguments: argparse.Namespace, token: str) -> int:
    async with AdminClient(
        arguments.server, token, credentials=channel_credentials(arguments)
    ) as admin:
        try:
            if arguments.command == "list":
                token_ = ""
                listed: list[TableDetail] = []
                while True:
                    details, token_ = await admin.list_tables(arguments.status, page_token=token_)
                    listed += details
                    if not token_:
                        break
                if arguments.json:
                    print_json(
                        [
                            table_json(detail.table)
                            | {"preset_deals": detail.preset_deals, "end_reason": detail.end_reason}
                            for detail in listed
                        ]
                    )
                for detail in [] if arguments.json else listed:
                    print(detail_line(detail))
            elif arguments.command == "close":
                table = await admin.close_table(arguments.table_id)
                print(f"Closed {table.table_id}: {table.status}, scores {list(table.scores)}")
            else:
                try:
                    deals, seed = read_deals(arguments.deals)
                except ValueError as error:
                    print(f"{program_of(arguments, PROGRAM)}: {error}", file=sys.stderr)
                    return 2
                created = await admin.create_table_with_deals(
                    arguments.name, deals, Rules(), seed=seed, private=arguments.private
                )
                print(f"Created {created.table_id} with {len(deals)} preset deal(s)")
                if created.join_code:
                    print(f"Join code (shown once): {created.join_code}")
        except SpadesError as error:
            return fail(
                program_of(arguments, PROGRAM), error, as_json=getattr(arguments, "json", False)
            )
    return 0


EPILOG = (
    f"The operator token comes from the environment variable {TOKEN_VARIABLE}, else "
    "operator_token in the config file (docs/accounts.md); never from a flag."
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    add_server_flag(parser)
    again = argparse.ArgumentParser(add_help=False)
    add_server_flag(again, again=True)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    listing = commands.add_parser(
        "list",
        parents=[again],
        help="every table, private ones too",
        description="every table, private ones too",
    )
    listing.add_argument("--status", choices=["waiting", "playing", "finished"])
    add_json_flag(listing)
    closing = commands.add_parser(
        "close",
        parents=[again],
        help="end a table's match with no winner",
        description="end a match, no winner",
    )
    closing.add_argument("table_id")
    creating = commands.add_parser(
        "create-with-deals",
        parents=[again],
        help="a table whose first hands are given",
        description=__doc__.split("\n\n", 2)[2] if __doc__ else None,
    )
    creating.add_argument("deals", type=Path, help="the deals file (JSON, see --help above)")
    creating.add_argument("--name", default="Preset deals")
    creating.add_argument("--private", action="store_true")


def run(arguments: argparse.Namespace) -> int:
    try:
        token = operator_token()
    except MissingCredential as error:
        print(f"{program_of(arguments, PROGRAM)}: {error}", file=sys.stderr)
        return USAGE
    return asyncio.run(_main(arguments, token))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROGRAM, description=DESCRIPTION)
    configure(parser)
    return run(parse_command_line(parser, argv))


if __name__ == "__main__":
    sys.exit(main())
