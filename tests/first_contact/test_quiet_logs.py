"""The server's log at info is what an operator reads, and no log ever holds a seat token.

Four real ``spades-bot`` processes play a one-hand match on a real ``spades-server`` whose log
is captured at debug level: the per-action lines are there, at debug; info has the tables, the
streams and the end; and no seat token appears in the server's log or in the bots' output.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import grpc
import pytest

from spades import protocol
from spades.engine import Rules
from spades.v1 import lobby_pb2
from tests.support.bot_process import SEAT_TOKEN_PATTERN, start_bot
from tests.support.processes import Stubs, clean_environment, spades_server

MATCH_TIMEOUT = 60


@pytest.mark.asyncio
async def test_info_is_quiet_and_no_log_holds_a_seat_token(tmp_path: Path) -> None:
    env = clean_environment(
        SPADES_LISTEN="127.0.0.1:0",
        SPADES_METRICS="off",
        SPADES_LOG_FORMAT="json",
        SPADES_LOG_LEVEL="debug",
        SPADES_DATABASE=str(tmp_path / "spades.db"),
    )
    with spades_server(tmp_path / "server.log", env=env) as server:
        async with grpc.aio.insecure_channel(server.address) as channel:
            created = await Stubs(channel).lobby.CreateTable(
                lobby_pb2.CreateTableRequest(
                    name="quiet", rules=protocol.rules_to_proto(Rules(max_hands=1))
                )
            )
        table_id = created.table.table_id
        seats = ("north", "east", "south", "west")
        outputs = [tmp_path / f"bot-{seat}.out" for seat in seats]
        bots = [
            start_bot(
                output,
                "--server",
                server.address,
                "--bot",
                "random",
                "--table",
                table_id,
                "--seat",
                seat,
            )
            for seat, output in zip(seats, outputs, strict=True)
        ]
        try:
            codes = [bot.wait(MATCH_TIMEOUT) for bot in bots]
        finally:
            for bot in bots:
                if bot.poll() is None:
                    bot.kill()
        server.terminate()
        server.wait(20)
        log_text = server.log_path.read_text()
    assert codes == [0, 0, 0, 0], [output.read_text() for output in outputs]
    for output in outputs:
        assert "match over" in output.read_text()

    # Seat tokens are bearer secrets: in no log, the server's or a bot's.
    for text in (log_text, *(output.read_text() for output in outputs)):
        assert not re.search(SEAT_TOKEN_PATTERN, text), text
    records: list[dict[str, Any]] = [json.loads(line) for line in log_text.splitlines() if line]
    mine = [record for record in records if record.get("table_id") == table_id]
    by_level: dict[str, set[str]] = {}
    for record in mine:
        by_level.setdefault(record["level"], set()).add(record["event"])
    # Per action and per join: debug (still there for whoever turns it on).
    assert {"action applied", "seat taken"} <= by_level["debug"]
    assert not {"action applied", "seat taken"} & by_level["info"]
    # What an operator reads: the table opened and finished, the streams.
    assert {"table created", "table finished", "play stream opened"} <= by_level["info"]
    info_lines = sum(record["level"] == "info" for record in mine)
    assert info_lines < 20, info_lines  # a 52-card hand is not 52 lines
