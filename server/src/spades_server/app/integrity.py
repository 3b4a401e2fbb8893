"""Is an event log whole? The checks the server runs at start, and ``spades-server check``.

A log that is not whole must be refused, not served: serving it would show players less than
they were acknowledged, or a history the engine never produced. What is checked, and when:

==============================================  ====================  ====================
check                                           at start              ``check``
==============================================  ====================  ====================
the file opens, is SQLite, has the ``events``   yes (on open)         yes
table, and can be written (folder too)
the committed marker: nothing acknowledged      yes (on open)         yes
is missing
SQLite's own check of the file                  ``quick_check`` [1]   ``integrity_check``
no event removed (count = highest position;     yes [1]               every table
then the tables with a version gap)
every event decodes and replays through the     tables in play [1]    every table
engine (it reproduces each event)
==============================================  ====================  ====================

[1] skipped when the file is exactly as this server left it at a clean close (the committed
marker's clean stamp, see ``eventlog/sqlite/marker.py``): a clean restart of a big log costs
nothing, a start after a crash or on a file changed since pays for the scan. ``check --quick``
runs the start-up set on its own (the tables not finished are found from their last events).

At start the server folds the tables still in play anyway, so replaying them costs little; a
finished table is settled history, replayed by ``check`` (run it from cron, or on a backup).
A finding names the table and its first bad sequence.

The storage is the log backend's to read (``EventLog.inspection()``, or
``inspection_from_url`` for a log named by URL: ``eventlog.inspection``); what its events mean is
this module's: it decodes them and replays the tables through the engine. :func:`backup` is the
backend's online backup (``eventlog.sqlite.integrity``), which gives the copy its committed
marker, so the copy starts and checks clean.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Awaitable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from google.protobuf.message import DecodeError

from spades.engine import events as ev
from spades_server.domain import replays
from spades_server.eventlog import (
    EventLog,
    LogDamaged,
    LogInspection,
    StorageFinding,
    StoredEvent,
    backup_from_url,
    inspection_from_url,
    log_url,
)
from spades_server.store import (
    codecs,
    journal,
)
from spades_server.store import stream_kinds as streams

__all__ = [
    "Finding",
    "backup",
    "check_database",
    "check_tables",
    "decode_everything",
    "explain",
    "main",
    "open_checked",
]

#: How many findings a refusal names (``check`` lists them all).
_NAMED_AT_START = 5


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

    @classmethod
    def of_storage(cls, finding: StorageFinding) -> Finding:
        """What the log's storage found, as a finding (a stream's version is its sequence)."""
        return cls(finding.problem, finding.stream_id, finding.version)


@dataclass
class Report:
    """What a check found, and how much it looked at."""

    findings: list[Finding]
    tables: int = 0
    events: int = 0
    replayed: int = 0
    seconds: float = 0.0


#: How deep a check goes. ``scan``: the file as a whole (SQLite's quick_check, the events
#: table, the marker, versions without a gap), what a start always runs unless the file is
#: unchanged since a clean close. ``quick``: that, plus every table's last event decoded and the
#: tables not finished replayed (``check --quick``: what a start checks, found without the
#: server's lobby). ``full``: SQLite's integrity_check, and every table decoded and replayed.
Depth = Literal["scan", "quick", "full"]


def check_database(path: str | os.PathLike[str], depth: Depth = "full") -> Report:
    """Check the SQLite log at ``path`` to ``depth`` (see :func:`check_log`)."""
    return check_log(inspection_from_url(log_url(path, None)), depth)


def check_log(inspection: LogInspection, depth: Depth = "full") -> Report:
    """Check a log's storage to ``depth``, then decode and replay its tables as ``depth`` says.

    Reads only (a server may be running on the log). Runs on the calling thread: it is
    blocking work, so the server calls it in a worker thread. Closes ``inspection``.
    """
    started = time.perf_counter()
    report = Report([])
    try:
        with inspection:
            _check_inspection(inspection, depth, report)
    except LogDamaged as error:  # the storage cannot be read on: each problem a finding
        report.findings.extend(Finding(problem) for problem in error.problems)
    report.seconds = time.perf_counter() - started
    return report


def check_tables(path: str | os.PathLike[str], table_ids: Sequence[str]) -> Report:
    """Decode and replay the given tables of the SQLite log at ``path``."""
    return check_log_tables(inspection_from_url(log_url(path, None)), table_ids)


def check_log_tables(inspection: LogInspection, table_ids: Sequence[str]) -> Report:
    """Decode and replay the given tables of a log (closes ``inspection``)."""
    started = time.perf_counter()
    report = Report([])
    with inspection:
        _replay_streams(inspection, table_ids, report)
    report.seconds = time.perf_counter() - started
    return report


def decode_everything(path: str | os.PathLike[str]) -> Report:
    """Decode every event of the log at ``path`` (no replay): the first bad one of each table."""
    return decode_log(inspection_from_url(log_url(path, None)))


def decode_log(inspection: LogInspection) -> Report:
    """Decode every event of a log (no replay): the first bad one of each table."""
    report = Report([])
    bad: set[str] = set()
    with inspection:
        for stream_id, version, data in inspection.all_events():
            report.events += 1
            if stream_id in bad:
                continue
            finding = _decode(stream_id, version, data)[1]
            if finding is not None:
                bad.add(stream_id)
                report.findings.append(finding)
    return report


def _check_inspection(inspection: LogInspection, depth: Depth, report: Report) -> None:
    scan = inspection.scan(depth)
    report.events = scan.events
    report.findings.extend(Finding.of_storage(finding) for finding in scan.findings)
    if not scan.readable or depth == "scan":
        return
    findings = report.findings
    gapped: list[str] = []
    to_replay: list[str] = []
    for stream in inspection.streams():
        stream_id = stream.stream_id
        if not streams.is_table_stream(stream_id):
            if not stream.gap_free:
                gapped.append(stream_id)
            continue  # an account's or a pool's stream: no match to replay
        report.tables += 1
        if not stream.gap_free:
            gapped.append(stream_id)
            continue
        event, finding = _decode(stream_id, stream.head, stream.last)
        if finding is not None:
            findings.append(finding)
        elif depth == "full" or not isinstance(event, replays.FINISHED):
            to_replay.append(stream_id)
    findings.extend(Finding.of_storage(inspection.first_gap(stream_id)) for stream_id in gapped)
    _replay_streams(inspection, to_replay, report)


def _replay_streams(inspection: LogInspection, stream_ids: Sequence[str], report: Report) -> None:
    for stream_id in stream_ids:
        finding = _replay_stream(inspection, stream_id)
        report.replayed += 1
        if finding is not None:
            report.findings.append(finding)


def _decode(stream_id: str, version: int, data: bytes) -> tuple[ev.Event | None, Finding | None]:
    """The engine event a row holds, read by the journal (the one reader of rows); an account's
    row is read by its own journal, and holds no engine event."""
    codec = codecs.codec_of(stream_id)
    if codec is not codecs.TABLE:
        try:
            codec.decode(StoredEvent(stream_id, version, 0, 0.0, data))
        except (DecodeError, ValueError) as error:
            return None, Finding(f"the event does not decode ({error})", stream_id, version)
        return None, None
    try:
        return journal.decode(StoredEvent(stream_id, version, 0, 0.0, data)).event, None
    except DecodeError as error:
        return None, Finding(f"the event does not decode ({error})", stream_id, version)
    except ValueError as error:
        return None, Finding(f"the event is not one the engine knows ({error})", stream_id, version)


def _replay_stream(inspection: LogInspection, stream_id: str) -> Finding | None:
    """Decode a stream's events and replay them through the engine; the first bad one."""
    engine_events: list[ev.Event] = []
    for version, data in inspection.stream_events(stream_id):
        event, finding = _decode(stream_id, version, data)
        if event is None:
            return finding
        engine_events.append(event)
    if not isinstance(engine_events[0], ev.TableCreated):
        return None  # not a table's stream: nothing the engine can replay
    bad = replays.first_unreplayed(stream_id, engine_events)
    return None if bad is None else Finding(bad.reason, stream_id, bad.sequence)


