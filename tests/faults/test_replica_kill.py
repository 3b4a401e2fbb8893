"""A PostgreSQL replica SIGKILLed (again and again) while the turn clock and house bots act.

Two ``spades-server`` processes share one PostgreSQL log. Each table has two seats whose players
never come (their turns time out, then substitutes take them) and two house bots added through
replica A. Replica A is SIGKILLed ``KILLS`` times (the first mid-play; the later ones while
matches are still played, unless a loaded machine's slow restarts let them all finish) and
started again; its house bots die
with it, so their seats time out too and get substitutes from whichever replica is alive. Every
match must still finish, and the log must show every timeout once: each TurnTimedOut is for the
seat whose turn it was (a second timeout of one turn, from a replica that had not seen the
first, would not be), and none fired before the turn's time was up.
"""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

import pytest

from spades.client import SpadesClient
from spades.engine import Clock, MatchState, Rules
from spades.engine import events as ev
from tests.support.backends import LogStorage
from tests.support.faults import assert_contiguous, engine_events, read_log
from tests.support.processes import free_ports, kill, server_args, server_process

TABLES = 3
KILLS = 3
TURN_MILLIS = 150
RULES = Rules(max_hands=8, clock=Clock(turn_millis=TURN_MILLIS, extension_millis=0))
FINISH_TIMEOUT = 60.0
SETTINGS = (
    "--house-bots",
    "32",
    "--quick-match-fill-after",
    "0",
    "--substitute-after-timeouts",
    "2",
    "--disconnect-grace",
    "0",
)


async def finished(client: SpadesClient, table_ids: list[str]) -> bool:
    statuses = [(await client.get_table(table_id)).status for table_id in table_ids]
    return all(status == "finished" for status in statuses)


@pytest.mark.asyncio
async def test_a_replica_killed_while_the_clock_and_house_bots_act(
    tmp_path: Path, postgres: None
) -> None:
    storage = LogStorage("postgres", tmp_path / "replicas.db")
    await storage.prepare()
    port_a, port_b = free_ports(2)
    args_a = server_args(storage, port_a, *SETTINGS)
    args_b = server_args(storage, port_b, *SETTINGS)
    table_ids: list[str] = []
    killed_mid_play = 0
    started = time.monotonic()
    try:
        async with server_process(tmp_path / "b.log", *args_b) as replica_b:
            async with SpadesClient(replica_b.address) as on_b:
                for kill_number in range(KILLS + 1):
                    async with server_process(
                        tmp_path / f"a-{kill_number}.log", *args_a
                    ) as replica_a:
                        if kill_number == 0:
                            async with SpadesClient(replica_a.address) as on_a:
                                for number in range(TABLES):
                                    created = await on_b.create_table(f"clock {number}", RULES)
                                    table_ids.append(created.table_id)
                                    for seat in (0, 1):  # players who never open a stream
                                        await on_b.join_table(
                                            created.table_id, f"absent {seat}", seat=seat
                                        )
                                    for seat in (2, 3):
                                        await on_a.add_house_bot(created.table_id, seat=seat)
                        if kill_number == KILLS:
                            deadline = time.monotonic() + FINISH_TIMEOUT
                            while not await finished(on_b, table_ids):
                                assert time.monotonic() < deadline, "the matches did not finish"
                                await asyncio.sleep(0.2)
                            break
                        await asyncio.sleep(1.0)
                        playing = not await finished(on_b, table_ids)
                        assert playing or kill_number > 0, "the first kill came too late"
                        killed_mid_play += playing
                        assert await kill(replica_a, signal.SIGKILL) == -signal.SIGKILL
            assert await kill(replica_b, signal.SIGTERM) == 0
        streams = await read_log(storage)
    finally:
        await storage.remove()
    seconds = time.monotonic() - started
    assert_contiguous(streams)
    timeouts = 0
    for table_id in table_ids:
        stored = streams[table_id]
        state = MatchState()
        previous_time = 0.0
        for row, event in zip(stored, engine_events(stored), strict=True):
            if isinstance(event, ev.TurnTimedOut):
                timeouts += 1
                assert state.turn == event.seat, (table_id, row.version, "a second timeout")
                # Not before the turn's time was up (a turn starts at the event before it).
                assert row.recorded_at - previous_time >= TURN_MILLIS / 1000 - 0.005, row.version
            state.evolve(event)
            previous_time = row.recorded_at
        assert state.is_over, table_id
    substitutions = sum(
        isinstance(event, ev.SeatSubstituted)
        for table_id in table_ids
        for event in engine_events(streams[table_id])
    )
    print(
        f"\n{TABLES} tables, replica A killed {KILLS} times ({killed_mid_play} mid-play):"
        f" {timeouts} timeouts,"
        f" {substitutions} substitutions, {seconds:.1f} s"
    )
    assert timeouts >= TABLES * 2, "the absent seats' turns must have timed out"
