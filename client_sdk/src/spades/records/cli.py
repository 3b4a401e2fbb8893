"""Score, verify or show a game record file from the command line (the files only; the
installed ``spades record`` and ``spades-record`` add records fetched from a server by table or
tournament id, :mod:`spades.commands.record`). ``python -m spades.records.cli`` runs it.

    spades-record score match.json [--json]   replay the match, then print its score table
    spades-record verify match.pb             check the seed, its commitment and every deal
    spades-record show match.json             print the match hand by hand (and its sealed notes)
    spades-record tournament cup.json         verify a tournament record (docs/tournaments.md)
    spades-record analyse match.json [--json] judge every card double dummy and by what its
                                              seat could see (docs/analysis.md)
    spades-record analyse --tournament cup.json [--json]
                                              every table of a tournament record judged, summed
                                              up per entrant

Errors (an unreadable file, an illegal action in the record, a bad commitment) print one line
on stderr and exit with status 1.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable, Iterator, Sequence

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from spades.analysis import DEFAULT_WORLDS, Analysis, analyse, analysis_json, default_jobs
from spades.analysis.render import print_analysis, print_tournament_analysis
from spades.analysis.tournament import (
    TournamentAnalysis,
    analyse_tournament,
    tournament_analysis_json,
)
from spades.records.files import Format, load_record
from spades.records.record import events_of, notes_of
from spades.records.render import render_match, render_score_table, score_table, score_table_json
from spades.records.replay import replay
from spades.records.tournament import (
    load_tournament_record,
    render_standings,
    verify_tournament,
)
from spades.records.verify import verify
from spades.v1 import record_pb2, tournament_pb2

#: Reads a game record named on the command line (a file, or a table id: ``spades record``).
RecordSource = Callable[[str, Format | None], record_pb2.GameRecord]
#: Reads a tournament record named on the command line.
TournamentSource = Callable[[str], tournament_pb2.TournamentRecord]

DESCRIPTION = "Score, verify, show or analyse a Spades game record."


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="spades-record", description=DESCRIPTION)
    configure(parser)
    return parser


def configure(
    parser: argparse.ArgumentParser,
    *,
    source_help: str = "",
    tournament_help: str = "",
    common: argparse.ArgumentParser | None = None,
) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    """The subcommands score, verify, show, analyse and tournament; ``source_help`` says what
    the record argument may name (a file by default); ``common``: a parent parser whose flags
    every subcommand takes too. Returns the subparsers, for more subcommands."""
    shared = [] if common is None else [common]
    common = argparse.ArgumentParser(add_help=False, parents=shared)
    common.add_argument(
        "file",
        metavar="RECORD",
        help=source_help or "the record: .json (protobuf JSON) or .pb/.bin (binary)",
    )
    common.add_argument(
        "--format",
        choices=("json", "binary"),
        help="the file's format, when its name does not say",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    score = commands.add_parser(
        "score", parents=[common], help="replay the match and print its score table"
    )
    score.add_argument("--json", action="store_true", help="print the table as JSON")
    commands.add_parser(
        "verify", parents=[common], help="check the seed commitment, first dealer and deals"
    )
    commands.add_parser("show", parents=[common], help="print the match hand by hand")
    analyse = commands.add_parser(
        "analyse",
        parents=[common],
        help="judge every card of a finished match: its double-dummy loss and the loss its "
        "seat could expect from what it saw (docs/analysis.md)",
        description="Judge every card of a finished match: each legal card's double-dummy "
        "value, the points and tricks the card played lost, and the points the seat could "
        "expect to lose from what it saw (over sampled worlds); the bids beside the par; each "
        "seat's accuracy. A whole match takes minutes: see docs/analysis.md.",
    )
    analyse.add_argument("--json", action="store_true", help="print one JSON object")
    analyse.add_argument(
        "--tournament",
        action="store_true",
        help="RECORD is a finished tournament's record: analyse every table, sum it up per entrant",
    )
    analyse.add_argument(
        "--worlds",
        type=_count,
        default=None,
        metavar="N",
        help=f"worlds sampled per card for the expected loss (default {DEFAULT_WORLDS}; 0: "
        "double dummy only)",
    )
    analyse.add_argument(
        "--seed",
        default="",
        metavar="TEXT",
        help="what the worlds are drawn from (the same seed gives the same analysis)",
    )
    analyse.add_argument(
        "--jobs",
        type=_positive,
        default=default_jobs(),
        metavar="N",
        help=f"worker processes (default {default_jobs()}: the cores, at most 4)",
    )
    commands.add_parser(
        "tournament",
        parents=shared,
        help="verify a tournament record: every table (replayed), the deals against the revealed "
        "seed, the standings recomputed",
    ).add_argument(
        "file",
        metavar="RECORD",
        help=tournament_help or "the tournament record: .json (protobuf JSON) or binary",
    )
    return commands


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    return run(_parser().parse_args(argv))


def run(
    arguments: argparse.Namespace,
    source: RecordSource = load_record,
    tournament_source: TournamentSource = load_tournament_record,
    *,
    program: str = "spades-record",
) -> int:
    """Run score, verify, show, analyse or tournament on the record ``source`` (or
    ``tournament_source``) reads; returns the exit status."""
    try:
        if arguments.command == "tournament":
            return _tournament(tournament_source(arguments.file))
        if arguments.command == "analyse" and arguments.tournament:
            return _analyse_tournament(tournament_source(arguments.file), arguments)
        record = source(arguments.file, arguments.format)
        if arguments.command == "score":
            return _score(record, as_json=arguments.json)
        if arguments.command == "analyse":
            return _analyse(record, arguments)
        if arguments.command == "verify":
            for line in verify(record).lines():
                print(line)
            print("verified")
            return 0
        print(render_match(events_of(record), record.table_id, notes=notes_of(record)), end="")
        return 0
    except ValueError as error:  # RecordError, ProtocolError, InvalidRules: all say why
        reason = " ".join(str(error).splitlines())
        print(f"{program}: {reason}", file=sys.stderr)
        return 1


def _tournament(record: tournament_pb2.TournamentRecord) -> int:
    checked = verify_tournament(record)
    print(f"seed commitment {checked.seed_commitment.hex()}: the revealed seed matches")
    print(f"{checked.tables} tables verified, {checked.boards} boards scored again")
    print(render_standings(checked.standings), end="")
    print("verified")
    return 0


def _at_least(least: int, text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        number = least - 1
    if number < least:
        raise argparse.ArgumentTypeError(
            f"must be a whole number of at least {least}, not {text!r}"
        )
    return number


def _positive(text: str) -> int:
    return _at_least(1, text)


def _count(text: str) -> int:
    return _at_least(0, text)


@contextlib.contextmanager
def analysis_progress() -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr (on a terminal) while an analysis works; yields what to tell
    it: (done, total)."""
    errors = Console(stderr=True)
    with Progress(
        TextColumn("analysing"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=errors,
        transient=True,
        disable=not errors.is_terminal,
    ) as progress:
        task = progress.add_task("analyse", total=None)
        yield lambda done, total: progress.update(task, completed=done, total=total)


def show_analysis(analysis: Analysis, *, as_json: bool) -> int:
    """Print ``analysis``: one JSON object, or the tables; returns the exit status."""
    if as_json:
        print(json.dumps(analysis_json(analysis), indent=2, ensure_ascii=False))
    else:
        print_analysis(analysis)
    return 0


def show_tournament_analysis(analysis: TournamentAnalysis, *, as_json: bool) -> int:
    """Print a tournament's analysis: one JSON object, or the per-entrant tables."""
    if as_json:
        print(json.dumps(tournament_analysis_json(analysis), indent=2, ensure_ascii=False))
    else:
        print_tournament_analysis(analysis)
    return 0


def _analyse_tournament(
    record: tournament_pb2.TournamentRecord, arguments: argparse.Namespace
) -> int:
    with analysis_progress() as progress:
        analysis = analyse_tournament(
            record,
            worlds=DEFAULT_WORLDS if arguments.worlds is None else arguments.worlds,
            seed=arguments.seed.encode(),
            jobs=arguments.jobs,
            progress=lambda table, tables, done, total: progress(table + (done == total), tables),
        )
    return show_tournament_analysis(analysis, as_json=arguments.json)


def _analyse(record: record_pb2.GameRecord, arguments: argparse.Namespace) -> int:
    with analysis_progress() as progress:
        analysis = analyse(
            record,
            worlds=DEFAULT_WORLDS if arguments.worlds is None else arguments.worlds,
            seed=arguments.seed.encode(),
            jobs=arguments.jobs,
            progress=progress,
        )
    return show_analysis(analysis, as_json=arguments.json)


def _score(record: record_pb2.GameRecord, *, as_json: bool) -> int:
    replay(record)
    table = score_table(events_of(record))
    if as_json:
        print(json.dumps(score_table_json(table), indent=2))
    else:
        print(render_score_table(table), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
