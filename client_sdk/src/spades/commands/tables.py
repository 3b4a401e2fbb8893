"""``spades tables`` (and its alias ``spades-tables``): the lobby's tables, one line each
(newest first), or with ``--json`` one JSON list.

spades tables [--status waiting|playing|finished] [--server HOST:PORT] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from typing import Any

from spades.client import SpadesClient, SpadesError, TableInfo
from spades.commands.common import (
    add_json_flag,
    add_server_flag,
    channel_credentials,
    fail,
    parse_command_line,
    print_listing,
    program_of,
)
from spades.engine import seat_name

PROGRAM = "spades-tables"
#: At most this many tables are printed (the lobby pages them; so does this command).
MOST = 1000


def table_line(table: TableInfo) -> str:
    """One table: id, status, name (marked "rated" when it is), seats, score, hand, rules."""
    seats = ", ".join(
        f"{seat_name(seat.seat)} {seat.player_name}{' (bot)' if seat.bot else ''}"
        if seat.occupied
        else f"{seat_name(seat.seat)} free"
        for seat in table.seats
    )
    score = " - ".join(str(score) for score in table.scores) or "-"
    hand = f"hand {table.hand_number}" if table.hand_number else "not dealt"
    badges = ", ".join(table.badges) or "standard rules"
    name = f"{table.name} (rated)" if table.rated else table.name
    return f"{table.table_id}  {table.status:<8}  {name}  [{seats}]  {score}  {hand}  ({badges})"


def table_json(table: TableInfo) -> dict[str, Any]:
    """A table as ``--json`` prints it."""
    return {
        "table_id": table.table_id,
        "name": table.name,
        "status": table.status,
        "seats": [
            {
                "seat": seat_name(seat.seat).lower(),
                "player_name": seat.player_name,
                "bot": seat.bot,
                "occupied": seat.occupied,
            }
            for seat in table.seats
        ],
        "scores": list(table.scores),
        "hand_number": table.hand_number,
        "badges": list(table.badges),
        "private": table.private,
        "rated": table.rated,
    }


async def _main(arguments: argparse.Namespace) -> int:
    tables: list[TableInfo] = []
    async with SpadesClient(arguments.server, credentials=channel_credentials(arguments)) as client:
        try:
            token = ""
            while len(tables) < MOST:
                page = await client.list_tables(arguments.status, page_token=token)
                tables += page.tables
                token = page.next_page_token
                if not token:
                    break
        except SpadesError as error:
            return fail(program_of(arguments, PROGRAM), error, as_json=arguments.json)
    return print_listing(
        tables, as_json=arguments.json, document=table_json, line=table_line, nothing="No tables."
    )


DESCRIPTION = "the lobby's tables, one line each (newest first)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--status", choices=["waiting", "playing", "finished"])
    add_server_flag(parser)
    add_json_flag(parser)


def run(arguments: argparse.Namespace) -> int:
    return asyncio.run(_main(arguments))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROGRAM, description=DESCRIPTION)
    configure(parser)
    return run(parse_command_line(parser, argv))


if __name__ == "__main__":
    sys.exit(main())