def _refusal(where: str, findings: Sequence[Finding]) -> LogDamaged:
    named = [str(finding) for finding in findings[:_NAMED_AT_START]]
    if len(findings) > _NAMED_AT_START:
        named.append(
            f"and {len(findings) - _NAMED_AT_START} more (spades-server check {where} lists all)"
        )
    return LogDamaged(where, named)


class Projection(Protocol):
    """What the start-up needs of the lobby projection (``lobby.LobbyProjection``)."""

    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    def active_table_ids(self) -> list[str]: ...


async def open_checked(log: EventLog, projection: Projection) -> None:
    """Open the log and start the projection on it, refusing a log that is not whole.

    The scan runs before the lobby is rebuilt, the replay of the tables in play after (the
    lobby knows which they are); both are skipped for a file unchanged since this server's
    clean close. On a finding the projection and the log are closed again and LogDamaged is
    raised. Only the SQLite file is checked: PostgreSQL guards its own storage, and a replica
    starting must not hold up the others with a scan of the shared log.
    """
    await log.open()
    try:
        inspection = None if log.unchanged_since_clean_close else log.inspection()
        if inspection is not None:
            await _refuse_findings(log, asyncio.to_thread(check_log, inspection, "scan"))
        try:
            await projection.start()
        except Exception as error:
            raise await explain(log, error) from error
        replay = None if log.unchanged_since_clean_close else log.inspection()
        if replay is not None:
            checking = asyncio.to_thread(check_log_tables, replay, projection.active_table_ids())
            await _refuse_findings(log, checking)
        log.verified = True  # whole: a backend that can may remember it at its clean close
    except LogDamaged:
        await projection.stop()
        await log.close()
        raise


async def _refuse_findings(log: EventLog, checking: Awaitable[Report]) -> None:
    report = await checking
    if report.findings:
        raise _refusal(log.where, report.findings)


async def explain(log: EventLog, error: Exception) -> LogDamaged:
    """Why the server could not start on ``log`` (the lobby could not be rebuilt from it):
    the tables at fault, found by decoding every event, or the error itself."""
    where = log.where
    inspection = log.inspection()
    if inspection is not None:
        report = await asyncio.to_thread(check_log, inspection, "quick")
        decoding = log.inspection()
        if not report.findings and decoding is not None:
            report = await asyncio.to_thread(decode_log, decoding)
        if report.findings:
            return _refusal(where, report.findings)
    cause = f"{type(error).__name__}: {error}"
    return LogDamaged(where, [f"the lobby cannot be rebuilt from it ({cause})"])


# -- backup ---------------------------------------------------------------------------------


def backup(source: str | os.PathLike[str], destination: str | os.PathLike[str]) -> int:
    """Copy the SQLite log at ``source`` to the new file ``destination`` (the backend's online
    backup: a consistent copy even while a server writes the source); returns the events
    copied."""
    return backup_from_url(log_url(source, None), log_url(destination, None))


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
        return _report(arguments.destination, check_database(arguments.destination, "full"))
    depth: Depth = "quick" if arguments.quick else "full"
    return _report(arguments.database, check_database(arguments.database, depth))


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
