"""An entrant's totals summed up from its tables' analyses (spades.analysis.tournament), on
analyses made by hand so every number is known: the sides it held (North-South when home at a
pairing's first table, East-West at the second), its hands counted at every table (hand 1 of
two tables is two hands), expected losses added and their errors added in squares, its
costliest plays over all tables with their tables, a bye's entrant with no plays, and the
message and the JSON carrying the same."""

from __future__ import annotations

from math import sqrt

import pytest

from spades.analysis import Analysis, PlayJudgement
from spades.analysis.tournament import tournament_analysis, tournament_analysis_json
from spades.analysis.wire import tournament_analysis_from_proto, tournament_analysis_to_proto
from spades.engine import Card, Rules
from spades.v1 import tournament_pb2

FIRST, SECOND = "t-first", "t-second"


def _play(seat: int, trick: int, loss: int, expected: float, error: float) -> PlayJudgement:
    card = Card.parse("2C")
    return PlayJudgement(
        hand=1,
        trick=trick,
        seat=seat,
        card=card,
        values={card: -loss, Card.parse("AC"): 0},
        best=(Card.parse("AC"),) if loss else (card, Card.parse("AC")),
        loss_points=loss,
        loss_tricks=1 if loss else 0,
        expected_loss_points=expected,
        expected_loss_se=error,
        worlds=4,
        timed_out=False,
    )


def _events() -> list[tournament_pb2.TournamentEvent]:
    entrants = [
        tournament_pb2.Entrant(account_id=account, name=account.title())
        for account in ("ann", "bob", "cy")
    ]
    paired = tournament_pb2.RoundPairings(
        round=1,
        pairings=[
            tournament_pb2.Pairing(
                index=0, home_account_id="ann", away_account_id="bob", table_ids=[FIRST, SECOND]
            ),
            tournament_pb2.Pairing(index=1, home_account_id="cy"),  # a bye
        ],
    )
    return [
        tournament_pb2.TournamentEvent(
            sequence=1, started=tournament_pb2.TournamentStarted(entrants=entrants, rounds=1)
        ),
        tournament_pb2.TournamentEvent(sequence=2, round_paired=paired),
    ]


def _analyses() -> dict[str, Analysis]:
    # At each table: one play a seat, North's and East's costly at the first, South's and
    # West's at the second.
    first = (
        _play(0, 1, 10, 2.0, 0.3),
        _play(1, 1, 3, 1.0, 0.4),
        _play(2, 1, 0, 0.5, 0.1),
        _play(3, 1, 0, 0.0, 0.0),
    )
    second = (
        _play(0, 2, 0, 0.0, 0.0),
        _play(1, 2, 0, 0.25, 0.2),
        _play(2, 2, 7, 1.5, 0.6),
        _play(3, 2, 20, 3.0, 1.2),
    )
    return {
        table: Analysis(table, Rules(), worlds=4, seed=b"", plays=plays, hands=())
        for table, plays in ((FIRST, first), (SECOND, second))
    }


def test_each_entrant_sums_its_sides_at_every_table() -> None:
    summed = tournament_analysis("cup", _events(), _analyses(), worlds=4)
    ann, bob, cy = (summed.entrants[i] for i in range(3))
    assert [e.account_id for e in summed.entrants] == ["ann", "bob", "cy"]
    # Ann: home, so North-South at the first table (10, 0) and East-West at the second (0, 20).
    assert [side.seats for side in ann.sides] == [(0, 2), (1, 3)]
    assert (ann.total.plays, ann.total.perfect, ann.total.hands) == (4, 2, 2)
    assert (ann.total.loss_points, ann.total.loss_points_per_hand) == (30, 15.0)
    assert ann.total.expected_loss_points == pytest.approx(2.0 + 0.5 + 0.0 + 0.25 + 0.0 + 3.0)
    assert ann.total.expected_loss_se == pytest.approx(sqrt(0.3**2 + 0.1**2 + 0.2**2 + 1.2**2))
    assert [(m.table_id, m.play.loss_points) for m in ann.costliest] == [
        (SECOND, 20),
        (FIRST, 10),
    ]
    # Bob: East-West at the first table (3, 0), North-South at the second (0, 7).
    assert [side.seats for side in bob.sides] == [(1, 3), (0, 2)]
    assert (bob.total.loss_points, bob.total.accuracy) == (10, 0.5)
    assert [(m.table_id, m.play.loss_points) for m in bob.costliest] == [(SECOND, 7), (FIRST, 3)]
    # Cy had a bye: no table, no plays.
    assert (cy.sides, cy.total.plays, cy.costliest) == ((), 0, ())


def test_the_message_and_the_json_carry_the_same_totals() -> None:
    summed = tournament_analysis("cup", _events(), _analyses(), worlds=4)
    message = tournament_analysis_to_proto(summed)
    ann = message.entrants[0]
    assert [play.table_id for play in ann.total.costliest] == [SECOND, FIRST]
    assert [side.table_id for side in ann.sides] == [FIRST, SECOND]
    back = tournament_analysis_from_proto(message)
    assert tournament_analysis_json(back) == tournament_analysis_json(summed)
    document = tournament_analysis_json(summed)
    assert [table["table"] for table in document["tables"]] == [1, 2]
    first = document["entrants"][0]
    assert (first["plays"], first["hands"], first["loss_points"], first["accuracy"]) == (
        4,
        2,
        30,
        0.5,
    )
    assert [side["side"] for side in first["sides"]] == ["NS", "EW"]
    assert [m["table_id"] for m in first["costliest"]] == [SECOND, FIRST]
