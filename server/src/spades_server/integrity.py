"""Is an event log whole? The checks the server runs at start, and ``spades-server check``.

A log that is not whole must be refused, not served: serving it would show players less than
they were acknowledged, or a history the engine never produced. What is checked, and when:

=================================================  ===================  ==================
check                                              at start             ``check``
=================================================  ===================  ==================
the file opens, is SQLite, has the ``events``      yes (on open)        yes
table, can be written
the committed marker (nothing acknowledged lost)   yes (on open)        yes
SQLite's own check of the file                     ``quick_check``      ``integrity_check``
every table's versions 1..N without a gap          yes (one query)      yes
each table's last event decodes                    yes                  yes
every event decodes and replays through the        tables still in      every table
engine (the engine reproduces each event)          play or waiting
=================================================  ===================  ==================

At start the server folds the tables still in play anyway, so checking them costs little; a
finished table is settled history, replayed by ``check`` (run it from cron, or on a backup).
A finding names the table and its first bad sequence.

:func:`backup` copies a log with SQLite's online backup API (consistent even while a server
writes it) and gives the copy its committed marker, so the copy starts and checks clean.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sqlite3
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from google.protobuf.message import DecodeError

from spades import protocol, records
from spades.engine import events as ev
from spades.v1 import events_pb2
from spades_server.eventlog.base import EventLog, LogDamaged
from spades_server.eventlog.sqlite import (
    SqliteEventLog,
    describe_sqlite_error,
    read_marker,
    write_marker,
)

__all__ = ["Finding", "backup", "check_at_start", "check_database", "explain", "main"]

SQLITE_HEADER = b"SQLite format 3\x00"
#: A table whose last event is one of these is finished: its history is settled.
_FINISHED_KINDS = frozenset(("match_ended", "seed_revealed"))
#: How many findings a refusal names (``check`` lists them all).
_NAMED_AT_START = 5
_GAPS = (
    "SELECT stream_id FROM events GROUP BY stream_id"
    " HAVING MIN(version) != 1 OR MAX(version) != COUNT(*)"
)
_LAST_EVENTS = (
    "SELECT e.stream_id, e.version, e.data FROM events AS e"
    " JOIN (SELECT stream_id, MAX(version) AS head FROM events GROUP BY stream_id) AS last"
    " ON e.stream_id = last.stream_id AND e.version = last.head"
)
_STREAM = "SELECT version, data FROM events WHERE stream_id = ? ORDER BY version"
_ALL_STREAMS = "SELECT DISTINCT stream_id FROM events"


@dataclass(frozen=True)
class Finding:
    """One thing wrong with a log: a table and its first bad sequence, when it is a table's."""

    problem: str
    table_id: str = ""
    sequence: int = 0

    def __str__(self) -> str:
        if not self.table_id:
            return self.problem
        return f"table {self.table_id} at sequence {self.sequence}: {self.problem}"


@dataclass
class Report:
    """What a check found, and how much it looked at."""

    findings: list[Finding]
    tables: int = 0
    events: int = 0
    replayed: int = 0
    seconds: float = 0.0


def check_database(path: str | os.PathLike[str], *, full: bool) -> Report:
    """Check the SQLite log at ``path``: every check when ``full``, else the start-up set.

    Reads only (a server may be running on the file). Runs on the calling thread: it is
    blocking work, so the server calls it in a worker thread.
    """
    started = time.perf_counter()
    report = Report(_file_findings(Path(path)))
    if not report.findings:
        try:
            with contextlib.closing(_connect_read_only(Path(path))) as connection:
                _check_connection(connection, Path(path), full, report)
        except sqlite3.Error as error:
            report.findings.append(Finding(describe_sqlite_error(error)))
    report.seconds = time.perf_counter() - started
    return report


def _file_findings(path: Path) -> list[Finding]:
    """What is wrong with the file before SQLite reads it."""
    try:
        with path.open("rb") as file:
            header = file.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return [Finding("does not exist")]
    except OSError as error:
        return [Finding(f"cannot be read ({error.strerror or error})")]
    if not header:
        return [Finding("is empty (0 bytes): it holds no event log")]
    if header != SQLITE_HEADER:
        return [Finding("is not an SQLite database, or its header is damaged")]
    return []


