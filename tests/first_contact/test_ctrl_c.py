"""Ctrl-C of a real ``spades-bot`` waiting in quick match gives its seat back on the way out (a
SeatLeft in the log, the seat free in the lobby), and exits 130 as an interrupted command does."""

from __future__ import annotations

import asyncio
import re
import signal
from pathlib import Path

import grpc

from spades.v1 import lobby_pb2, lobby_pb2_grpc
from tests.support.bot_process import start_bot, wait_for_text
from tests.support.processes import spades_server

EXIT_TIMEOUT = 15.0


async def seats_occupied(address: str, table_id: str) -> list[bool]:
    async with grpc.aio.insecure_channel(address) as channel:
        lobby = lobby_pb2_grpc.LobbyServiceStub(channel)
        table = (await lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id))).table
        return [seat.occupied for seat in table.seats]


def test_ctrl_c_in_the_quick_match_queue_leaves_the_seat(tmp_path: Path) -> None:
    arguments = ("--database", str(tmp_path / "log.db"), "--listen", "127.0.0.1:0")
    with spades_server(
        tmp_path / "server.log", *arguments, "--metrics", "off", "--house-bots", "0"
    ) as server:
        output = tmp_path / "bot.log"
        bot = start_bot(output, "--server", server.address, "--quick-match", "--bot", "random")
        try:
            wait_for_text(output, "seated at table", 30)
            found = re.search(r"seated at table ([0-9a-f]{20})", output.read_text())
            assert found is not None, output.read_text()
            table_id = found[1]
            assert asyncio.run(seats_occupied(server.address, table_id)) == [
                True,
                False,
                False,
                False,
            ]
            bot.send_signal(signal.SIGINT)
            assert bot.wait(EXIT_TIMEOUT) == 130, output.read_text()
        finally:
            if bot.poll() is None:
                bot.kill()
                bot.wait(10)
        assert f"left the seat at table {table_id}" in output.read_text()
        assert asyncio.run(seats_occupied(server.address, table_id)) == [False] * 4
        assert "Traceback" not in output.read_text()
