"""A finished tournament's analysis: each entrant's play summed up over every table it played,
from the analyses of those tables (:func:`spades.analysis.analyse`, or the ones a server keeps).

At each table of a pairing an entrant holds one side (the home entrant North-South at the first
table, East-West at the second: docs/tournaments.md), so its totals are that side's plays at
every table: accuracy, points lost per hand, and its costliest mistakes, each named with its
table. Nothing is judged here: it only reads the tournament's events (its pairings and final
standings) and the tables' analyses.

    >>> summed = tournament_analysis("cup", [], {}, worlds=0)
    >>> (summed.tournament_id, summed.tables, summed.entrants)
    ('cup', (), ())
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from math import sqrt
from typing import Any

from spades.analysis import analyse
from spades.analysis.judge import DEFAULT_WORLDS, PlayJudgement
from spades.analysis.report import COSTLIEST, Analysis, Summary, side_letters, summary_json
from spades.records.tournament import (
    AWAY_SEATS,
    HOME_SEATS,
    standings,
    verify_tournament,
)
from spades.v1 import tournament_pb2

#: Called as the work goes: (tables done, tables in all, the table's tasks done, its tasks).
TournamentProgress = Callable[[int, int, int, int], None]


@dataclass(frozen=True, slots=True)
class TournamentTable:
    """One table a pairing played: where it sits in the tournament, and who held each side."""

    table_id: str
    round: int
    #: The pairing's index in its round (from 0) and the table's among the pairing's two.
    pairing: int
    leg: int
    home_account_id: str
    away_account_id: str

    def seats_of(self, account_id: str) -> tuple[int, ...]:
        """The seats ``account_id`` held at this table (none when it did not play here)."""
        if account_id == self.home_account_id:
            return HOME_SEATS[self.leg]
        if account_id == self.away_account_id:
            return AWAY_SEATS[self.leg]
        return ()


def tournament_tables(events: Iterable[tournament_pb2.TournamentEvent]) -> list[TournamentTable]:
    """Every table the tournament's events pair, in the order of the rounds and pairings
    (a bye has none)."""
    found = []
    for event in events:
        if event.WhichOneof("kind") != "round_paired":
            continue
        paired = event.round_paired
        for pairing in paired.pairings:
            if not pairing.away_account_id:
                continue
            for leg, table_id in enumerate(pairing.table_ids):
                found.append(
                    TournamentTable(
                        table_id,
                        paired.round,
                        pairing.index,
                        leg,
                        pairing.home_account_id,
                        pairing.away_account_id,
                    )
                )
    return found


@dataclass(frozen=True, slots=True)
class EntrantSide:
    """An entrant's side at one table, and its totals there."""

    table_id: str
    seats: tuple[int, ...]
    summary: Summary


@dataclass(frozen=True, slots=True)
class Mistake:
    """One costly play, with the table it was played at."""

    table_id: str
    play: PlayJudgement


@dataclass(frozen=True, slots=True)
class EntrantAnalysis:
    """One entrant's play over every table it played."""

    account_id: str
    name: str
    rank: int
    sides: tuple[EntrantSide, ...]
    #: Every play of its sides (``total.costliest`` as ``costliest``, without the tables).
    total: Summary
    #: Its costliest plays over every table (at most three, greatest loss first).
    costliest: tuple[Mistake, ...]


@dataclass(frozen=True, slots=True)
class TournamentAnalysis:
    """Every entrant's totals, in the order of the standings, and the tables they come from."""

    tournament_id: str
    worlds: int
    tables: tuple[TournamentTable, ...]
    #: The worlds each table's analysis sampled (a kept one may have more than asked).
    table_worlds: Mapping[str, int]
    entrants: tuple[EntrantAnalysis, ...]


def combined(parts: Sequence[Summary], mistakes: Sequence[Mistake]) -> Summary:
    """The totals of several tables' summaries: counts added, errors in squares (each
    decision's worlds are drawn independently), the costliest of ``mistakes`` (in order)."""
    expected = [part.expected_loss_points for part in parts]
    errors = [part.expected_loss_se for part in parts]
    return Summary(
        plays=sum(part.plays for part in parts),
        perfect=sum(part.perfect for part in parts),
        hands=sum(part.hands for part in parts),
        loss_points=sum(part.loss_points for part in parts),
        loss_tricks=sum(part.loss_tricks for part in parts),
        expected_loss_points=None if None in expected else sum(e or 0.0 for e in expected),
        expected_loss_se=None if None in errors else sqrt(sum((e or 0.0) ** 2 for e in errors)),
        costliest=tuple(mistake.play for mistake in mistakes),
    )


