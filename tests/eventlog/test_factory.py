"""The log chosen by URL (``eventlog.factory``): each scheme gives its backend, a path is read as
SQLAlchemy reads it (three slashes then a relative path, a fourth for an absolute one), today's
flags map onto a URL and back, and a URL no backend serves is refused naming it and the schemes.

Real components: the SQLite logs are real files opened and written; the PostgreSQL one is opened
on the test server, in a schema of the test's own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from spades_server.eventlog import (
    EventLogError,
    LogUrlInvalid,
    PostgresEventLog,
    SqliteEventLog,
    log_from_url,
    log_url,
)
from spades_server.eventlog.factory import sqlite_path
from tests.support.backends import (
    create_schema,
    drop_schema,
    dsn_with_schema,
    schema_for,
)


@pytest.mark.asyncio
async def test_a_relative_sqlite_url_is_a_file_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "var").mkdir()
    log = log_from_url("sqlite:///var/spades.db", durability="full")
    assert isinstance(log, SqliteEventLog)
    assert log.path == Path("var/spades.db") and not log.path.is_absolute()
    assert log.durability == "full"
    async with log:
        await log.append("table-1", 0, [b"created"])
    assert (tmp_path / "var" / "spades.db").is_file()


@pytest.mark.asyncio
async def test_an_absolute_sqlite_url_has_a_fourth_slash(tmp_path: Path) -> None:
    database = tmp_path / "events.db"
    url = f"sqlite:///{database}"
    assert url.startswith("sqlite:////")
    log = log_from_url(url)
    assert isinstance(log, SqliteEventLog)
    assert log.path == database and log.durability == "normal"
    async with log:
        await log.append("table-1", 0, [b"created"])
    async with log_from_url(url) as again:
        assert await again.stream_version("table-1") == 1


@pytest.mark.parametrize(
    "database",
    ["spades.db", "var/spades.db", "/var/lib/spades/spades.db", "odd name %20?#.db", "é/ü.db"],
)
def test_log_url_maps_a_database_flag_onto_a_url_and_back(database: str) -> None:
    url = log_url(database, None)
    assert url.startswith("sqlite:///")
    assert sqlite_path(url) == Path(database)
    assert log_url(Path(database), "") == url


def test_log_url_prefers_the_postgres_dsn() -> None:
    dsn = "postgresql://spades@db.example:5432/spades"
    assert log_url("spades.db", dsn) == dsn
    assert log_url(None, dsn) == dsn


def test_log_url_needs_a_file_or_a_dsn() -> None:
    with pytest.raises(LogUrlInvalid, match="give a database file or a PostgreSQL DSN"):
        log_url(None, None)
    with pytest.raises(LogUrlInvalid):
        log_url("", "")


@pytest.mark.parametrize("scheme", ["postgresql", "postgres", "PostgreSQL"])
def test_a_postgres_url_is_the_postgres_logs_dsn(scheme: str) -> None:
    url = f"{scheme}://spades@db.example:5432/spades?sslmode=disable"
    log = log_from_url(url, durability="full")  # (SQLite's setting: ignored here)
    assert isinstance(log, PostgresEventLog)
    assert log.dsn == url and log.fanout == ""
    notify = log_from_url(url, fanout="postgres")  # LISTEN/NOTIFY, as --fanout names it
    assert isinstance(notify, PostgresEventLog) and notify.fanout == ""
    nats = log_from_url(url, fanout="nats://127.0.0.1:4222")
    assert isinstance(nats, PostgresEventLog) and nats.fanout == "nats://127.0.0.1:4222"


@pytest.mark.asyncio
async def test_a_postgres_url_opens_the_shared_log(tmp_path: Path, postgres: None) -> None:
    schema = schema_for(tmp_path)
    await create_schema(schema)
    try:
        async with log_from_url(dsn_with_schema(schema)) as log:
            assert isinstance(log, PostgresEventLog)
            await log.append("table-1", 0, [b"created"])
            assert await log.stream_version("table-1") == 1
    finally:
        await drop_schema(schema)


@pytest.mark.parametrize(
    "url",
    ["not-a-dsn", "", "mysql://spades@db/spades", "file:///var/spades.db", "spades.db"],
)
def test_a_url_no_backend_serves_is_refused_naming_it_and_the_schemes(url: str) -> None:
    with pytest.raises(LogUrlInvalid) as refused:
        log_from_url(url)
    message = str(refused.value)
    assert f"{url!r}" in message
    assert "invalid DSN or URL" in message
    assert "sqlite:///PATH" in message and "postgresql://" in message and "postgres://" in message
    assert isinstance(refused.value, EventLogError) and isinstance(refused.value, ValueError)


def test_a_refused_url_does_not_show_its_password() -> None:
    with pytest.raises(LogUrlInvalid) as refused:
        log_from_url("mysql://spades:hunter2@db/spades")
    assert "hunter2" not in str(refused.value)
    assert "mysql://spades:***@db/spades" in str(refused.value)


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("sqlite://host/spades.db", "three slashes"),
        ("sqlite:spades.db", "three slashes"),
        ("sqlite:///", "names no file"),
        ("sqlite:///spades.db?mode=ro", "takes no query"),
    ],
)
def test_a_sqlite_url_that_names_no_file_is_refused(url: str, said: str) -> None:
    with pytest.raises(LogUrlInvalid, match=said):
        log_from_url(url)
