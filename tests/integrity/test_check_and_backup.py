"""``spades-server check DATABASE`` and ``spades-server backup DATABASE DEST``, as run by an
operator: exit codes, what they print, and a backup taken while a real server writes the log."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import grpc
import pytest

from spades.v1 import lobby_pb2
from spades_server.eventlog.sqlite import marker_path, read_marker
from tests.integrity import logs
from tests.support.clients import Client
from tests.support.servers import running_server


def test_check_lists_every_finding(database: Path, made: logs.LogContents) -> None:
    finished, running = next(iter(made.finished)), next(iter(made.running))
    logs.execute(database, "DELETE FROM events WHERE stream_id = ? AND version = 20", (finished,))
    logs.replace_event(database, running, 4, b"\xff\xff not an event")
    checked = logs.run_command("check", str(database))
    assert checked.returncode == 2, checked
    assert f"{database}: NOT whole, 2 finding(s):" in checked.stderr
    assert f"table {finished} at sequence 20: its versions jump from 19 to 21" in checked.stderr
    assert f"table {running} at sequence 4: the event does not decode" in checked.stderr


def test_check_quick_skips_settled_history(database: Path, made: logs.LogContents) -> None:
    table_id, events = next(iter(made.finished.items()))
    logs.replay_a_card(database, table_id, events)
    quick = logs.run_command("check", "--quick", str(database))
    assert quick.returncode == 0, quick
    assert "3 replayed" in quick.stdout  # the three running tables
    assert logs.run_command("check", str(database)).returncode == 2


def test_check_of_a_missing_file(tmp_path: Path) -> None:
    checked = logs.run_command("check", str(tmp_path / "nothing.db"))
    assert checked.returncode == 2
    assert "nothing.db: NOT whole" in checked.stderr and "does not exist" in checked.stderr


@pytest.mark.asyncio
async def test_backup_while_a_server_writes_then_serve_the_copy(
    database: Path, made: logs.LogContents, tmp_path: Path
) -> None:
    copy = tmp_path / "backups" / "copy.db"
    copy.parent.mkdir()
    async with (
        running_server(database, house_bots=0) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        created = await Client(channel).create_table()
        backed_up = logs.run_command("backup", str(database), str(copy))
    assert backed_up.returncode == 0, backed_up
    # The running tables' clocks may add timeouts while the server runs on a loaded machine, so
    # the copy holds at least the log as made plus the new table, and exactly what it says.
    copied = re.search(r"(\d+) events copied", backed_up.stdout)
    assert copied is not None, backed_up.stdout
    assert int(copied.group(1)) >= made.events + 1
    assert f"{copy}: whole (7 tables" in backed_up.stdout
    assert read_marker(copy) == int(copied.group(1))
    assert logs.run_command("check", str(copy)).returncode == 0
    async with (
        running_server(copy, house_bots=0) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        listed = await Client(channel).lobby.ListTables(lobby_pb2.ListTablesRequest(page_size=50))
        names = {table.table_id for table in listed.tables}
        assert created.table.table_id in names
        assert set(made.running) <= names


def test_backup_never_overwrites(database: Path, tmp_path: Path) -> None:
    existing = tmp_path / "existing.db"
    existing.write_text("keep me")
    backed_up = logs.run_command("backup", str(database), str(existing))
    assert backed_up.returncode == 2
    assert "exists" in backed_up.stderr
    assert existing.read_text() == "keep me"


def test_backup_of_a_damaged_log_is_refused(database: Path, tmp_path: Path) -> None:
    logs.overwrite(database, 0, b"\x00" * 100)
    backed_up = logs.run_command("backup", str(database), str(tmp_path / "copy.db"))
    assert backed_up.returncode == 2
    assert "not an SQLite database" in backed_up.stderr
    assert not (tmp_path / "copy.db").exists()
    assert not marker_path(tmp_path / "copy.db").exists()


def test_the_server_still_takes_its_flags(database: Path, tmp_path: Path) -> None:
    # `check` and `backup` are words before the flags; the flags alone still run the server
    # (here refused at once, for a bad value, the way it was before).
    shutil.copyfile(database, tmp_path / "other.db")
    started = logs.start_server(tmp_path / "other.db", "--durability", "sometimes")
    assert started.returncode == 2
    assert "--durability" in started.stderr
