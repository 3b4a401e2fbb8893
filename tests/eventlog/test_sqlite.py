"""What only the SQLite backend promises: its file format, group commit, and crash safety."""

from __future__ import annotations

import asyncio
import os
import select
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spades_server.eventlog import Durability, SqliteEventLog, VersionConflict
from spades_server.eventlog.sqlite import SCHEMA_VERSION
from tests.support.time import wait_for_state

pytestmark = pytest.mark.asyncio

CRASH_WRITER = Path(__file__).with_name("crash_writer.py")


def queued(log: SqliteEventLog) -> int:
    """Writes waiting for the writer thread to take them."""
    return log.writes_waiting


async def test_the_file_is_in_wal_mode_with_a_versioned_schema(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    async with SqliteEventLog(path) as log:
        await log.append("table-1", 0, [b"a"])

    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert connection.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 2
        rows = connection.execute("SELECT stream_id, version, data FROM events").fetchall()
        assert rows == [("table-1", 1, b"a")]
        with pytest.raises(sqlite3.IntegrityError):  # the unique key is the final guard
            connection.execute(
                "INSERT INTO events (stream_id, version, recorded_at, data)"
                " VALUES ('table-1', 1, 0, x'00')"
            )


async def test_a_file_written_by_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA user_version = 99")
    log = SqliteEventLog(path)
    with pytest.raises(RuntimeError, match="schema 99"):
        await log.open()
    await log.close()


async def test_bad_settings_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="file path"):
        SqliteEventLog(":memory:")
    with pytest.raises(ValueError, match="durability"):
        SqliteEventLog(tmp_path / "x.db", durability="sometimes")  # type: ignore[arg-type]


@pytest.mark.parametrize("durability", ["normal", "full"])
async def test_concurrent_appends_share_commits(tmp_path: Path, durability: Durability) -> None:
    async with SqliteEventLog(tmp_path / "events.db", durability=durability) as log:
        await log.append("warm-up", 0, [b"x"])
        commits_before = log.commits
        results = await asyncio.gather(
            *(log.append(f"table-{n}", 0, [b"a", b"b"]) for n in range(64)),
            *(log.append("contested", 0, [f"{n}".encode()]) for n in range(16)),
            return_exceptions=True,
        )
        commits = log.commits - commits_before

    stored = [result for result in results if isinstance(result, list)]
    conflicts = [result for result in results if isinstance(result, VersionConflict)]
    assert len(stored) == 65 and len(conflicts) == 15  # one conflict fails only its own append
    assert commits < 20, f"{commits} commits for 80 concurrent appends: no group commit"


@pytest.mark.parametrize("durability", ["normal", "full"])
async def test_a_transaction_rolled_back_whole_moves_no_stream(
    tmp_path: Path, durability: Durability
) -> None:
    """The writer keeps each stream's committed version to check expected versions without a
    query; an append that went through, in a transaction that then failed whole, must not
    count: the stream is where the file says."""
    path = tmp_path / "events.db"
    async with SqliteEventLog(path, durability=durability) as log:
        await log.append("moved", 0, [b"1"])
        admin = sqlite3.connect(path, isolation_level=None, timeout=10)
        try:
            admin.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON events WHEN NEW.stream_id = 'refused'"
                " BEGIN SELECT RAISE(ROLLBACK, 'refused'); END"
            )
            if durability == "normal":
                # The event loop writes what one iteration queued in one transaction.
                outcomes = await asyncio.gather(
                    log.append("moved", 1, [b"2"]),
                    log.append("refused", 0, [b"never"]),
                    return_exceptions=True,
                )
            else:
                # Hold the write lock: the writer thread takes the blocker and waits on it, so
                # the next two appends queue up and go into one transaction together.
                admin.execute("BEGIN IMMEDIATE")
                blocker = asyncio.ensure_future(log.append("blocker", 0, [b"x"]))
                while log.writes_waiting:
                    await asyncio.sleep(0.01)
                # The writer thread took it; from there to waiting on the lock shows nothing.
                await asyncio.sleep(0.2)
                both = asyncio.gather(
                    log.append("moved", 1, [b"2"]),
                    log.append("refused", 0, [b"never"]),
                    return_exceptions=True,
                )
                await wait_for_state(lambda: queued(log) == 2, "both appends queued")
                admin.execute("COMMIT")
                await blocker
                outcomes = await both
            assert [type(outcome).__name__ for outcome in outcomes] == ["LogUnavailable"] * 2
            admin.execute("DROP TRIGGER refuse")
        finally:
            admin.close()
        assert await log.stream_version("moved") == 1
        with pytest.raises(VersionConflict):
            await log.append("moved", 2, [b"3"])
        stored = await log.append("moved", 1, [b"2"])
        assert [event.version for event in stored] == [2]


