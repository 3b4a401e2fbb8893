"""``spades``: one command for every verb of the service, with subcommands in the manner of
``gh`` and ``kubectl``: ``spades account create``, ``spades challenge accept``, ``spades record
fetch``, ``spades tables``, ... ``spades SUBCOMMAND --help`` says more at every level.

The server's address, its CA, the account key and the operator token come from a flag (where
there is one), else the environment (``SPADES_SERVER``, ``SPADES_TLS_CA``,
``SPADES_ACCOUNT_KEY``, ``SPADES_OPERATOR_TOKEN``), else the config file
(:mod:`spades.commands.config`). A refused call prints its status, reason code and reason and
exits 1; a usage mistake or a missing credential exits 2.

The older commands are aliases of their subcommand, with the same flags: ``spades-bot`` is
``spades bot``, likewise ``spades-record``, ``spades-watch``, ``spades-tables``,
``spades-admin`` and ``spades-play``.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Callable, Sequence
from types import ModuleType

from spades.commands import (
    account,
    admin,
    bot,
    bots,
    challenge,
    completion,
    leaderboard,
    play,
    record,
    tables,
    tournament,
    watch,
)
from spades.commands.common import parse_command_line
from spades.commands.config import CONFIG_VARIABLE, config_path

PROGRAM = "spades"

#: The subcommands that are also a command of their own (``spades-NAME``): their module's
#: ``configure`` adds the flags and ``run`` runs them, for both names.
ALIASED: dict[str, tuple[ModuleType, Callable[[argparse.Namespace], int], str]] = {
    "tables": (tables, tables.run, "the lobby's tables (spades-tables)"),
    "watch": (watch, watch.run, "a table's match told as it is played (spades-watch)"),
    "play": (play, play.run, "a person's seat in the terminal (spades-play)"),
    "bot": (bot, bot.run_command, "play a bot: yours, exec:COMMAND or a named one (spades-bot)"),
    "record": (record, record.run, "fetch, show, verify, score records (spades-record)"),
    "admin": (admin, admin.run, "the operator's calls (spades-admin)"),
}
#: The groups that exist only under ``spades``: each module's ``register`` adds its parser
#: (``spades --help`` lists these, then the aliased ones, then ``completion``).
GROUPS: tuple[ModuleType, ...] = (account, bots, challenge, leaderboard, tournament)


def parser() -> argparse.ArgumentParser:
    """The whole command tree."""
    top = argparse.ArgumentParser(
        prog=PROGRAM,
        description="One command for every verb of the Spades service: accounts, challenges, "
        "the leaderboard, tournaments, records, tables, watching, playing, bots and the "
        "operator's calls. `spades SUBCOMMAND --help` says more, at every level.",
        epilog=f"Config file: ${CONFIG_VARIABLE}, else {config_path()} (docs/accounts.md).",
    )
    commands = top.add_subparsers(dest="subcommand", required=True, metavar="SUBCOMMAND")
    for module in GROUPS:
        module.register(commands)
    for name, (module, run, help) in ALIASED.items():
        sub = commands.add_parser(name, help=help, description=module.DESCRIPTION)
        module.configure(sub)
        sub.set_defaults(run=run, program=f"{PROGRAM} {name}")
    completion.register(commands)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parse_command_line(parser(), argv)
    try:
        status: int = arguments.run(arguments)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader (head, a pager) stopped reading: as a shell command killed by SIGPIPE.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    return status


if __name__ == "__main__":
    sys.exit(main())
