"""``spades watch TABLE_ID`` (and its alias ``spades-watch``): a table's match told hand by
hand as it is played.

What a spectator may see, from the public Watch stream: the players, every hand's bids and
tricks, each hand's score table with the points each side still needs, and how the match ends.
A dropped connection is resumed from the last event seen; the command ends with the match.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Sequence

import grpc

from spades.client import SpadesClient, SpadesError, StreamEvent, Unavailable
from spades.commands.common import (
    add_server_flag,
    channel_credentials,
    fail,
    parse_command_line,
    program_of,
)
from spades.engine import events as ev
from spades.records import MatchNarrator

PROGRAM = "spades-watch"
#: Back-off between resumes of a dropped stream, in seconds (doubling up to the last).
RESUME_DELAYS = (0.25, 0.5, 1.0, 2.0, 5.0)


async def narrate(
    client: SpadesClient,
    table_id: str,
    write: Callable[[str], None] = print,
    *,
    resumes: int = 20,
) -> bool:
    """Tell the table's match through ``write``, line by line, until it ends (True) or the
    server stays out of reach for ``resumes`` attempts in a row (raises Unavailable)."""
    narrator: MatchNarrator | None = None
    after = 0  # from the beginning: TableCreated (with the rules) comes first
    failures = 0
    while True:
        try:
            async for message in client.watch(table_id, after_sequence=after):
                failures = 0
                if not isinstance(message, StreamEvent):
                    continue  # the snapshot: before the first event, or where we resumed
                after = message.sequence
                event = message.event
                if narrator is None:
                    assert isinstance(event, ev.TableCreated), "the stream starts at the table"
                    narrator = MatchNarrator(event.rules, needed=True)
                if isinstance(event, ev.HandStarted) and event.hand_number == 1:
                    write(narrator.players_line())
                lines = narrator.lines(event)
                if isinstance(event, ev.CardsDealt) and event.cards is None:
                    continue  # a spectator sees no hand: skip "13 cards (hidden)"
                for line in lines:
                    write(line)
                if isinstance(event, ev.SeedRevealed):
                    return True
            # The server ends the stream after SeedRevealed; an earlier end is a resume.
            if narrator is not None and narrator.over:
                return True
            raise Unavailable(grpc.StatusCode.UNAVAILABLE, "the stream ended before the match")
        except Unavailable:
            if failures >= resumes:
                raise
            await asyncio.sleep(RESUME_DELAYS[min(failures, len(RESUME_DELAYS) - 1)])
            failures += 1


async def _main(arguments: argparse.Namespace) -> int:
    async with SpadesClient(arguments.server, credentials=channel_credentials(arguments)) as client:
        try:
            table = await client.get_table(arguments.table_id)
            rules = ", ".join(table.badges) or "standard rules"
            print(f"Table {table.table_id} '{table.name}': {rules}")
            await narrate(client, arguments.table_id, lambda line: print(line, flush=True))
        except SpadesError as error:
            return fail(program_of(arguments, PROGRAM), error)
    return 0


DESCRIPTION = "a table's match told hand by hand as it is played"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("table_id", help="the table to watch (spades tables lists them)")
    add_server_flag(parser)


def run(arguments: argparse.Namespace) -> int:
    try:
        return asyncio.run(_main(arguments))
    except KeyboardInterrupt:
        return 130


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROGRAM, description=DESCRIPTION)
    configure(parser)
    return run(parse_command_line(parser, argv))


if __name__ == "__main__":
    sys.exit(main())
