"""``spades-record``: score, verify or show a game record file from the command line.

    spades-record score match.json [--json]   replay the match, then print its score table
    spades-record verify match.pb             check the seed, its commitment and every deal
    spades-record show match.json             print the match hand by hand
    spades-record tournament cup.json         verify a tournament record (docs/tournaments.md)

Errors (an unreadable file, an illegal action in the record, a bad commitment) print one line
on stderr and exit with status 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from spades.records.files import load_record
from spades.records.record import events_of
from spades.records.render import render_match, render_score_table, score_table, score_table_json
from spades.records.replay import replay
from spades.records.tournament import (
    load_tournament_record,
    render_standings,
    verify_tournament,
)
from spades.records.verify import verify
from spades.v1 import record_pb2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="spades-record", description="Score, verify or show a Spades game record."
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("file", help="the record: .json (protobuf JSON) or .pb/.bin (binary)")
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
    commands.add_parser(
        "tournament",
        help="verify a tournament record: every table, the deals against the revealed seed, "
        "the standings recomputed",
    ).add_argument("file", help="the tournament record: .json (protobuf JSON) or binary")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    arguments = _parser().parse_args(argv)
    try:
        if arguments.command == "tournament":
            return _tournament(arguments.file)
        record = load_record(arguments.file, arguments.format)
        if arguments.command == "score":
            return _score(record, as_json=arguments.json)
        if arguments.command == "verify":
            for line in verify(record).lines():
                print(line)
            print("verified")
            return 0
        print(render_match(events_of(record), record.table_id), end="")
        return 0
    except ValueError as error:  # RecordError, ProtocolError, InvalidRules: all say why
        reason = " ".join(str(error).splitlines())
        print(f"spades-record: {reason}", file=sys.stderr)
        return 1


def _tournament(path: str) -> int:
    checked = verify_tournament(load_tournament_record(path))
    print(f"seed commitment {checked.seed_commitment.hex()}: the revealed seed matches")
    print(f"{checked.tables} tables verified, {checked.boards} boards scored again")
    print(render_standings(checked.standings), end="")
    print("verified")
    return 0


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