def _connect_read_only(path: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    connection.execute("PRAGMA query_only = ON")
    connection.execute("PRAGMA busy_timeout = 5000")
    return connection


def _check_connection(
    connection: sqlite3.Connection, path: Path, full: bool, report: Report
) -> None:
    findings = report.findings
    pragma = "integrity_check" if full else "quick_check"
    problems = [row[0] for row in connection.execute(f"PRAGMA {pragma}")]
    if problems != ["ok"]:
        shown = "; ".join(problems[:3]) + (f" (and {len(problems) - 3} more)" * (len(problems) > 3))
        findings.append(Finding(f"is damaged, says SQLite's {pragma}: {shown}"))
        return
    columns = {row[1] for row in connection.execute("PRAGMA table_info(events)")}
    if "stream_id" not in columns or "data" not in columns:
        findings.append(Finding("has no events table, so it is not a whole event log"))
        return
    head, report.events = connection.execute(
        "SELECT COALESCE(MAX(position), 0), COUNT(*) FROM events"
    ).fetchone()
    committed = read_marker(path)
    if committed is not None and head < committed:
        findings.append(
            Finding(
                f"holds events up to position {head}, but {committed} were committed: "
                "acknowledged events are missing"
            )
        )
    gapped = {stream_id for (stream_id,) in connection.execute(_GAPS)}
    for stream_id in sorted(gapped):
        findings.append(_first_gap(connection, stream_id))
    to_replay: list[str] = []
    for stream_id, version, data in connection.execute(_LAST_EVENTS):
        report.tables += 1
        if stream_id in gapped:
            continue
        try:
            kind = events_pb2.Event.FromString(data).WhichOneof("kind")
        except DecodeError as error:
            findings.append(Finding(f"the event does not decode ({error})", stream_id, version))
            continue
        if full or kind not in _FINISHED_KINDS:
            to_replay.append(stream_id)
    for stream_id in to_replay:
        finding = _replay_stream(connection, stream_id)
        report.replayed += 1
        if finding is not None:
            findings.append(finding)


def _first_gap(connection: sqlite3.Connection, stream_id: str) -> Finding:
    expected = 1
    for (version,) in connection.execute(
        "SELECT version FROM events WHERE stream_id = ? ORDER BY version", (stream_id,)
    ):
        if version != expected:
            break
        expected += 1
    return Finding(
        f"its versions jump from {expected - 1} to {version}: events are missing",
        stream_id,
        expected,
    )


def _replay_stream(connection: sqlite3.Connection, stream_id: str) -> Finding | None:
    """Decode a stream's events and replay them through the engine; the first bad one."""
    engine_events: list[ev.Event] = []
    for version, data in connection.execute(_STREAM, (stream_id,)):
        try:
            message = events_pb2.Event.FromString(data)
        except DecodeError as error:
            return Finding(f"the event does not decode ({error})", stream_id, version)
        try:
            engine_events.append(protocol.event_from_proto(message))
        except ValueError as error:
            return Finding(f"the event is not one the engine knows ({error})", stream_id, version)
    if not isinstance(engine_events[0], ev.TableCreated):
        return None  # not a table's stream: nothing the engine can replay
    try:
        records.replay(records.build_record(engine_events, stream_id, public=False))
    except records.NotReplayable:
        return None  # nothing the engine could reproduce (no seed): decoding was the check
    except records.ReplayError as error:
        return Finding(f"does not replay: {error.reason}", stream_id, error.index + 1)
    except records.RecordError as error:
        return Finding(f"does not replay: {error}", stream_id, 1)
    return None


def _refusal(where: str, findings: Sequence[Finding]) -> LogDamaged:
    named = [str(finding) for finding in findings[:_NAMED_AT_START]]
    if len(findings) > _NAMED_AT_START:
        named.append(
            f"and {len(findings) - _NAMED_AT_START} more (spades-server check {where} lists all)"
        )
    return LogDamaged(where, named)


async def check_at_start(log: EventLog) -> None:
    """The start-up checks of an opened log; on a finding, close it and raise LogDamaged.

    Only the SQLite file is checked: PostgreSQL guards its own storage, and a replica starting
    must not hold up the others with a scan of the shared log.
    """
    if not isinstance(log, SqliteEventLog):
        return
    report = await asyncio.to_thread(check_database, log.path, full=False)
    if report.findings:
        await log.close()
        raise _refusal(str(log.path), report.findings)


async def explain(log: EventLog, error: Exception) -> LogDamaged:
    """Why the server could not start on ``log`` (the lobby could not be rebuilt from it):
    the table at fault, found by the full check, or the error itself."""
    where = str(getattr(log, "path", "the event log"))
    with contextlib.suppress(Exception):
        await log.close()
    if isinstance(log, SqliteEventLog):
        report = await asyncio.to_thread(check_database, log.path, full=True)
        if report.findings:
            return _refusal(where, report.findings)
    cause = f"{type(error).__name__}: {error}"
    return LogDamaged(where, [f"the lobby cannot be rebuilt from it ({cause})"])


# -- backup ---------------------------------------------------------------------------------


def backup(source: str | os.PathLike[str], destination: str | os.PathLike[str]) -> int:
    """Copy the log at ``source`` to the new file ``destination`` (SQLite's online backup: a
    consistent copy even while a server writes the source); returns the events copied."""
    source_path, target = Path(source), Path(destination)
    problems = _file_findings(source_path)
    if problems:
        raise LogDamaged(str(source_path), [str(problem) for problem in problems])
    if target.exists():
        raise FileExistsError(f"{target} exists; a backup goes to a new file")
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    try:
        with (
            contextlib.closing(_connect_read_only(source_path)) as reader,
            contextlib.closing(sqlite3.connect(partial, isolation_level=None)) as copy,
        ):
            reader.backup(copy)
            copy.execute("PRAGMA journal_mode = DELETE")  # one self-contained file
            head, count = copy.execute(
                "SELECT COALESCE(MAX(position), 0), COUNT(*) FROM events"
            ).fetchone()
        write_marker(target, head)
        partial.rename(target)  # only a complete copy takes the name
    except sqlite3.Error as error:
        partial.unlink(missing_ok=True)
        raise LogDamaged(str(source_path), [describe_sqlite_error(error)]) from None
    return int(count)


# -- the commands ---------------------------------------------------------------------------

COMMANDS = ("check", "backup")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="spades-server", description="Event-log tools.")
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser(
        "check",
        help="check that an event log is whole (exit 0), or list what is wrong (exit 2)",
        description="Run every check on a SQLite event log: SQLite's integrity_check, the "
        "committed marker, version gaps, and decoding and replaying every table.",
    )
    check.add_argument("database", help="the SQLite event log file")
    check.add_argument(
        "--quick", action="store_true", help="only the checks the server runs at start"
    )
    copy = commands.add_parser(
        "backup",
        help="copy an event log consistently (also while a server runs on it)",
        description="Copy a SQLite event log with SQLite's online backup API; the copy gets "
        "its committed marker and is checked.",
    )
    copy.add_argument("database", help="the SQLite event log file")
    copy.add_argument("destination", help="the new file to write (must not exist)")
    return parser


def main(argv: Sequence[str]) -> int:
    """``spades-server check DATABASE`` and ``spades-server backup DATABASE DEST``."""
    arguments = _parser().parse_args(list(argv))
    if arguments.command == "backup":
        try:
            copied = backup(arguments.database, arguments.destination)
        except (LogDamaged, OSError) as error:
            print(f"spades-server backup: {error}", file=sys.stderr)
            return 2
        print(f"{arguments.destination}: {copied} events copied from {arguments.database}")
        return _report(arguments.destination, check_database(arguments.destination, full=True))
    full = not arguments.quick
    return _report(arguments.database, check_database(arguments.database, full=full))


def _report(database: str, report: Report) -> int:
    for line in _lines(database, report):
        print(line, file=sys.stderr if report.findings else sys.stdout)
    return 2 if report.findings else 0


def _lines(database: str, report: Report) -> Iterator[str]:
    if report.findings:
        yield f"{database}: NOT whole, {len(report.findings)} finding(s):"
        for finding in report.findings:
            yield f"  {finding}"
        return
    yield (
        f"{database}: whole ({report.tables} tables, {report.events} events, "
        f"{report.replayed} replayed, in {report.seconds:.2f} s)"
    )
