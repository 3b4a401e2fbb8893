"""A clean restart skips the scans, and only a clean one: the committed marker's clean stamp.

The stamp is what lets a big log restart fast; these tests hold it to its promise that any
change to the file, or a crash, brings the checks back.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from spades_server.eventlog.sqlite import SqliteEventLog, marker_path
from tests.integrity import logs
from tests.support.servers import running_server

pytestmark = pytest.mark.asyncio


async def reopened(database: Path, *, verified: bool = True) -> bool:
    """Open and close the log; ``verified`` as the server's start-up checks would set it."""
    async with SqliteEventLog(database) as log:
        log.verified = verified
        return log.unchanged_since_clean_close


async def test_a_clean_close_is_recognised_once(database: Path) -> None:
    assert not await reopened(database)  # a copy: another file than the one stamped
    assert await reopened(database)  # closed cleanly by the open above, untouched since
    assert await reopened(database)


async def test_only_a_verified_log_is_stamped(database: Path) -> None:
    assert not await reopened(database, verified=False)
    assert not await reopened(database)


async def test_the_server_stamps_what_it_checked(database: Path) -> None:
    async with running_server(database, house_bots=0) as server:
        assert isinstance(server.log, SqliteEventLog)
        assert not server.log.unchanged_since_clean_close
    async with running_server(database, house_bots=0) as server:
        assert isinstance(server.log, SqliteEventLog)
        assert server.log.unchanged_since_clean_close


async def test_any_change_after_the_clean_close_brings_the_checks_back(
    database: Path, made: logs.LogContents
) -> None:
    await reopened(database)
    table_id = next(iter(made.finished))
    logs.execute(database, "DELETE FROM events WHERE stream_id = ? AND version = 30", (table_id,))
    assert not await reopened(database, verified=False)
    # And the server, which would have skipped the scan on an unchanged file, refuses it.
    logs.assert_refused(database, f"table {table_id} at sequence 30")


async def test_a_touch_that_keeps_size_and_mtime_still_counts(database: Path) -> None:
    await reopened(database)
    stat = database.stat()
    logs.overwrite(database, stat.st_size - 100, b"\x00" * 50)
    os.utime(database, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # the ctime cannot be reset
    assert not await reopened(database)


async def test_a_crash_leaves_no_stamp(database: Path) -> None:
    await reopened(database)
    log = SqliteEventLog(database)
    await log.open()
    log.verified = True
    # While open (and after a SIGKILL, which never closes), the marker has no stamp.
    assert b"clean" not in marker_path(database).read_bytes()
    await log.close()
    assert b"clean" in marker_path(database).read_bytes()
