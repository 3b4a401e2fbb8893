"""``make demo-tournament``: a short duplicate tournament of bot accounts, standings live.

    python -m spades_server.app.tournament_demo [--entrants 4] [--boards 2] [--records records]

A server on a temporary log; the operator creates a duplicate round robin; bot accounts (half
heuristic, half random) enter it, each following its account stream and playing every table it
is assigned over its key, in this process, through the public API. The standings are shown as
WatchTournament sends them (rich), and at the end the tournament's record is written and
verified as ``spades-record tournament`` would.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import secrets
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from rich.console import Console
from rich.live import Live
from rich.table import Table

from spades.bot import Bot
from spades.bot.account import AccountRunner
from spades.client import SpadesClient
from spades.engine import Rules
from spades.records.tournament import save_tournament_record, verify_tournament
from spades.v1 import tournament_pb2
from spades_bots.heuristic import HeuristicBot
from spades_bots.random_bot import RandomBot
from spades_server.app.cli import scripts_folder
from spades_server.app.demo import demo_server
from spades_server.ops import logs

#: The demo ends well within a couple of minutes; a stuck one fails instead of hanging.
TIMEOUT = 300.0


async def _follow(address: str, key: str, make_bot: Callable[[], Bot]) -> None:
    """Play every table the account's stream assigns it (the SDK's AccountRunner), until
    cancelled."""
    async with SpadesClient(address, account_key=key) as client:
        await AccountRunner(client, make_bot).run()


def standings_table(title: str, standings: tournament_pb2.Standings) -> Table:
    table = Table(title=title)
    for column, justify in (
        ("#", "right"),
        ("entrant", "left"),
        ("MP", "right"),
        ("W-T-L", "right"),
        ("dup", "right"),
        ("boards", "right"),
        ("", "left"),
    ):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for line in standings.lines:
        table.add_row(
            str(line.rank),
            line.name,
            f"{line.match_points:g}",
            f"{line.won}-{line.tied}-{line.lost}",
            f"{line.duplicate_points:+d}",
            str(line.boards),
            f"house bot in {line.substituted_matches}" if line.substituted_matches else "",
        )
    return table


async def demo(entrants: int, boards: int, records: Path) -> int:
    console = Console()
    token = secrets.token_hex(24)
    async with demo_server(
        "spades-tournament-demo-", operator_token=token, tournament_poll=0.5
    ) as (address, directory):
        console.print(f"Spades tournament demo: a server on {address}, its log in {directory}")
        followers: list[asyncio.Task[None]] = []
        try:
            async with SpadesClient(address) as client:
                cup = await client.create_tournament(
                    "Demo Cup",
                    rules=Rules(),
                    boards=boards,
                    start_when_entrants=entrants,
                    operator_token=token,
                )
                tid = cup.tournament_id
                console.print(
                    f"Tournament {tid}: a duplicate round robin of {entrants} bot accounts, "
                    f"{boards} boards a round; seed commitment {cup.seed_commitment.hex()[:16]}…"
                )
                for n in range(entrants):
                    kind = "Heuristic" if n % 2 == 0 else "Random"
                    key = (await client.create_account(f"{kind} {n // 2 + 1}")).key
                    async with SpadesClient(address, account_key=key) as own:
                        await own.enter_tournament(tid)
                    make: Callable[[], Bot] = (
                        HeuristicBot if kind == "Heuristic" else (lambda n=n: RandomBot(seed=n))  # type: ignore[misc]
                    )
                    followers.append(asyncio.create_task(_follow(address, key, make)))
                with Live(console=console, auto_refresh=False) as live:
                    async with asyncio.timeout(TIMEOUT):
                        async for update in client.watch_tournament(tid):
                            event = update.event
                            kind_of = event.WhichOneof("kind")
                            if kind_of == "round_paired":
                                title = f"Demo Cup: round {event.round_paired.round} paired"
                            elif kind_of == "ended":
                                title = "Demo Cup: final standings"
                            else:
                                title = f"Demo Cup (event {event.sequence}: {kind_of})"
                            live.update(standings_table(title, update.standings), refresh=True)
                console.print()
                record = await client.tournament_record(tid)
            records.mkdir(parents=True, exist_ok=True)
            path = records / f"tournament-{tid}.json"
            save_tournament_record(record, path)
            checked = verify_tournament(record)
            console.print(
                f"{checked.tables} tables, {checked.boards} boards; the revealed seed matches "
                "its commitment and every deal."
            )
            print(f"Record written to {path}")
            prefix, _ = scripts_folder()  # runnable as printed, from a fresh shell
            print(f"  verify it: {prefix}spades-record tournament {path}")
        finally:
            for follower in followers:
                follower.cancel()
            with contextlib.suppress(Exception):
                await asyncio.gather(*followers, return_exceptions=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m spades_server.app.tournament_demo", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--entrants", type=int, default=4, help="bot accounts (default: 4)")
    parser.add_argument("--boards", type=int, default=2, help="boards a round (default: 2)")
    parser.add_argument(
        "--records", type=Path, default=Path("records"), help="folder for the record"
    )
    arguments = parser.parse_args(argv)
    logs.configure("console", "warning")
    try:
        return asyncio.run(demo(arguments.entrants, arguments.boards, arguments.records))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
