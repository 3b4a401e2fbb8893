"""Real SQLite event logs holding finished and running tables, and ways to damage them.

The logs are written the way the server writes them: the SDK's engine decides every event
(random legal actions from a seeded generator) and the real :class:`SqliteEventLog` appends
them. :func:`snapshot_log` copies a log while its writer still holds it, WAL included: the
files a SIGKILL would leave behind.
"""

from __future__ import annotations

import asyncio
import random
import shutil
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from spades.engine import MatchState, Rules, apply, apply_seat, legal_actions, new_match
from spades.engine import events as ev
from spades_server.domain import table_events
from spades_server.eventlog.sqlite import SqliteEventLog, marker_path
from spades_server.store import journal
from spades_server.v1 import log_pb2

SERVER = Path(sys.executable).with_name("spades-server")
START_TIMEOUT = 60.0


@dataclass
class LogContents:
    """What a written log holds: table id -> its events (engine values), by kind."""

    finished: dict[str, list[ev.Event]] = field(default_factory=dict)
    running: dict[str, list[ev.Event]] = field(default_factory=dict)

    @property
    def events(self) -> int:
        return sum(len(events) for events in (*self.finished.values(), *self.running.values()))


def match_events(rng: random.Random, *, finished: bool) -> list[ev.Event]:
    """One table's events: four seats taken, then random legal play to the end of a one-hand
    match, or (running) stopped a few cards into the play."""
    state: MatchState
    state, events = new_match(Rules(max_hands=1), seed=rng.randbytes(32))
    for seat in range(4):
        state, made = apply_seat(state, seat, f"player {seat}", bot=True)
        events += made
    stop_after_cards = None if finished else rng.randrange(4, 40)
    while not state.is_over:
        if stop_after_cards is not None and state.played.bit_count() >= stop_after_cards:
            break
        seat = state.seat_to_act()
        state, made = apply(state, seat, rng.choice(legal_actions(state, seat)))
        events += made
    return events


async def _append_all(log: SqliteEventLog, tables: dict[str, list[ev.Event]]) -> None:
    for table_id, events in tables.items():
        data = [journal.encode(draft) for draft in table_events.drafts(events)]
        await log.append(table_id, 0, data)


def contents(finished: int, running: int, seed: int = 14) -> LogContents:
    rng = random.Random(seed)
    made = LogContents()
    for index in range(finished + running):
        table_id = f"table-{index:05d}-{uuid.UUID(int=rng.getrandbits(128)).hex[:8]}"
        if index < finished:
            made.finished[table_id] = match_events(rng, finished=True)
        else:
            made.running[table_id] = match_events(rng, finished=False)
    return made


def write_log(path: Path, made: LogContents) -> None:
    """Write ``made`` into a new log at ``path`` and close it (the WAL checkpointed)."""

    async def write() -> None:
        async with SqliteEventLog(path) as log:
            await _append_all(log, made.finished)
            await _append_all(log, made.running)

    asyncio.run(write())


def snapshot_log(path: Path, made: LogContents, copy_to: Path) -> None:
    """Write the finished tables of ``made`` at ``path`` and close the log (they are then in
    the database file), reopen it, append the running tables and copy the files as they are
    while the log is still open (the database, its -wal and the marker: what a SIGKILL
    leaves), then close it."""

    async def write() -> None:
        async with SqliteEventLog(path) as log:
            await _append_all(log, made.finished)
        async with SqliteEventLog(path) as log:
            await _append_all(log, made.running)
            for suffix in ("", "-wal", "-committed"):
                shutil.copyfile(f"{path}{suffix}", f"{copy_to}{suffix}")

    asyncio.run(write())


def execute(path: Path, sql: str, parameters: tuple[object, ...] = ()) -> None:
    """Change the file behind the server's back (as a damaged disk or a careless hand would)."""
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute(sql, parameters)
    finally:
        connection.close()


def stored_row(path: Path, table_id: str, sequence: int) -> log_pb2.LogEntry:
    """The row as the journal wrote it (its envelope, the public event inside)."""
    connection = sqlite3.connect(path)
    try:
        (data,) = connection.execute(
            "SELECT data FROM events WHERE stream_id = ? AND version = ?", (table_id, sequence)
        ).fetchone()
    finally:
        connection.close()
    assert data.startswith(journal.ENVELOPE_MARKER)
    return log_pb2.LogEntry.FromString(data[len(journal.ENVELOPE_MARKER) :])


def replace_event(path: Path, table_id: str, sequence: int, data: bytes) -> None:
    execute(
        path,
        "UPDATE events SET data = ? WHERE stream_id = ? AND version = ?",
        (data, table_id, sequence),
    )


def played_cards(events: list[ev.Event]) -> list[int]:
    """The sequences (1-based) of a table's CardPlayed events."""
    return [index for index, event in enumerate(events, 1) if isinstance(event, ev.CardPlayed)]


def replay_a_card(database: Path, table_id: str, events: list[ev.Event]) -> int:
    """Change the table's second card played to its first (a card the seat cannot hold, it
    is on the table already); returns the changed event's sequence."""
    first, second = played_cards(events)[:2]
    changed = stored_row(database, table_id, second)
    changed.event.card_played.card.CopyFrom(
        stored_row(database, table_id, first).event.card_played.card
    )
    replace_event(database, table_id, second, journal.ENVELOPE_MARKER + changed.SerializeToString())
    return second


def overwrite(path: Path, offset: int, data: bytes) -> None:
    with path.open("r+b") as file:
        file.seek(offset)
        file.write(data)


@dataclass(frozen=True)
class Refusal:
    returncode: int
    stdout: str
    stderr: str


def start_server(database: Path, *extra: str, timeout: float = START_TIMEOUT) -> Refusal:
    """Start the real ``spades-server`` on ``database``; it must exit by itself (refusing)."""
    completed = subprocess.run(
        [
            str(SERVER),
            "--database",
            str(database),
            "--listen",
            "127.0.0.1:0",
            "--metrics",
            "off",
            "--house-bots",
            "0",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={"PATH": "/usr/bin:/bin", "SPADES_LOG_FORMAT": "json"},
    )
    return Refusal(completed.returncode, completed.stdout, completed.stderr)


def assert_refused(database: Path, *expected: str) -> str:
    """The server refuses to start on ``database``; returns its one-line message."""
    started = start_server(database)
    assert started.returncode == 2, started
    assert "Traceback" not in started.stderr, started.stderr
    lines = [line for line in started.stderr.splitlines() if line.startswith("spades-server:")]
    assert len(lines) == 1, started.stderr
    message = lines[0]
    assert str(database) in message, message
    for part in expected:
        assert part in message, message
    return message


def run_command(*arguments: str, timeout: float = START_TIMEOUT) -> Refusal:
    """``spades-server check|backup ...`` as an operator runs it."""
    completed = subprocess.run(
        [str(SERVER), *arguments], capture_output=True, text=True, timeout=timeout
    )
    return Refusal(completed.returncode, completed.stdout, completed.stderr)


def has_chattr() -> bool:
    return shutil.which("chattr") is not None


@contextmanager
def immutable(path: Path) -> Iterator[None]:
    """``chattr +i`` (reads work, every write fails, even root's), undone afterwards."""
    subprocess.run(["chattr", "+i", str(path)], check=True)
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def files_of(database: Path) -> list[Path]:
    return [Path(f"{database}{suffix}") for suffix in ("", "-wal", "-shm", ".lock")] + [
        marker_path(database)
    ]