def tournament_analysis(
    tournament_id: str,
    events: Sequence[tournament_pb2.TournamentEvent],
    analyses: Mapping[str, Analysis],
    *,
    worlds: int,
) -> TournamentAnalysis:
    """Each entrant's totals from the analyses of the tables of ``events`` (a table missing
    from ``analyses`` counts for no one). ``worlds``: what was asked for."""
    tables = tournament_tables(events)
    entrants = []
    for line in standings(events).lines:
        sides: list[EntrantSide] = []
        mistakes: list[Mistake] = []
        for table in tables:
            seats = table.seats_of(line.account_id)
            analysis = analyses.get(table.table_id)
            if not seats or analysis is None:
                continue
            plays = [play for play in analysis.plays if play.seat in seats]
            sides.append(EntrantSide(table.table_id, seats, Summary.of(plays)))
            mistakes.extend(Mistake(table.table_id, play) for play in plays if play.loss_points)
        order = {table.table_id: index for index, table in enumerate(tables)}
        mistakes.sort(
            key=lambda m: (-m.play.loss_points, order[m.table_id], m.play.hand, m.play.trick)
        )
        costliest = tuple(mistakes[:COSTLIEST])
        entrants.append(
            EntrantAnalysis(
                account_id=line.account_id,
                name=line.name,
                rank=line.rank,
                sides=tuple(sides),
                total=combined([side.summary for side in sides], costliest),
                costliest=costliest,
            )
        )
    return TournamentAnalysis(
        tournament_id=tournament_id,
        worlds=worlds,
        tables=tuple(tables),
        table_worlds={
            table.table_id: analyses[table.table_id].worlds
            for table in tables
            if table.table_id in analyses
        },
        entrants=tuple(entrants),
    )


def tournament_analysis_json(analysis: TournamentAnalysis) -> dict[str, Any]:
    """The tournament's analysis as one JSON object (docs/analysis.md, "A tournament")."""
    return {
        "tournament_id": analysis.tournament_id,
        "worlds": analysis.worlds,
        "tables": [
            {
                "table_id": table.table_id,
                "round": table.round,
                "pairing": table.pairing + 1,
                "table": table.leg + 1,
                "worlds": analysis.table_worlds.get(table.table_id),
            }
            for table in analysis.tables
        ],
        "entrants": [
            {
                "account_id": entrant.account_id,
                "name": entrant.name,
                "rank": entrant.rank,
                **summary_json(entrant.total),
                "costliest": [
                    {"table_id": mistake.table_id, **costly}
                    for mistake, costly in zip(
                        entrant.costliest,
                        summary_json(entrant.total)["costliest"],
                        strict=True,
                    )
                ],
                "sides": [
                    {
                        "table_id": side.table_id,
                        "side": side_letters(side.seats),
                        **summary_json(side.summary),
                    }
                    for side in entrant.sides
                ],
            }
            for entrant in analysis.entrants
        ],
    }


def analyse_tournament(
    record: tournament_pb2.TournamentRecord,
    *,
    worlds: int = DEFAULT_WORLDS,
    seed: bytes = b"",
    jobs: int = 1,
    progress: TournamentProgress | None = None,
) -> TournamentAnalysis:
    """Every table of the finished tournament of ``record`` analysed
    (:func:`spades.analysis.analyse`, the same ``worlds``, ``seed`` and ``jobs``), then summed up
    per entrant. The record is checked whole first
    (:func:`spades.records.tournament.verify_tournament`: the revealed seed, every table's deals
    and replay through the engine, the scores and standings), so a tampered or unfinished one
    raises a :class:`~spades.records.RecordError` before anything is judged."""
    verify_tournament(record)
    records = {table.table_id: table for table in record.tables}
    tables = tournament_tables(record.events)
    analyses: dict[str, Analysis] = {}
    for index, table in enumerate(tables):

        def told(done: int, total: int, index: int = index) -> None:
            if progress is not None:
                progress(index, len(tables), done, total)

        analyses[table.table_id] = analyse(
            records[table.table_id], worlds=worlds, seed=seed, jobs=jobs, progress=told
        )
    return tournament_analysis(record.tournament_id, record.events, analyses, worlds=worlds)
