"""``spades record`` (and its alias ``spades-record``): a match's record fetched from the server
by table id, a tournament's by tournament id, and any record scored, verified or shown, from a
file or straight from the server.

    spades record fetch TABLE_ID [--output FILE]        the record: protobuf JSON on stdout, or
                                                        a .json/.pb/.bin file
    spades record fetch --tournament ID [--output FILE] a tournament's record
    spades record show TABLE_ID | FILE                  the match hand by hand
    spades record verify TABLE_ID | FILE                the seed, its commitment, every deal
    spades record score TABLE_ID | FILE [--json]        the score table
    spades record tournament TOURNAMENT_ID | FILE       verify a tournament record
    spades record analyse TABLE_ID | FILE [--json]      every card judged (docs/analysis.md)
    spades record analyse --tournament ID | FILE        every table of a finished tournament,
                                                        summed up per entrant

A RECORD that names an existing file, or looks like a path (a folder in it, or a ``.json``,
``.pb`` or ``.bin`` suffix), is read from the file; anything else is an id, fetched from
``--server``. Until a match ends the server gives its public part (no hands, no seed).

``analyse TABLE_ID`` asks the server's AnalysisService: its worker pool analyses the finished
table (or returns the analysis it kept), with ``--worlds`` or the server's default; with
``--local`` the record is fetched and analysed here instead (``--jobs``, ``--seed``). With
``--tournament`` the same holds for a tournament: the server's AnalyseTournament, or its record
fetched (or read from a file), verified and every table analysed here.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path

from google.protobuf import json_format

from spades.analysis.wire import analysis_from_proto, tournament_analysis_from_proto
from spades.client import SpadesClient, SpadesError
from spades.commands.common import (
    add_server_flag,
    channel_credentials,
    fail,
    parse_command_line,
    program_of,
)
from spades.records import cli as files_cli
from spades.records.files import Format, load_record, record_to_json, save_record
from spades.records.record import RecordError
from spades.records.tournament import load_tournament_record, save_tournament_record
from spades.v1 import analysis_pb2, record_pb2, tournament_pb2

PROGRAM = "spades-record"
DESCRIPTION = (
    "Fetch a record from the server (by table or tournament id); score, verify, show or "
    "analyse one."
)
_FILE_SUFFIXES = (".json", ".pb", ".bin")


def names_a_file(argument: str) -> bool:
    """True when RECORD is a file rather than an id (see the module's docstring)."""
    path = Path(argument)
    return path.exists() or "/" in argument or path.suffix.lower() in _FILE_SUFFIXES


class Fetched(Exception):
    """A refused fetch, carried out of the record reader to be printed with its reason."""

    def __init__(self, error: SpadesError) -> None:
        super().__init__(str(error))
        self.error = error


def fetch_record(arguments: argparse.Namespace, table_id: str) -> record_pb2.GameRecord:
    async def fetch() -> record_pb2.GameRecord:
        async with SpadesClient(
            arguments.server, credentials=channel_credentials(arguments)
        ) as client:
            return await client.get_record(table_id)

    try:
        return asyncio.run(fetch())
    except SpadesError as error:
        raise Fetched(error) from error


def fetch_tournament_record(
    arguments: argparse.Namespace, tournament_id: str
) -> tournament_pb2.TournamentRecord:
    async def fetch() -> tournament_pb2.TournamentRecord:
        async with SpadesClient(
            arguments.server, credentials=channel_credentials(arguments)
        ) as client:
            return await client.tournament_record(tournament_id)

    try:
        return asyncio.run(fetch())
    except SpadesError as error:
        raise Fetched(error) from error


def configure(parser: argparse.ArgumentParser) -> None:
    add_server_flag(parser)
    again = argparse.ArgumentParser(add_help=False)
    add_server_flag(again, again=True)
    commands = files_cli.configure(
        parser,
        common=again,
        source_help="a table id (fetched from --server) or a record file: .json (protobuf "
        "JSON) or .pb/.bin (binary)",
        tournament_help="a tournament id (fetched from --server) or a tournament record file",
    )
    fetch = commands.add_parser(
        "fetch",
        parents=[again],
        help="a table's (or with --tournament, a tournament's) record from the server",
        description="Fetch a record from the server: protobuf JSON on stdout (a program reads "
        "it as it is), or written to --output (.json, or .pb/.bin for binary).",
    )
    fetch.add_argument("id", metavar="ID", help="the table id (or tournament id)")
    fetch.add_argument(
        "--tournament", action="store_true", help="ID is a tournament's: fetch its record"
    )
    fetch.add_argument("--output", "-o", metavar="FILE", help="write the record into FILE")
    commands.choices["analyse"].add_argument(
        "--local",
        action="store_true",
        help="for an id: fetch the record and analyse it here, not on the server",
    )


def run(arguments: argparse.Namespace) -> int:
    def record_source(argument: str, format: Format | None) -> record_pb2.GameRecord:
        if names_a_file(argument):
            return load_record(argument, format)
        return fetch_record(arguments, argument)

    def tournament_source(argument: str) -> tournament_pb2.TournamentRecord:
        if names_a_file(argument):
            return load_tournament_record(argument)
        return fetch_tournament_record(arguments, argument)

    try:
        if arguments.command == "fetch":
            return _fetch(arguments)
        if (
            arguments.command == "analyse"
            and not arguments.local
            and not names_a_file(arguments.file)
        ):
            return _analyse_on_server(arguments)
        return files_cli.run(
            arguments, record_source, tournament_source, program=program_of(arguments, PROGRAM)
        )
    except Fetched as refused:
        return fail(program_of(arguments, PROGRAM), refused.error)


def _analyse_on_server(arguments: argparse.Namespace) -> int:
    """The table's (with ``--tournament``, the tournament's) analysis from the server's
    AnalysisService, shown as a local one is."""
    with files_cli.analysis_progress() as progress:

        async def ask() -> analysis_pb2.Analysis | analysis_pb2.TournamentAnalysis:
            async with SpadesClient(
                arguments.server, credentials=channel_credentials(arguments)
            ) as client:
                if arguments.tournament:
                    return await client.analyse_tournament(
                        arguments.file,
                        worlds=arguments.worlds,
                        progress=lambda step: progress(step.tables_done, step.tables_total),
                    )
                return await client.analyse_table(
                    arguments.file,
                    worlds=arguments.worlds,
                    progress=lambda step: progress(step.done, step.total),
                )

        try:
            message = asyncio.run(ask())
        except SpadesError as error:
            raise Fetched(error) from error
    if isinstance(message, analysis_pb2.TournamentAnalysis):
        return files_cli.show_tournament_analysis(
            tournament_analysis_from_proto(message), as_json=arguments.json
        )
    return files_cli.show_analysis(analysis_from_proto(message), as_json=arguments.json)


def _fetch(arguments: argparse.Namespace) -> int:
    record: record_pb2.GameRecord | tournament_pb2.TournamentRecord
    if arguments.tournament:
        record = fetch_tournament_record(arguments, arguments.id)
    else:
        record = fetch_record(arguments, arguments.id)
    if arguments.output is None:
        if isinstance(record, record_pb2.GameRecord):
            print(record_to_json(record), end="")
        else:
            print(json_format.MessageToJson(record, indent=2))
        return 0
    try:
        if isinstance(record, record_pb2.GameRecord):
            save_record(record, arguments.output)
        else:
            save_tournament_record(record, arguments.output)
    except (OSError, RecordError) as error:
        return fail(
            program_of(arguments, PROGRAM),
            f"{arguments.output}: {getattr(error, 'strerror', None) or error}",
        )
    print(f"Saved the record of {arguments.id} to {arguments.output}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROGRAM, description=DESCRIPTION)
    configure(parser)
    return run(parse_command_line(parser, argv))


if __name__ == "__main__":
    sys.exit(main())
