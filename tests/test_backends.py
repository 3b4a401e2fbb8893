"""The rule for the PostgreSQL runs of the server suites: skipped locally without a server
(failed under CI, as every skip: tests/support/skips.py), and documented as such; and the
storage a test's server process is given."""

from __future__ import annotations

import asyncio
from pathlib import Path

import asyncpg
import pytest

from tests.support.backends import (
    DEFAULT_POSTGRES_DSN,
    POSTGRES_DSN,
    LogStorage,
    Storages,
    dsn_with_schema,
    in_ci,
    probe_postgres,
    read_to_head,
    require_postgres,
)
from tests.support.processes import unanswered_address

README = Path(__file__).resolve().parents[1] / "README.md"


def test_a_postgresql_that_does_not_answer_is_named_with_the_error() -> None:
    with unanswered_address() as address:
        dsn = f"postgresql://postgres@{address}/test"
        reason = probe_postgres(dsn)
    assert reason is not None and dsn in reason, reason


@pytest.mark.parametrize("value", ["true", "1", "yes", "True"])
def test_ci_is_any_true_value_of_the_ci_variable(value: str) -> None:
    assert in_ci({"CI": value})


@pytest.mark.parametrize("environ", [{}, {"CI": ""}, {"CI": "false"}, {"CI": "0"}])
def test_a_missing_postgresql_skips_saying_how_to_run(environ: dict[str, str]) -> None:
    """A skip here; under CI every skip fails (tests/structure/test_skips.py runs that)."""
    assert not in_ci(environ)
    with pytest.raises(pytest.skip.Exception) as skipped:
        require_postgres("no PostgreSQL server at 'x'")
    message = str(skipped.value)
    assert "no PostgreSQL server" in message and "SPADES_TEST_POSTGRES_DSN" in message


def test_the_readme_states_the_rule_and_the_default_server() -> None:
    text = " ".join(README.read_text().split())
    assert "SPADES_TEST_POSTGRES_DSN" in text
    assert f"`{DEFAULT_POSTGRES_DSN}`" in text
    assert "except under CI (`CI` set), where they fail" in text


def test_a_storage_name_gives_the_same_storage_and_a_schema_of_its_own(tmp_path: Path) -> None:
    storages = Storages("postgres", tmp_path)
    assert storages("silent") is storages("silent")
    assert storages("silent").schema != storages().schema
    other_test = Storages("postgres", tmp_path / "elsewhere")
    assert other_test().schema != storages().schema


def test_a_server_process_is_pointed_at_its_storage(tmp_path: Path) -> None:
    sqlite = LogStorage("sqlite", tmp_path / "tables.db")
    assert sqlite.flags() == ["--database", str(tmp_path / "tables.db")]
    postgres = LogStorage("postgres", tmp_path / "tables.db")
    flag, dsn = postgres.flags()
    assert flag == "--postgres-dsn" and dsn == dsn_with_schema(postgres.schema)
    assert dsn.endswith(f"search_path={postgres.schema}")
    assert dsn_with_schema("s", "postgresql://u@h/db?application_name=x&search_path=old") == (
        "postgresql://u@h/db?application_name=x&search_path=s"
    )


@pytest.mark.asyncio
async def test_a_log_read_to_its_head_waits_for_a_hole_to_be_proven_final(
    tmp_path: Path, postgres: None
) -> None:
    """A position drawn and never used (a conflict's loser, a killed statement) under newer
    events, while an older transaction is open on the cluster: ``read_all`` stops at the hole
    until that transaction ends, so reading until it returns nothing would miss the newest
    events (a fault test's finished match read without its end); ``read_to_head`` gets all."""
    storage = LogStorage("postgres", tmp_path / "hole.db")
    await storage.prepare()
    holder = await asyncpg.connect(POSTGRES_DSN)
    try:
        async with storage.new_log() as log:
            await log.append("table-1", 0, [b"one"])
            await holder.fetchval(
                f"SELECT nextval(pg_get_serial_sequence('\"{storage.schema}\".events', 'position'))"
            )
            older = holder.transaction()
            await older.start()
            await holder.fetchval("SELECT pg_current_xact_id()")
            await log.append("table-1", 1, [b"two", b"three"])
        async with storage.new_log() as log:
            assert [row.version for row in await log.read_all()] == [1]  # stops at the hole
            ending = asyncio.get_running_loop().call_later(
                0.3, lambda: asyncio.ensure_future(older.rollback())
            )
            try:
                assert [row.version for row in await read_to_head(log, timeout=10)] == [1, 2, 3]
            finally:
                ending.cancel()
    finally:
        await holder.close()
        await storage.remove()
