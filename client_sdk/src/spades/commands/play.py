"""``spades play`` (and its alias ``spades-play``): a person plays a seat in the terminal,
against bots or people.

    spades-play --quick-match [--name NAME]            a seat in the quick-match queue
    spades-play --quick-match --rated                  the rated queue, as your account
    spades-play --table TABLE_ID [--seat S] [--join-code C] [--house-bots N]   (S: south if free)
    spades-play --table TABLE_ID --token SEAT_TOKEN    take back a seat you hold

The screen shows the seats (names, bids, tricks won), the trick being played, your hand with the
cards you may play enabled and the others dimmed, bid buttons from the prompt, the turn's clock
(the seconds left before the server acts for you), the match told as it goes, and the score
table after each hand. Everything else (the stream, resuming after a
dropped connection, action ids) is the SDK's: the person is a :class:`~spades.bot.Bot` whose
decisions wait for a click or a key.

Signed in (``spades account sign-in NAME`` saved a session in the config file; else an account
key there or in ``SPADES_SESSION_TOKEN``/``SPADES_ACCOUNT_KEY``), the seat is your account's: it
shows your account's name, sits at rated tables (``--rated`` queues for one), and after a rated
match the screen and the last line say your rating change ("Rating 3.1 → 4.6 (+1.5)").
``--anonymous`` plays without the account, under ``--name``.

The screen is :mod:`spades.commands.play_screen`, imported only when the command runs: it needs
the ``terminal`` extra (textual), which ``make install-runtime`` and ``make install`` include;
elsewhere ``.venv/bin/pip install './client_sdk[terminal]'``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from spades.client import SeatTicket, SpadesClient, SpadesError
from spades.commands.common import (
    add_server_flag,
    channel_credentials,
    configured,
    fail,
    parse_command_line,
    program_of,
    usage_error,
)
from spades.engine import Rules
from spades.reasons import Reason

if TYPE_CHECKING:
    from spades.commands.play_screen import PlayScreen

PROGRAM = "spades-play"


#: The seat a person takes when none is named (any free one if it is taken).
PERSON_SEAT = "south"


async def take_seat(client: SpadesClient, arguments: argparse.Namespace) -> SeatTicket:
    """The seat the person plays: from the quick-match queue, a table, or a token they hold."""
    if arguments.quick_match:
        return await client.quick_match(arguments.name, bot=False, rated=arguments.rated)
    if arguments.token:
        table = await client.get_table(arguments.table)
        return SeatTicket(table.table_id, -1, arguments.token)
    try:
        # South unless asked otherwise, as the web app seats a person: the screen (and the
        # score table's "NS") reads from the bottom of the table.
        ticket = await client.join_table(
            arguments.table,
            arguments.name,
            seat=arguments.seat or PERSON_SEAT,
            bot=False,
            join_code=arguments.join_code,
        )
    except SpadesError as error:
        if arguments.seat or error.reason_code not in (Reason.SEAT_TAKEN, Reason.NO_SUCH_SEAT):
            raise
        ticket = await client.join_table(
            arguments.table, arguments.name, bot=False, join_code=arguments.join_code
        )
    for _ in range(arguments.house_bots):
        await client.add_house_bot(arguments.table, join_code=arguments.join_code)
    return ticket


DESCRIPTION = "a person plays a seat in the terminal, against bots or people"


def parser() -> argparse.ArgumentParser:
    parse = argparse.ArgumentParser(prog=PROGRAM, description=DESCRIPTION)
    configure(parse)
    return parse


def configure(parse: argparse.ArgumentParser) -> None:
    where = parse.add_mutually_exclusive_group(required=True)
    where.add_argument("--quick-match", action="store_true", help="join the quick-match queue")
    where.add_argument("--table", help="the table to join (spades-tables lists them)")
    where.add_argument("--new-table", action="store_true", help="open a table with house bots")
    parse.add_argument("--name", default="Player", help="your name at the table")
    parse.add_argument(
        "--seat",
        help="the seat to take (north, east, south, west; default south, else any free one)",
    )
    parse.add_argument("--join-code", default="", help="a private table's join code")
    parse.add_argument("--token", default="", help="a seat token you hold (to take it back)")
    parse.add_argument(
        "--house-bots", type=int, default=0, help="house bots to seat after you (--table)"
    )
    parse.add_argument(
        "--rated",
        action="store_true",
        help="with --quick-match: the rated queue (signed in, or with an account key)",
    )
    parse.add_argument(
        "--anonymous",
        action="store_true",
        help="play without your saved session or account key (as --name)",
    )
    add_server_flag(parse)


def credential(arguments: argparse.Namespace) -> str:
    """The saved session (else account key) the seat is taken with; "" with --anonymous."""
    if arguments.anonymous:
        return ""
    return configured("session_token") or configured("account_key")


async def _main(arguments: argparse.Namespace, screen: type[PlayScreen]) -> int:
    if arguments.rated and not arguments.quick_match:
        return usage_error(PROGRAM, "--rated goes with --quick-match (or --table a rated table)")
    key = credential(arguments)
    if arguments.rated and not key:
        return usage_error(
            PROGRAM, "rated play needs your account: `spades account sign-in NAME` first"
        )
    async with SpadesClient(
        arguments.server, credentials=channel_credentials(arguments), account_key=key
    ) as client:
        try:
            if arguments.new_table:
                created = await client.create_table(f"{arguments.name}'s table", Rules())
                arguments.table, arguments.house_bots = created.table_id, 3
            ticket = await take_seat(client, arguments)
        except SpadesError as error:
            return fail(program_of(arguments, PROGRAM), error)
        app = screen(client, ticket)
        await app.run_async()
        if app.left or app.outcome_text:
            print(app.left or app.outcome_text)
        if app.rating_text:
            print(app.rating_text)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run(parse_command_line(parser(), argv))


def install_hint() -> str:
    """How to add textual to this very installation: its own pip, named as the shell in the
    current folder reaches it (``.venv/bin/pip`` in a checkout, where plain ``pip`` is often
    another Python's)."""
    pip = Path(sys.executable).parent / "pip"
    shown = os.path.relpath(pip)
    if shown.startswith(".."):
        shown = str(pip)
    return (
        f"{PROGRAM} needs textual, the SDK's terminal extra: {shown} install "
        "'./client_sdk[terminal]' (from the checkout; make install-runtime includes it)"
    )


def run(arguments: argparse.Namespace) -> int:
    # Imported here, not at the top: textual takes a third of a second to import, which every
    # other `spades` subcommand would pay at start.
    try:
        from spades.commands.play_screen import PlayScreen
    except ImportError as error:
        if not (error.name or "").startswith("textual"):
            raise
        print(install_hint(), file=sys.stderr)
        return 2
    try:
        return asyncio.run(_main(arguments, PlayScreen))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
