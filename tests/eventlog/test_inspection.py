"""The read-only look at a log's storage (``eventlog.inspection``): what the SQLite backend
answers of a real file (whole, an event removed, the marker ahead, not a database, no events
table), that a log hands out its own inspection (PostgreSQL none, and says why), and the URL
tools (``inspection_from_url``, ``backup_from_url``).

The decoding and replay of the events are not the log's: ``tests/integrity`` checks them through
``spades_server.integrity``.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from spades_server.eventlog import (
    LogDamaged,
    LogUrlInvalid,
    PostgresEventLog,
    SqliteEventLog,
    StorageFinding,
    StreamSummary,
    backup_from_url,
    inspection_from_url,
    log_url,
)
from spades_server.eventlog.sqlite import SqliteInspection, marker_path, read_marker, write_marker

EVENTS = {"table-1": [b"a1", b"a2", b"a3"], "account-x": [b"x1"], "table-2": [b"b1", b"b2"]}


@pytest.fixture
def database(tmp_path: Path) -> Path:
    """A real log file holding EVENTS (closed again)."""
    path = tmp_path / "events.db"

    async def write() -> None:
        async with SqliteEventLog(path) as log:
            for stream_id, events in EVENTS.items():
                await log.append(stream_id, 0, events)

    asyncio.run(write())
    return path


def execute(path: Path, sql: str) -> None:
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute(sql)
    finally:
        connection.close()


@pytest.mark.parametrize("depth", ["scan", "quick", "full"])
def test_a_whole_log_has_no_findings_and_reads_back(database: Path, depth: str) -> None:
    with SqliteInspection(database) as inspection:
        scan = inspection.scan(depth)  # type: ignore[arg-type]
        assert scan.findings == [] and scan.readable and scan.events == 6
        assert sorted(inspection.streams(), key=lambda stream: stream.stream_id) == [
            StreamSummary("account-x", True, 1, b"x1"),
            StreamSummary("table-1", True, 3, b"a3"),
            StreamSummary("table-2", True, 2, b"b2"),
        ]
        assert list(inspection.stream_events("table-1")) == [(1, b"a1"), (2, b"a2"), (3, b"a3")]
        assert list(inspection.stream_events("nothing")) == []
        assert sorted(inspection.all_events()) == sorted(
            (stream_id, version, data)
            for stream_id, events in EVENTS.items()
            for version, data in enumerate(events, start=1)
        )
    assert inspection.where == str(database)


def test_a_removed_event_is_a_gap_named_by_stream_and_version(database: Path) -> None:
    execute(database, "DELETE FROM events WHERE stream_id = 'table-1' AND version = 2")
    with SqliteInspection(database) as inspection:
        scan = inspection.scan("scan")
        gap = StorageFinding("its versions jump from 1 to 3: events are missing", "table-1", 2)
        assert scan.findings == [gap] and scan.events == 5
        assert inspection.scan("quick").findings == []  # (the caller reads the streams)
        gapped = [stream for stream in inspection.streams() if not stream.gap_free]
        assert [stream.stream_id for stream in gapped] == ["table-1"]
        assert inspection.first_gap("table-1") == gap


def test_a_marker_ahead_of_the_file_says_acknowledged_events_are_missing(database: Path) -> None:
    committed = read_marker(database)
    assert committed == 6
    write_marker(database, 9)
    with SqliteInspection(database) as inspection:
        scan = inspection.scan("quick")
    assert scan.readable and [finding.problem for finding in scan.findings] == [
        "holds events up to position 6, but 9 were committed: acknowledged events are missing"
    ]


def test_an_unreadable_marker_is_a_finding_that_stops_the_check(database: Path) -> None:
    marker_path(database).write_bytes(b"garbage")
    with SqliteInspection(database) as inspection:
        scan = inspection.scan("quick")
    assert not scan.readable
    assert scan.findings == [
        StorageFinding(
            f"{marker_path(database)}: the committed marker holds 'garbage', not a position"
        )
    ]


def test_a_database_without_the_events_table_is_not_the_logs(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    execute(other, "CREATE TABLE notes (text TEXT)")
    with SqliteInspection(other) as inspection:
        scan = inspection.scan("full")
    assert not scan.readable
    assert scan.findings == [
        StorageFinding("has no events table (dropped, or another program's database)")
    ]


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "does not exist"),
        (b"", "is empty (0 bytes): it holds no event log"),
        (b"my notes\n" * 50, "is not an SQLite database, or its header is damaged"),
    ],
)
def test_a_file_sqlite_cannot_read_is_damaged_naming_it(
    tmp_path: Path, content: bytes | None, problem: str
) -> None:
    path = tmp_path / "events.db"
    if content is not None:
        path.write_bytes(content)
    inspection = SqliteInspection(path)  # reads nothing yet
    with inspection, pytest.raises(LogDamaged) as refused:
        inspection.scan("scan")
    assert refused.value.where == str(path) and refused.value.problems == [problem]


def test_each_log_hands_out_its_own_inspection(tmp_path: Path) -> None:
    log = SqliteEventLog(tmp_path / "events.db")
    assert log.where == str(tmp_path / "events.db")
    inspection = log.inspection()
    assert isinstance(inspection, SqliteInspection) and inspection.path == log.path
    postgres = PostgresEventLog("postgresql://spades@127.0.0.1:1/spades")
    assert postgres.inspection() is None  # PostgreSQL guards its own storage
    assert postgres.where == "the event log"
    assert not postgres.unchanged_since_clean_close and not postgres.verified


def test_the_url_tools_serve_sqlite_and_say_why_not_postgresql(
    database: Path, tmp_path: Path
) -> None:
    with inspection_from_url(log_url(database, None)) as inspection:
        assert inspection.scan("quick").events == 6
    copy = tmp_path / "copy.db"
    assert backup_from_url(log_url(database, None), log_url(copy, None)) == 6
    assert read_marker(copy) == 6 and not copy.with_name("copy.db.partial").exists()
    with SqliteInspection(copy) as inspection:
        assert inspection.scan("full").findings == []
    with pytest.raises(FileExistsError):
        backup_from_url(log_url(database, None), log_url(copy, None))
    for refused in (
        lambda: inspection_from_url("postgresql://spades@db/spades"),
        lambda: backup_from_url("postgres://spades@db/spades", log_url(copy, None)),
    ):
        with pytest.raises(LogUrlInvalid, match="PostgreSQL guards its own storage"):
            refused()
    with pytest.raises(LogUrlInvalid, match="invalid DSN or URL"):
        inspection_from_url("mysql://db/spades")


def test_a_backup_of_a_file_that_is_not_a_log_is_refused_naming_it(tmp_path: Path) -> None:
    source = tmp_path / "notes.db"
    source.write_text("notes\n" * 50)
    with pytest.raises(LogDamaged) as refused:
        backup_from_url(log_url(source, None), log_url(tmp_path / "copy.db", None))
    assert refused.value.where == str(source)
    assert not (tmp_path / "copy.db").exists()
