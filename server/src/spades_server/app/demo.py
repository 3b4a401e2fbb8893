"""``make demo``: a server on a temporary log, four heuristic bots, a match told hand by hand.

    python -m spades_server.app.demo [--target 200] [--max-hands 12] [--records records]

Everything goes through the real service: the server listens on a free port of 127.0.0.1, the
bots join and play with the SDK like any client, and the match is shown as a spectator sees it
(the Watch stream): bids, every trick, each hand's score with the points still needed, then the
winner and where the record was written. Then the server shuts down and its log is deleted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from spades.bot import play_match
from spades.client import SpadesClient
from spades.commands.watch import narrate
from spades.engine import SEAT_NAMES, Rules
from spades.records import (
    events_of,
    render_score_table,
    save_record,
    score_table,
)
from spades_bots.heuristic import HeuristicBot
from spades_server.app.cli import scripts_folder
from spades_server.app.server import SpadesServer
from spades_server.ops import logs
from spades_server.ops.settings import Settings

#: The demo ends well within a minute; a stuck one fails instead of hanging.
TIMEOUT = 120.0


@contextlib.asynccontextmanager
async def demo_server(prefix: str, **settings: object) -> AsyncIterator[tuple[str, str]]:
    """A server of a demo on 127.0.0.1's free port, its log in a temporary folder (``prefix``),
    with ``settings`` besides: (its address, the folder) while it runs; then it stops, the
    folder is deleted and "Server stopped." is printed."""
    with tempfile.TemporaryDirectory(prefix=prefix) as directory:
        server = SpadesServer(
            Settings(
                listen="127.0.0.1:0",
                database=str(Path(directory) / "events.db"),
                metrics="off",
                web="off",
                shutdown_grace=1.0,
                **settings,  # type: ignore[arg-type]
            )
        )
        port = await server.start()
        try:
            yield f"127.0.0.1:{port}", directory
        finally:
            await server.stop()
        print("Server stopped.")


async def demo(target: int, max_hands: int, records: Path) -> int:
    rules = Rules(target_score=target, max_hands=max_hands or None)
    async with demo_server("spades-demo-") as (address, directory):
        print(f"Spades demo: a server on {address} with its event log in {directory}")
        print(f"Four heuristic bots play to {target} points (at most {max_hands} hands).")
        async with SpadesClient(address) as client:
            created = await client.create_table("Demo", rules)
            table_id = created.table_id
            print(f"Table {table_id}: {', '.join(created.table.badges) or 'standard rules'}")
            watching = asyncio.create_task(
                narrate(client, table_id, lambda line: print(line, flush=True))
            )
            tokens = [
                (await client.join_table(table_id, f"Heuristic {name}", seat=seat)).token
                for seat, name in enumerate(SEAT_NAMES)
            ]
            await asyncio.wait_for(
                asyncio.gather(
                    *(
                        play_match(client, HeuristicBot(), token, table_id=table_id)
                        for token in tokens
                    ),
                    watching,
                ),
                TIMEOUT,
            )
            record = await client.get_record(table_id)
        records.mkdir(parents=True, exist_ok=True)
        path = records / f"demo-{table_id}.json"
        save_record(record, path)
        print()
        print(render_score_table(score_table(events_of(record))), end="")
        print(f"Record written to {path}")
        prefix, _ = scripts_folder()  # runnable as printed, from a fresh shell
        print(f"  replay it: {prefix}spades-record show {path}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m spades_server.app.demo", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--target", type=int, default=200, help="target score (default: 200)")
    parser.add_argument(
        "--max-hands", type=int, default=12, help="hand limit, 0 for none (default: 12)"
    )
    parser.add_argument(
        "--records", type=Path, default=Path("records"), help="folder for the record"
    )
    arguments = parser.parse_args(argv)
    logs.configure("console", "warning")
    try:
        return asyncio.run(demo(arguments.target, arguments.max_hands, arguments.records))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
