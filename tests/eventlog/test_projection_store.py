"""What projections store in the log (checkpoints, rows paged from storage): the same on every
backend, and kept across a reopen."""

from __future__ import annotations

import pytest

from spades_server.eventlog import ProjectionCheckpoint, ProjectionRow

from .conftest import NewLog

pytestmark = pytest.mark.asyncio


def row(key: str, sort_key: int, *, listed: bool = True, version: int = 1) -> ProjectionRow:
    return ProjectionRow(key, sort_key, listed, version, f"{key}@{version}".encode())


async def test_rows_page_newest_first_and_survive_a_reopen(new_log: NewLog) -> None:
    log = new_log()
    await log.open()
    assert await log.load_projection("lobby") is None
    rows = [row(f"t{n}", sort_key=n % 4, listed=n != 3) for n in range(8)]
    await log.save_projection("lobby", rows, ProjectionCheckpoint(12, b"state"))
    await log.save_projection("other", [row("t1", 99)])
    await log.close()

    log = new_log()
    await log.open()
    assert await log.load_projection("lobby") == ProjectionCheckpoint(12, b"state")
    everything = await log.projection_rows("lobby", listed_only=False, offset=0, limit=100)
    assert [r.key for r in everything] == ["t7", "t3", "t6", "t2", "t5", "t1", "t4", "t0"]
    listed = await log.projection_rows("lobby", listed_only=True, offset=1, limit=3)
    assert [r.key for r in listed] == ["t6", "t2", "t5"]
    others = await log.projection_rows(
        "lobby", listed_only=False, offset=0, limit=3, excluded=["t7", "t6", "nope"]
    )
    assert [r.key for r in others] == ["t3", "t2", "t5"]
    assert await log.projection_row("lobby", "t5") == rows[5]
    assert await log.projection_row("lobby", "t9") is None
    assert await log.projection_row("other", "t1") == row("t1", 99)
    await log.close()


async def test_a_row_is_deleted_only_at_the_version_it_was_read(new_log: NewLog) -> None:
    """``delete_projection_rows`` removes a row still at the given version; one written again
    since (a replica renewing what another read as stale) stays, and so do the others."""
    log = new_log()
    await log.open()
    await log.save_projection("presence", [row("gone", 1), row("renewed", 2), row("kept", 3)])
    read = await log.projection_rows("presence", listed_only=False, offset=0, limit=10)
    await log.save_projection("presence", [row("renewed", 2, version=2)])
    await log.delete_projection_rows("presence", [r for r in read if r.key in ("gone", "renewed")])
    await log.delete_projection_rows("presence", [row("nowhere", 4)])
    left = await log.projection_rows("presence", listed_only=False, offset=0, limit=10)
    assert left == [row("kept", 3), row("renewed", 2, version=2)]
    await log.close()


async def test_older_rows_and_checkpoints_do_not_replace_newer_ones(new_log: NewLog) -> None:
    log = new_log()
    await log.open()
    await log.save_projection("lobby", [row("t1", 5, version=9)], ProjectionCheckpoint(40, b"a"))
    # A replica further behind writes what it folded: it changes nothing.
    await log.save_projection("lobby", [row("t1", 5, version=7)], ProjectionCheckpoint(30, b"b"))
    assert await log.projection_row("lobby", "t1") == row("t1", 5, version=9)
    assert await log.load_projection("lobby") == ProjectionCheckpoint(40, b"a")
    await log.save_projection("lobby", [row("t1", 5, version=10)], ProjectionCheckpoint(41, b"c"))
    assert await log.projection_row("lobby", "t1") == row("t1", 5, version=10)
    assert await log.load_projection("lobby") == ProjectionCheckpoint(41, b"c")

    await log.drop_projection("lobby")
    assert await log.load_projection("lobby") is None
    assert await log.projection_rows("lobby", listed_only=False, offset=0, limit=10) == []
    await log.save_projection("lobby", [], ProjectionCheckpoint(3, b"rebuilt"))
    assert await log.load_projection("lobby") == ProjectionCheckpoint(3, b"rebuilt")
    await log.close()
