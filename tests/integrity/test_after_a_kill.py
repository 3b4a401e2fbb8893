"""The real server, SIGKILLed while it plays, then its -wal lost: refused at restart, not served.

This is the fault campaign's case end to end: a ``spades-server`` process on a log of finished
and running tables, a new table played over gRPC with every acknowledged action noted, a
SIGKILL, then the -wal deleted or cut. The control (nothing lost) restarts and holds every
acknowledged action.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
from pathlib import Path

import grpc
import pytest

from tests.integrity import logs
from tests.support.processes import Stubs, next_turn, spades_server

ACTIONS = 6


async def play_then_kill(database: Path, server_log: Path) -> tuple[str, int]:
    """Play ACTIONS actions on a new table; SIGKILL; the table and its last acknowledged
    sequence."""
    arguments = ("--database", str(database), "--listen", "127.0.0.1:0", "--metrics", "off")
    with spades_server(server_log, *arguments, "--house-bots", "0") as server:
        async with grpc.aio.insecure_channel(server.address) as channel:
            stubs = Stubs(channel)
            table_id, tokens = await stubs.new_table()
            seats = [await stubs.open_seat(token) for token in tokens]
            acknowledged = 0
            for _ in range(ACTIONS):
                seat = await next_turn(seats)
                prompt = seat.prompt
                assert prompt is not None
                result = await seat.act(prompt.legal_actions[0], prompt.sequence)
                assert result.accepted, result
                acknowledged = result.sequence
            server.terminate(signal.SIGKILL)
            assert server.wait(10) == -signal.SIGKILL
    return table_id, acknowledged


@pytest.mark.parametrize("fault", ["none", "wal deleted", "wal cut to 70%"])
def test_a_killed_server_restarts_only_on_a_whole_log(
    database: Path, tmp_path: Path, fault: str
) -> None:
    table_id, acknowledged = asyncio.run(play_then_kill(database, tmp_path / "server.log"))
    wal = Path(f"{database}-wal")
    assert wal.stat().st_size > 0
    if fault == "wal deleted":
        wal.unlink()
    elif fault == "wal cut to 70%":
        os.truncate(wal, wal.stat().st_size * 7 // 10)
    if fault != "none":
        logs.assert_refused(database, "acknowledged events are missing")
        return
    checked = logs.run_command("check", str(database))
    assert checked.returncode == 0, checked
    connection = sqlite3.connect(database)
    try:
        (version,) = connection.execute(
            "SELECT MAX(version) FROM events WHERE stream_id = ?", (table_id,)
        ).fetchone()
    finally:
        connection.close()
    assert version >= acknowledged
