"""Damage the start-up does not look for is still never served: a table is checked when it is
first loaded (versions without a gap, every event decoded, the whole replayed by the engine), and
a damaged one is refused with DATA_LOSS (LOG_DAMAGED) naming the table and its first bad
sequence, logged as an error, while every other table is served.

The start replays only the tables in play (settled history is ``spades-server check``'s), and a
PostgreSQL log is not scanned at start at all: these are the cases where a changed card or a
deleted event would otherwise be served.
"""

from __future__ import annotations

from pathlib import Path

import asyncpg
import grpc
import pytest
from structlog.testing import capture_logs

from spades.v1 import play_pb2, play_pb2_grpc
from spades_server.domain import table_events
from spades_server.store import journal
from tests.integrity import logs
from tests.support.backends import POSTGRES_DSN, LogStorage
from tests.support.refusals import assert_call_refused
from tests.support.servers import running_server

pytestmark = pytest.mark.asyncio


async def assert_refused_as_damaged(
    play: play_pb2_grpc.PlayServiceAsyncStub, table_id: str, sequence: int, fault: str
) -> None:
    """GetRecord and GetView of the table are DATA_LOSS (LOG_DAMAGED), naming it, logged."""
    with capture_logs() as logged:
        for call in (
            play.GetRecord(play_pb2.GetRecordRequest(table_id=table_id)),
            play.GetView(play_pb2.GetViewRequest(table_id=table_id)),
        ):
            try:
                await call
            except grpc.aio.AioRpcError as error:
                assert_call_refused(error, grpc.StatusCode.DATA_LOSS, "LOG_DAMAGED")
                said = error.details() or ""
                assert f"table {table_id} is damaged at sequence {sequence}: {fault}" in said
            else:
                raise AssertionError(f"the damaged table {table_id} was served")
    assert any(
        entry["log_level"] == "error" and entry.get("table_id") == table_id for entry in logged
    ), logged


async def test_a_finished_table_with_a_changed_card_is_refused_not_served(
    database: Path, made: logs.LogContents
) -> None:
    (damaged, events), (whole, whole_events) = list(made.finished.items())[:2]
    changed = logs.replay_a_card(database, damaged, events)
    async with (
        running_server(database, house_bots=0) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        play = play_pb2_grpc.PlayServiceStub(channel)
        record = (await play.GetRecord(play_pb2.GetRecordRequest(table_id=whole))).record
        assert len(record.events) == len(whole_events)  # the control is served whole
        await assert_refused_as_damaged(play, damaged, changed, "does not replay")


async def test_an_event_deleted_from_a_postgresql_table_is_refused_not_served(
    tmp_path: Path, postgres: None, made: logs.LogContents
) -> None:
    storage = LogStorage("postgres", tmp_path / "tables")
    log = storage.new_log()
    await log.open()
    try:
        for table_id, events in made.finished.items():
            await log.append(table_id, 0, [journal.encode(d) for d in table_events.drafts(events)])
    finally:
        await log.close()
    damaged, whole = list(made.finished)[:2]
    connection = await asyncpg.connect(
        POSTGRES_DSN, server_settings={"search_path": storage.schema}
    )
    try:
        await connection.execute(
            "DELETE FROM events WHERE stream_id = $1 AND version = 12", damaged
        )
    finally:
        await connection.close()
    try:
        async with (
            running_server(storage, house_bots=0) as server,
            grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
        ):
            play = play_pb2_grpc.PlayServiceStub(channel)
            await play.GetRecord(play_pb2.GetRecordRequest(table_id=whole))  # the control
            await assert_refused_as_damaged(
                play, damaged, 12, "its versions jump from 11 to 13: events are missing"
            )
    finally:
        await storage.remove()