@pytest.mark.parametrize("durability", ["normal", "full"])
async def test_a_killed_writer_loses_no_acknowledged_append(
    tmp_path: Path, durability: Durability
) -> None:
    path = tmp_path / "events.db"
    acknowledged = kill_while_appending(path, durability, streams=8, acks_before_kill=400)

    assert sum(version // 2 for version in acknowledged.values()) >= 400
    async with SqliteEventLog(path, durability=durability) as log:
        everything = await log.read_all(limit=1_000_000)
        assert len({(event.stream_id, event.version) for event in everything}) == len(everything)
        for stream_id, acknowledged_version in acknowledged.items():
            events = await log.read(stream_id)
            assert len(events) >= acknowledged_version, f"{stream_id} lost acknowledged events"
            assert [event.version for event in events] == list(range(1, len(events) + 1))
            assert [event.data for event in events] == [
                f"{stream_id}#{event.version}".encode() for event in events
            ]
            assert len(events) % 2 == 0  # two-event appends are all or nothing


def kill_while_appending(
    path: Path, durability: Durability, *, streams: int, acks_before_kill: int
) -> dict[str, int]:
    """Run crash_writer.py, SIGKILL it after enough acks; the last acked version per stream."""
    child = subprocess.Popen(
        [sys.executable, str(CRASH_WRITER), str(path), durability, str(streams)],
        stdout=subprocess.PIPE,
    )
    assert child.stdout is not None
    output = b""
    deadline = time.monotonic() + 15
    try:
        while output.count(b"\n") < acks_before_kill + 1:  # +1: the "ready" line
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"the writer acknowledged too little: {output[-200:]!r}"
            readable, _, _ = select.select([child.stdout], [], [], remaining)
            if readable:
                chunk = os.read(child.stdout.fileno(), 65536)
                assert chunk, f"the writer exited early with {child.poll()}"
                output += chunk
        child.send_signal(signal.SIGKILL)
        output += child.stdout.read()  # acks printed before the kill still count
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
    assert child.returncode == -signal.SIGKILL

    acknowledged: dict[str, int] = {}
    lines = output.split(b"\n")
    assert lines[0] == b"ready"
    for line in lines[1:-1]:  # the last piece may be cut short by the kill
        stream_id, version = line.decode().split()
        assert int(version) > acknowledged.get(stream_id, 0)
        acknowledged[stream_id] = int(version)
    return acknowledged


async def test_a_second_process_cannot_open_a_file_in_use(tmp_path: Path) -> None:
    first = SqliteEventLog(tmp_path / "events.db")
    await first.open()
    try:
        second = SqliteEventLog(tmp_path / "events.db")
        with pytest.raises(RuntimeError, match="in use by another process"):
            await second.open()
    finally:
        await first.close()
    reopened = SqliteEventLog(tmp_path / "events.db")
    await reopened.open()  # closing released it
    await reopened.close()


@pytest.mark.parametrize("durability", ["normal", "full"])
async def test_an_append_failing_halfway_fails_alone_and_leaves_nothing(
    tmp_path: Path, durability: Durability
) -> None:
    """Appends are written without a SAVEPOINT while nothing can fail halfway; when a statement
    does (a row another connection slipped in: the unique key catches what the writer's own
    version check missed), that append fails alone, its claim is not kept, and the others of
    the same transaction commit."""
    path = tmp_path / "events.db"
    async with SqliteEventLog(path, durability=durability) as log:
        await log.append("slipped", 0, [b"1"])
        admin = sqlite3.connect(path, isolation_level=None, timeout=10)
        try:
            admin.execute(
                "INSERT INTO events (stream_id, version, recorded_at, data)"
                " VALUES ('slipped', 2, 0, x'00')"
            )
        finally:
            admin.close()
        conflict, stored = await asyncio.gather(
            log.append("slipped", 1, [b"2"], claim=("action", b"accepted")),
            log.append("other", 0, [b"a", b"b"]),
            return_exceptions=True,
        )
        assert isinstance(conflict, VersionConflict) and conflict.actual == 2
        assert isinstance(stored, list) and [event.version for event in stored] == [1, 2]
        assert await log.read_claim("slipped", "action") is None
        assert [event.data for event in await log.read("slipped")] == [b"1", b"\x00"]
        assert [event.version for event in await log.append("slipped", 2, [b"3"])] == [3]


async def test_the_wal_of_a_log_written_on_the_loop_starts_over_after_each_checkpoint(
    tmp_path: Path,
) -> None:
    """With ``normal`` durability the event loop commits and a thread checkpoints: commits
    pause for the checkpoint's second pass, so it copies every frame and the next commit starts
    the -wal file over. Without the pause a checkpoint beside a steady stream of commits never
    copies the last ones, the file never starts over and grows with everything written (18 MiB
    for the 12 MiB here, when the pause was taken out)."""
    path = tmp_path / "events.db"
    wal = Path(f"{path}-wal")
    async with SqliteEventLog(path) as log:
        log.checkpoint_at = 128 * 1024
        for round_number in range(150):  # 20 appends of 2 KiB a commit
            await asyncio.gather(
                *(log.append(f"s{stream}", round_number, [bytes(2048)]) for stream in range(20))
            )
        assert log.checkpoints >= 1
        # The -wal header counts the times the file started over (its checkpoint sequence
        # number, bytes 12-15): once after each checkpoint but perhaps the last, which may
        # have had no commit after it. How large the file grew in between depends on how
        # long the first pass's fsyncs took, and is not asserted.
        started_over = int.from_bytes(wal.read_bytes()[12:16], "big")
        assert started_over >= max(1, log.checkpoints - 1)
        assert await log.stream_version("s19") == 150
    # Closed: everything is in the database, the -wal gone.
    assert not wal.exists()
    async with SqliteEventLog(path) as log:
        assert [event.version for event in await log.read("s0")] == list(range(1, 151))
