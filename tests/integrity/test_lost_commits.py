"""A log that holds less than the server committed is refused, not served.

SQLite loses some faults silently and consistently: a database cut to 0 bytes opens as an empty
one, a deleted, cut or overwritten ``-wal`` is ignored from the first bad frame on. Only the
committed marker beside the database (``DATABASE-committed``) can tell; these were the cases
where the server started and served nothing, or less, with no log line.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from spades_server.eventlog.sqlite import SqliteEventLog, marker_path, read_marker
from tests.integrity import logs

MISSING = "acknowledged events are missing"


@pytest.fixture
def killed(tmp_path: Path, made: logs.LogContents) -> Path:
    """The files a SIGKILLed server leaves: finished tables in the database, running ones
    still in the -wal."""
    (tmp_path / "writer").mkdir()
    target = tmp_path / "tables.db"
    logs.snapshot_log(tmp_path / "writer" / "tables.db", made, target)
    assert Path(f"{target}-wal").stat().st_size > 0
    return target


def test_a_killed_servers_files_are_whole(killed: Path, made: logs.LogContents) -> None:
    # The control: WAL recovery gives back everything the marker says was committed.
    checked = logs.run_command("check", str(killed))
    assert checked.returncode == 0, checked
    assert f"{made.events} events" in checked.stdout


def test_database_truncated_to_zero_bytes(database: Path, made: logs.LogContents) -> None:
    os.truncate(database, 0)
    logs.assert_refused(database, f"holds events up to position 0, but {made.events}", MISSING)


def test_wal_deleted_after_a_kill(killed: Path) -> None:
    Path(f"{killed}-wal").unlink()
    logs.assert_refused(killed, MISSING, "-wal")


def test_wal_cut_to_seventy_percent(killed: Path) -> None:
    wal = Path(f"{killed}-wal")
    os.truncate(wal, wal.stat().st_size * 7 // 10)
    logs.assert_refused(killed, MISSING)


def test_wal_overwritten_with_random_bytes(killed: Path) -> None:
    wal = Path(f"{killed}-wal")
    wal.write_bytes(random.Random(3).randbytes(wal.stat().st_size))
    logs.assert_refused(killed, MISSING)


def test_the_operator_may_accept_the_loss_by_deleting_the_marker(killed: Path) -> None:
    Path(f"{killed}-wal").unlink()
    refused = logs.start_server(killed)
    assert f"delete {marker_path(killed)}" in refused.stderr
    marker_path(killed).unlink()
    checked = logs.run_command("check", str(killed))
    assert checked.returncode == 0, checked


@pytest.mark.asyncio
async def test_a_log_without_a_marker_is_accepted_and_gets_one(
    database: Path, made: logs.LogContents
) -> None:
    marker_path(database).unlink()  # a log written before markers existed, or a plain copy
    async with SqliteEventLog(database) as log:
        assert read_marker(database) == made.events
        stored = await log.append("one-more", 0, [b"x"])
    assert read_marker(database) == stored[0].position == made.events + 1


def test_a_marker_that_is_not_a_position_is_refused(database: Path) -> None:
    marker_path(database).write_bytes(b"\x89garbage")
    started = logs.start_server(database)
    assert started.returncode == 2 and "Traceback" not in started.stderr, started
    assert f"{marker_path(database)}: the committed marker cannot be read" in started.stderr
    checked = logs.run_command("check", str(database))
    assert checked.returncode == 2 and "the committed marker" in checked.stderr, checked
