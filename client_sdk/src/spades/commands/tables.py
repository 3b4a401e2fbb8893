"""``spades-tables``: the lobby's tables, one line each (newest first).

spades-tables [--status waiting|playing|finished] [--server HOST:PORT]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

from spades.client import SpadesClient, SpadesError, TableInfo
from spades.commands.common import add_server_flag, channel_credentials, fail
from spades.engine import seat_name

PROGRAM = "spades-tables"
#: At most this many tables are printed (the lobby pages them; so does this command).
MOST = 1000


def table_line(table: TableInfo) -> str:
    """One table: id, status, name, seats, score, hand, rules."""
    seats = ", ".join(
        f"{seat_name(seat.seat)} {seat.player_name}{' (bot)' if seat.bot else ''}"
        if seat.occupied
        else f"{seat_name(seat.seat)} free"
        for seat in table.seats
    )
    score = " - ".join(str(score) for score in table.scores) or "-"
    hand = f"hand {table.hand_number}" if table.hand_number else "not dealt"
    badges = ", ".join(table.badges) or "standard rules"
    return (
        f"{table.table_id}  {table.status:<8}  {table.name}  [{seats}]  {score}  {hand}  ({badges})"
    )


async def _main(arguments: argparse.Namespace) -> int:
    async with SpadesClient(arguments.server, credentials=channel_credentials(arguments)) as client:
        try:
            printed = 0
            token = ""
            while printed < MOST:
                page = await client.list_tables(arguments.status, page_token=token)
                for table in page.tables:
                    print(table_line(table))
                    printed += 1
                token = page.next_page_token
                if not token:
                    break
        except SpadesError as error:
            return fail(PROGRAM, error)
    if printed == 0:
        print("No tables.")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=PROGRAM, description=__doc__.splitlines()[0].split(": ", 1)[-1]
    )
    parser.add_argument("--status", choices=["waiting", "playing", "finished"])
    add_server_flag(parser)
    return asyncio.run(_main(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
