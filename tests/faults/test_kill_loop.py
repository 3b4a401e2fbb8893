"""A random SIGKILL loop: tens of kills of the SQLite server, some while it is still starting.

A real ``spades-server`` process on one SQLite file and one port is SIGKILLed ``KILLS`` times at
random moments (a seeded rng): mostly while it serves, some before it has finished starting
(between the process start and its banner, while it opens and checks the log). Meanwhile SDK
clients in this process play random bots (each accepted action journaled, unanswered ones resent
by the SDK's runner on reconnection) and, while the loop runs, new tables are created and seated
with request ids, each call retried with its id until answered. After the loop one last server
finishes every match. Then, from the log itself:

- every action the server acknowledged is in the log once, at the sequence its result named; no
  action id caused events twice; every table's versions are contiguous;
- every CreateTable request made one table, every join request one seat (each table has its four
  SeatTaken and no SeatLeft), and every seat token handed out (first answer or retry) played;
- every table replays from scratch to the view the server serves.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import random
import signal
import subprocess
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest

from spades.bot import Backoff, MatchOutcome, play_match
from spades.client import SpadesClient, SpadesError
from spades.client.errors import is_transient
from spades.engine import Rules
from spades.engine import events as ev
from tests.support.cluster_tables import CHANNEL_OPTIONS, Thinking
from tests.support.faults import (
    RecordingClient,
    assert_acknowledged_once,
    assert_contiguous,
    assert_each_action_id_in_one_place,
    assert_log_is_truth,
    engine_events,
    read_log,
    served_snapshots,
)
from tests.support.processes import (
    SERVER,
    clean_environment,
    free_port,
    kill,
    server_args,
    server_process,
)

T = TypeVar("T")

SEED = 14
#: "Tens of kills" (the issue): two dozen; the loop took 26 s in one run on the shared 2-core
#: machine (16 kills took 62 s at a heavier load).
KILLS = 24
#: Of the kills, about this share is aimed at a server still starting: the kill lands at a
#: random moment of its boot (as long as the last measured one, about 3 s on a loaded machine).
DURING_START = 0.4
FIRST_TABLES = 3
#: A new table is created (and seated) in every this many runs.
NEW_TABLE_EVERY = 4
RULES = Rules(max_hands=2)
#: A bot thinks this long per decision, so matches outlast a good part of the loop.
THINK = 0.02
FINISH_TIMEOUT = 60.0
#: The whole test's bound: the loop, then finishing every match (above the suite's 120 s).
LOOP_TIMEOUT = 300
BACKOFF = Backoff(initial=0.05, maximum=0.5, give_up_after=60.0)


async def until_answered(call: Callable[[], Awaitable[T]], within: float = 60.0) -> T:
    """``call`` (a request with a fixed request id) again until the server answers it."""
    deadline = time.monotonic() + within
    while True:
        try:
            return await call()
        except SpadesError as error:
            if not is_transient(error) or time.monotonic() > deadline:
                raise
        await asyncio.sleep(0.05)


def request_id() -> str:
    return uuid.uuid4().hex


@pytest.mark.asyncio
@pytest.mark.timeout(LOOP_TIMEOUT)
async def test_a_random_sigkill_loop_loses_and_doubles_nothing(tmp_path: Path) -> None:
    database = tmp_path / "kill-loop.db"
    args = server_args(database, free_port(), "--house-bots", "0")
    rng = random.Random(SEED)
    clients: dict[str, RecordingClient] = {}
    tokens: dict[str, list[str]] = {}
    tasks: dict[str, list[asyncio.Future[MatchOutcome]]] = {}
    created_by: dict[str, str] = {}  # CreateTable request id -> the table it answered
    seating: list[asyncio.Task[None]] = []
    address = args[args.index("--listen") + 1]

    async def new_table(number: int) -> None:
        client = RecordingClient(address, channel_options=CHANNEL_OPTIONS)
        create = request_id()
        created = await until_answered(
            functools.partial(client.create_table, f"kill loop {number}", RULES, request_id=create)
        )
        created_by[create] = created.table_id
        table_id = created.table_id
        clients[table_id] = client
        seat_tokens = []
        for seat in range(RULES.players):
            join = request_id()
            ticket = await until_answered(
                functools.partial(
                    client.join_table, table_id, f"bot {seat}", seat=seat, request_id=join
                )
            )
            seat_tokens.append(ticket.token)
        tokens[table_id] = seat_tokens
        tasks[table_id] = [
            asyncio.ensure_future(
                play_match(
                    client,
                    Thinking(rng.randrange(1 << 30), THINK),
                    token,
                    table_id=table_id,
                    backoff=BACKOFF,
                )
            )
            for token in seat_tokens
        ]

    during_start = 0
    boot_seconds = 3.0
    observer: SpadesClient | None = None
    started = time.monotonic()
    try:
        for run in range(KILLS):
            if run % NEW_TABLE_EVERY == 0 or run < FIRST_TABLES:
                seating.append(asyncio.create_task(new_table(run)))
            if run > 0 and rng.random() < DURING_START:
                # Killed at a random moment of its start (importing, opening and checking the
                # log, rebuilding the lobby), unless it was already serving by then.
                start_log = tmp_path / f"start-{run}.log"
                with start_log.open("w") as log_file:
                    process = subprocess.Popen(
                        [str(SERVER), *args],
                        stdout=subprocess.DEVNULL,
                        stderr=log_file,
                        env=clean_environment(),
                    )
                await asyncio.sleep(rng.uniform(0.2, 0.8) * boot_seconds)
                process.kill()
                await asyncio.to_thread(process.wait, 10)
                during_start += '"serving"' not in start_log.read_text()
                continue
            booting = time.monotonic()
            async with server_process(tmp_path / f"run-{run}.log", *args) as running:
                boot_seconds = time.monotonic() - booting
                await asyncio.sleep(rng.uniform(0.2, 0.9))
                assert await kill(running, signal.SIGKILL) == -signal.SIGKILL
        assert during_start >= 2, "the seed must kill some starts"
        loop_seconds = time.monotonic() - started

        async with server_process(tmp_path / "last.log", *args) as last:
            await asyncio.wait_for(asyncio.gather(*seating), FINISH_TIMEOUT)
            everything = asyncio.gather(*(task for each in tasks.values() for task in each))
            await asyncio.wait_for(everything, FINISH_TIMEOUT)
            outcomes = {
                table_id: [task.result() for task in each] for table_id, each in tasks.items()
            }
            observer = SpadesClient(last.address)
            snapshots = await served_snapshots(observer, list(tokens))
            assert await kill(last, signal.SIGTERM) == 0, last.log_path.read_text()
    finally:
        playing: list[asyncio.Future[MatchOutcome]] = [t for each in tasks.values() for t in each]
        for future in playing:
            future.cancel()
        for seated in seating:
            seated.cancel()
        for seated in seating:
            with contextlib.suppress(BaseException):
                await seated
        for client in [*clients.values(), *([observer] if observer is not None else [])]:
            await client.close()
    resent = sum(outcome.resent for each in outcomes.values() for outcome in each)
    print(
        f"\n{KILLS} SIGKILLs ({during_start} while starting), {len(tokens)} tables finished,"
        f" {resent} actions resent; the loop took {loop_seconds:.1f} s,"
        f" all {time.monotonic() - started:.1f} s"
    )

    streams = await read_log(database)
    assert_contiguous(streams)
    assert sorted(streams) == sorted(created_by.values()), "one table per CreateTable request"
    assert_each_action_id_in_one_place(streams)
    for table_id, seat_tokens in tokens.items():
        stored = streams[table_id]
        events = engine_events(stored)
        assert sorted(e.seat for e in events if isinstance(e, ev.SeatTaken)) == [0, 1, 2, 3]
        assert not any(isinstance(e, ev.SeatLeft) for e in events)
        for outcome in outcomes[table_id]:
            assert outcome.end is not None, "every match must end"
        assert_acknowledged_once(
            stored,
            clients[table_id].journals,
            dict(zip(seat_tokens, outcomes[table_id], strict=True)),
        )
    assert_log_is_truth(snapshots, streams)
