"""``spades bot`` (and its alias ``spades-bot``): seat a bot at a table (or in the quick-match
queue) and play.

spades-bot --bot mymodule:MyBot --quick-match       # an author's class: the SDK alone runs it
spades-bot --bot "exec:node bots/examples/simple.js" --quick-match   # a bot in any language
spades-bot --server 127.0.0.1:50051 --bot heuristic --quick-match --matches 3
spades-bot --bot random --token SEAT_TOKEN          # resume a seat after a crash
SPADES_ACCOUNT_KEY=... spades-bot --bot search --quick-match --rated   # rated, as an account
SPADES_ACCOUNT_KEY=... spades-bot --config mybot.toml   # unattended: challenges, rated queue

The named bots (``random``, ``heuristic``, ``search``) are the spades-bots distribution's,
found through the ``spades.bots`` entry points it registers (:mod:`spades.bot.loading`), so
this command never imports it; without it, asking for one is a one-line error (exit 2).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import os
import sys
from collections.abc import Sequence

from spades.bot import Backoff, Bot, MatchOutcome, named_bot_class, play_match
from spades.bot.runner import TableInLog, first_contact
from spades.client import (
    SeatTicket,
    SpadesClient,
    SpadesError,
    new_request_id,
    rating_change_text,
)
from spades.commands.common import (
    add_server_flag,
    channel_credentials,
    configured,
    describe,
    parse_command_line,
)
from spades.engine import SEAT_NAMES

#: Where ``--account-key`` is read from when the flag is not given (a key on the command line
#: is seen by every user of ``ps``).
ACCOUNT_KEY_VARIABLE = "SPADES_ACCOUNT_KEY"

log = logging.getLogger("spades.bot")


DESCRIPTION = "Play Spades on a server with a bot."


def parser() -> argparse.ArgumentParser:
    parse = argparse.ArgumentParser(prog="spades-bot", description=DESCRIPTION)
    configure(parse)
    return parse


def configure(parse: argparse.ArgumentParser) -> None:
    """The flags of ``spades bot`` and ``spades-bot``."""
    parse.set_defaults(command_parser=parse)
    add_server_flag(parse)
    parse.add_argument(
        "--bot",
        default="heuristic",
        help="package.module:Class (your own bot), exec:COMMAND (a bot in any language, "
        "docs/external-bots.md), or random, heuristic, search (from the spades-bots "
        "distribution) (default: %(default)s)",
    )
    parse.add_argument(
        "--think-ms",
        type=float,
        default=100.0,
        help="with --bot search: milliseconds of CPU time to think per decision, within the "
        "turn clock (default: %(default)s)",
    )
    where = parse.add_mutually_exclusive_group(required=True)
    where.add_argument("--table", metavar="ID", help="join this table")
    where.add_argument("--token", help="resume the seat this seat token is for")
    where.add_argument("--quick-match", action="store_true", help="join the quick-match queue")
    where.add_argument(
        "--config",
        metavar="FILE.toml",
        help="run an account unattended as this file says: answer challenges, play every "
        "table assigned, stay in the rated queue (docs/challenges.md)",
    )
    parse.add_argument(
        "--seat", choices=["north", "east", "south", "west"], help="with --table: this seat"
    )
    parse.add_argument("--code", default="", help="with --table: a private table's join code")
    parse.add_argument(
        "--matches", type=int, default=1, help="with --quick-match: play this many matches"
    )
    parse.add_argument("--name", help="the name shown at the table (default: the bot's)")
    parse.add_argument(
        "--account-key",
        default=configured("account_key"),
        metavar="KEY",
        help=f"play as the account this key is for (docs/accounts.md) [env "
        f"{ACCOUNT_KEY_VARIABLE}, else the config file; better than the flag: a command line "
        "is visible in ps]",
    )
    parse.add_argument(
        "--rated",
        action="store_true",
        help="with --quick-match: the rated queue (needs --account-key)",
    )
    parse.add_argument(
        "--retry-for",
        type=float,
        default=Backoff().give_up_after,
        metavar="SECONDS",
        help="keep retrying an unreachable server (at start and after a drop) this long "
        "(default: %(default)g)",
    )
    parse.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="default: %(default)s",
    )


def shown_name(bot: Bot) -> str:
    """The name a bot shows at the table without ``--name``: its own ``name``, or its class's
    name when it kept the Bot default ("bot" says nothing of whose bot it is)."""
    return bot.name if bot.name and bot.name != Bot.name else type(bot).__name__


def make_bot(spec: str, think_ms: float | None = None) -> Bot:
    if spec == "search" and think_ms is not None:
        spec = f"search:{think_ms:g}"
    return named_bot_class(spec)()


async def run(args: argparse.Namespace) -> int:
    bot = make_bot(args.bot, args.think_ms)
    name = args.name or shown_name(bot)
    results: list[MatchOutcome] = []
    backoff = Backoff(give_up_after=args.retry_for)
    async with SpadesClient(
        args.server, credentials=channel_credentials(args), account_key=args.account_key
    ) as client:
        for number in range(1, max(1, args.matches) + 1):
            table_id = ""
            taken: SeatTicket | None = None
            request_id = new_request_id()
            try:
                if args.token:
                    token = args.token
                else:
                    taken = await first_contact(
                        functools.partial(_seat, client, args, name, request_id),
                        args.server,
                        backoff,
                        client if number == 1 else None,
                    )
                    token, table_id = taken.token, taken.table_id
                    # Not the seat token: it is a bearer secret, and logs get copied around.
                    waiting = f"; {taken.wait}" if taken.wait is not None else ""
                    log.info(
                        "seated at table %s as %s%s",
                        taken.table_id,
                        SEAT_NAMES[taken.seat],
                        waiting,
                    )
                outcome = await play_match(client, bot, token, table_id=table_id, backoff=backoff)
            except asyncio.CancelledError:  # Ctrl-C (asyncio.run cancels us on SIGINT)
                if not args.token:
                    await _leave_on_the_way_out(client, args, name, request_id, taken)
                raise
            results.append(outcome)
            if args.account_key:  # a rated match: the account's rating change
                await _log_rating_change(client, table_id or outcome.table_id)
            if not args.quick_match:
                break
            log.info("match %d of %d done", number, args.matches)
    if len(results) > 1:
        log.info(tally(results))
    return 0


async def _log_rating_change(client: SpadesClient, table_id: str) -> None:
    """Log the account's rating change once a rated table's match is rated."""
    try:
        if not table_id or not (await client.get_table(table_id)).rated:
            return
        change = await client.rating_change(table_id)
    except SpadesError as error:
        log.info("rating change of table %s not read: %s", table_id, error.reason)
        return
    if change is None:
        log.info("table %s: not rated yet", table_id)
    else:
        log.info("table %s rated: %s", table_id, rating_change_text(change))


#: Seconds the way out may take to give the seat back (a second Ctrl-C cuts it short).
LEAVE_TIMEOUT = 5.0


async def _leave_on_the_way_out(
    client: SpadesClient,
    args: argparse.Namespace,
    name: str,
    request_id: str,
    taken: SeatTicket | None,
) -> None:
    """Give up the seat this run took, if its match has not started: a bot stopped while it
    waits must not hold a seat (and keep a quick-match table from filling) until it is freed.
    A seat call interrupted in flight is sent again with its request id, so a seat the server
    gave without our hearing is found (and given up) too."""
    try:
        async with asyncio.timeout(LEAVE_TIMEOUT):
            if taken is None:
                taken = await _seat(client, args, name, request_id)
            await client.leave_table(taken.token)
    except (SpadesError, TimeoutError) as error:
        # The match started (a seat is then conceded or timed out, not left), or no server.
        reason = error.reason if isinstance(error, SpadesError) else "no answer"
        log.info("kept the seat on the way out: %s", reason)
        return
    log.info("left the seat at table %s on the way out", taken.table_id)


def tally(results: Sequence[MatchOutcome]) -> str:
    """How the matches went; a match closed by the operator is neither won nor lost."""
    won = sum(outcome.won for outcome in results)
    line = f"won {won} of {len(results)} matches"
    undecided = sum(outcome.no_winner for outcome in results)
    if undecided:
        line += f" ({undecided} closed without a winner)"
    return line


async def _seat(
    client: SpadesClient, args: argparse.Namespace, name: str, request_id: str
) -> SeatTicket:
    if args.quick_match:
        return await client.quick_match(name, bot=True, rated=args.rated, request_id=request_id)
    return await client.join_table(
        args.table, name, seat=args.seat, bot=True, join_code=args.code, request_id=request_id
    )


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(parse_command_line(parser(), argv))


def run_command(args: argparse.Namespace) -> int:
    """Run ``spades bot`` / ``spades-bot`` with its parsed flags."""
    usage = args.command_parser
    # Like `python -m`, find an author's module in the current folder (a console script's
    # sys.path starts at its own bin/ folder instead).
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    if args.seat and not args.table:
        usage.error("--seat needs --table")
    if args.retry_for < 0:
        usage.error("--retry-for must not be negative")
    if args.rated and not args.quick_match:
        usage.error("--rated needs --quick-match (a rated table's id goes with --table)")
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(table)s%(message)s"
    )
    for handler in logging.getLogger().handlers:
        handler.addFilter(TableInLog())
    if args.config:
        return _run_config(args)
    try:
        return asyncio.run(run(args))
    except SpadesError as error:
        log.error("%s", describe(error))
        return 1
    except ValueError as error:  # a bot that cannot be loaded
        log.error("%s", error)
        return 2
    except KeyboardInterrupt:
        return 130


def _run_config(args: argparse.Namespace) -> int:
    from spades.commands.bot_config import ConfigError, load_config, run_config

    try:
        config = load_config(args.config, default_server=args.server)
        make_bot(config.bot, config.think_ms)  # a bot that cannot be loaded fails now
    except (ConfigError, ValueError) as error:
        print(f"spades-bot: {error}", file=sys.stderr)
        return 2
    backoff = Backoff(give_up_after=args.retry_for)
    try:
        return asyncio.run(
            run_config(
                config,
                lambda: make_bot(config.bot, config.think_ms),
                credentials=channel_credentials(args),
                backoff=backoff,
            )
        )
    except SpadesError as error:
        log.error("%s", describe(error))
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
