"""``spades-arena``: many duplicate matches between two bot teams, and how each team did.

spades-arena --team-a heuristic --team-b random --matches 200
spades-arena --team-a mymodule:MyBot --team-b heuristic --matches 50 --records arena-records/
spades-arena --server 127.0.0.1:50051 --matches 20        # needs SPADES_OPERATOR_TOKEN
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from spades.client import SpadesError
from spades.engine import Rules
from spades_bots.arena.duplicate import MatchResult, team_label
from spades_bots.arena.runner import ArenaConfig, ArenaReport, run_arena
from spades_bots.arena.stats import TeamStats


def parser() -> argparse.ArgumentParser:
    parse = argparse.ArgumentParser(
        prog="spades-arena",
        description="Play duplicate matches between two bot teams and compare them: each deal "
        "set is played twice, with the partnerships swapped, so luck cancels.",
    )
    team_help = "random, heuristic, or package.module:Class (default: %(default)s)"
    parse.add_argument("--team-a", default="heuristic", help=team_help)
    parse.add_argument("--team-b", default="random", help=team_help)
    parse.add_argument(
        "--matches",
        type=int,
        default=100,
        help="matches to play, an even number: half as many deal sets (default: %(default)s)",
    )
    parse.add_argument(
        "--seed", help="any text; the same seed plays the same deals (default: a fresh one)"
    )
    parse.add_argument("--target", type=int, default=500, help="target score (default: 500)")
    parse.add_argument(
        "--max-hands",
        type=int,
        default=25,
        help="end a match after this many hands, the higher score winning; 0: no limit "
        "(default: %(default)s)",
    )
    parse.add_argument("--records", type=Path, help="write every match's record to this folder")
    parse.add_argument(
        "--server", help="play on this server (host:port) instead of in this process"
    )
    parse.add_argument(
        "--operator-token",
        default=os.environ.get("SPADES_OPERATOR_TOKEN", ""),
        help="with --server: the operator token, for tables with given deals "
        "[env SPADES_OPERATOR_TOKEN]",
    )
    parse.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="matches at once: worker processes in this process's mode, tables on a server "
        "(default: %(default)s)",
    )
    return parse


def config_from(args: argparse.Namespace, parse: argparse.ArgumentParser) -> ArenaConfig:
    if args.matches < 2 or args.matches % 2:
        parse.error("--matches must be an even number, at least 2 (each deal set plays twice)")
    if args.max_hands < 0 or args.jobs < 1:
        parse.error("--max-hands must not be negative and --jobs must be at least 1")
    if args.server and not args.operator_token:
        parse.error(
            "duplicate play on a server needs tables with given deals, an operator call: pass "
            "--operator-token or set SPADES_OPERATOR_TOKEN (or leave out --server to play in "
            "this process)"
        )
    seed_text = args.seed if args.seed is not None else secrets.token_hex(8)
    return ArenaConfig(
        team_a=args.team_a,
        team_b=args.team_b,
        pairs=args.matches // 2,
        seed=seed_text.encode(),
        rules=Rules(target_score=args.target, max_hands=args.max_hands or None),
        records=args.records,
        server=args.server,
        operator_token=args.operator_token,
        jobs=args.jobs,
    )


def percent(value: float) -> str:
    return f"{100 * value:.1f}%"


def results_table(report: ArenaReport) -> Table:
    config = report.config
    table = Table(
        title=f"{config.matches} duplicate matches ({config.pairs} deal sets)",
        caption="Made: contracts made; Nil: attempts (success rate)",
    )
    for header in (
        "Team",
        "Bot",
        "Won",
        "Win % (95% CI)",
        "Pts/hand",
        "Made",
        "Nil (made)",
        "Bags/hand",
    ):
        table.add_column(header, justify="left" if header in ("Team", "Bot") else "right")
    for letter, stats in (("A", report.team_a), ("B", report.team_b)):
        low, high = stats.win_interval
        table.add_row(
            letter,
            team_label(stats.name),
            f"{stats.wins}/{stats.matches}",
            f"{percent(stats.win_rate)} ({percent(low)}-{percent(high)})",
            f"{stats.points_per_hand:+.1f}",
            percent(stats.contracts_made_rate),
            f"{stats.nil_attempts} ({percent(stats.nil_success_rate)})",
            f"{stats.bags_per_hand:.2f}",
        )
    return table


def summary_lines(report: ArenaReport) -> list[str]:
    """The report's plain-text conclusions (also what the tests read)."""
    a: TeamStats = report.team_a
    low, high = a.win_interval
    pairs = report.pair_outcomes()
    hands = sum(len(result.hands) for result in report.results)
    lines = [
        f"Team A ({team_label(a.name)}) won {a.wins} of {a.matches} matches: "
        f"{percent(a.win_rate)}, 95% interval {percent(low)} to {percent(high)}",
        f"Deal sets: A won both {pairs['A won both']}, split {pairs['split']}, "
        f"B won both {pairs['B won both']}; {hands} hands played",
    ]
    if report.config.records is not None:
        lines.append(f"Records: {len(report.results)} written to {report.config.records}")
    return lines


def where_played(config: ArenaConfig) -> str:
    """Where the matches run, as the header says it: "on the server ...", "in 4 processes"."""
    at_once = "one at a time" if config.jobs == 1 else f"{config.jobs} at a time"
    if config.server:
        return f"on the server {config.server}, {at_once}"
    if config.jobs == 1:
        return "in this process"
    return f"in {config.jobs} worker processes"


def main(argv: Sequence[str] | None = None) -> int:
    parse = parser()
    args = parse.parse_args(argv)
    if os.getcwd() not in sys.path:  # find an author's module in the current folder
        sys.path.insert(0, os.getcwd())
    config = config_from(args, parse)
    console = Console()
    if not console.is_terminal:  # a log or a pipe: room for the whole table
        console = Console(width=120)
    console.print(
        f"spades-arena: {team_label(config.team_a)} (A) vs {team_label(config.team_b)} (B), "
        f"{config.matches} matches {where_played(config)}, seed {config.seed.decode()!r}"
    )
    progress = Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=not console.is_terminal,
    )
    wins = {"A": 0, "B": 0}
    with progress:
        task = progress.add_task("A 0 - 0 B", total=config.matches)

        def advance(result: MatchResult) -> None:
            if result.winner is not None:
                wins[result.winner] += 1
            progress.update(task, advance=1, description=f"A {wins['A']} - {wins['B']} B")

        try:
            report = run_arena(config, advance)
        except SpadesError as error:
            console.print(f"spades-arena: {error.code.name}: {error.reason}")
            return 1
        except ValueError as error:  # a bot that cannot be loaded
            console.print(f"spades-arena: {error}")
            return 2
    console.print(results_table(report))
    for line in summary_lines(report):
        console.print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
