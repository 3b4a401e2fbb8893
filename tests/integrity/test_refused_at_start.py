"""A log that is not whole is refused at start: exit 2, one line naming the file and the fault.

Each case damages a real log of finished and running tables (written by the engine through the
real SQLite log) the way the outside fault campaign did, then starts the real ``spades-server``.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from spades.v1 import events_pb2
from spades_server.store import journal
from spades_server.v1 import log_pb2
from tests.integrity import logs


def test_a_whole_log_starts(database: Path) -> None:
    # The control: the same copy, undamaged, is served (the server waits for a signal, so
    # here the checks alone run, through the command that shares them).
    checked = logs.run_command("check", str(database))
    assert checked.returncode == 0, checked
    assert "whole (6 tables" in checked.stdout


def test_file_truncated_to_half(database: Path) -> None:
    size = database.stat().st_size
    os.truncate(database, size // 2)
    logs.assert_refused(database)


def test_eight_kilobytes_of_garbage_inside(database: Path) -> None:
    size = database.stat().st_size
    logs.overwrite(database, size // 2, random.Random(1).randbytes(8192))
    logs.assert_refused(database, "damaged")


def test_damaged_header(database: Path) -> None:
    logs.overwrite(database, 0, b"\x00" * 100)
    logs.assert_refused(database, "not an SQLite database, or its header is damaged")


def test_not_a_database(database: Path) -> None:
    database.write_text("these are my notes, not an event log\n" * 200)
    logs.assert_refused(database, "not an SQLite database")


def test_events_table_dropped(database: Path) -> None:
    logs.execute(database, "DROP TABLE events")
    logs.assert_refused(database, "no events table")


def test_event_bytes_replaced_in_a_running_table(database: Path, made: logs.LogContents) -> None:
    table_id = next(iter(made.running))
    logs.replace_event(database, table_id, 7, b"\xff\xff\xff\xff not protobuf")
    logs.assert_refused(database, f"table {table_id} at sequence 7", "does not decode")


def test_event_bytes_replaced_in_a_finished_table(database: Path, made: logs.LogContents) -> None:
    # Finished tables are not replayed at start, but the lobby reads them: the fault is then
    # found and named instead of taking the service down with a DecodeError.
    table_id = next(iter(made.finished))
    logs.replace_event(database, table_id, 9, b"\xff\xff\xff\xff not protobuf")
    logs.assert_refused(database, f"table {table_id} at sequence 9", "does not decode")


@pytest.mark.parametrize("kind", ["running", "finished"])
def test_version_gap(database: Path, made: logs.LogContents, kind: str) -> None:
    table_id = next(iter(made.running if kind == "running" else made.finished))
    logs.execute(database, "DELETE FROM events WHERE stream_id = ? AND version = 12", (table_id,))
    logs.assert_refused(database, f"table {table_id} at sequence 12", "versions jump from 11 to 13")


def test_card_changed_to_an_illegal_one_in_a_running_table(
    database: Path, made: logs.LogContents
) -> None:
    table_id, events = next(iter(made.running.items()))
    changed = logs.replay_a_card(database, table_id, events)
    logs.assert_refused(database, f"table {table_id} at sequence {changed}", "does not replay")


def test_card_changed_in_a_finished_table_is_found_by_check(
    database: Path, made: logs.LogContents
) -> None:
    # Settled history is not replayed at every start (too slow for 100,000 tables); the full
    # check replays it and names the table.
    table_id, events = next(iter(made.finished.items()))
    changed = logs.replay_a_card(database, table_id, events)
    checked = logs.run_command("check", str(database))
    assert checked.returncode == 2, checked
    assert f"table {table_id} at sequence {changed}: does not replay" in checked.stderr


@pytest.mark.parametrize(
    "row",
    [
        journal.ENVELOPE_MARKER + log_pb2.LogEntry().SerializeToString(),  # an empty envelope
        events_pb2.Event().SerializeToString(),  # an empty row of the older, plain form
    ],
    ids=["envelope", "plain"],
)
def test_an_empty_event_where_an_event_was(
    database: Path, made: logs.LogContents, row: bytes
) -> None:
    table_id = next(iter(made.running))
    logs.replace_event(database, table_id, 3, row)
    logs.assert_refused(database, f"table {table_id} at sequence 3", "not one the engine knows")


needs_chattr = pytest.mark.skipif(
    os.geteuid() != 0 or not logs.has_chattr(),
    reason="making a file immutable needs root and chattr",
)


@needs_chattr
def test_read_only_immutable_log(database: Path) -> None:
    with logs.immutable(database):
        logs.assert_refused(database, "cannot be written")


@needs_chattr
def test_folder_not_writable(database: Path) -> None:
    with logs.immutable(database.parent):
        logs.assert_refused(database, f"the folder {database.parent} is not writable")
