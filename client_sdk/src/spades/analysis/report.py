"""A match's analysis as a whole: the judged plays, each hand's bids beside its par, and the
totals per seat and per side; and its JSON form (documented in docs/analysis.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import sqrt
from typing import Any

from spades.analysis.decisions import SEAT_LETTERS
from spades.analysis.judge import HandPar, PlayJudgement
from spades.engine import Bid, Rules

#: How many of a seat's (or side's) costliest mistakes a summary names.
COSTLIEST = 3


@dataclass(frozen=True, slots=True)
class HandBids:
    """One hand's bids (None for a seat that did not bid: a conceded hand) and its par."""

    hand: int
    bids: tuple[Bid | None, ...]
    par: HandPar | None
    #: The tricks each seat took.
    tricks_won: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Summary:
    """The totals of some plays: one seat's, or one side's."""

    plays: int
    #: Plays that lost no points double dummy.
    perfect: int
    hands: int
    loss_points: int
    loss_tricks: int
    #: None when a play has none (no world sampled: an analysis of 0 worlds).
    expected_loss_points: float | None
    #: The standard error of ``expected_loss_points`` (the worlds of different decisions are
    #: drawn independently, so the errors add in squares); None when a decision had none.
    expected_loss_se: float | None
    costliest: tuple[PlayJudgement, ...]

    @property
    def accuracy(self) -> float:
        """The share of plays that lost no points double dummy (1.0 with no plays)."""
        return self.perfect / self.plays if self.plays else 1.0

    @property
    def loss_points_per_hand(self) -> float:
        return self.loss_points / self.hands if self.hands else 0.0

    @classmethod
    def of(cls, plays: Sequence[PlayJudgement]) -> Summary:
        errors = [play.expected_loss_se for play in plays]
        expected = [play.expected_loss_points for play in plays]
        mistakes = sorted(
            (play for play in plays if play.loss_points > 0),
            key=lambda play: (-play.loss_points, play.hand, play.trick, play.seat),
        )
        return cls(
            plays=len(plays),
            perfect=sum(1 for play in plays if play.loss_points == 0),
            hands=len({play.hand for play in plays}),
            loss_points=sum(play.loss_points for play in plays),
            loss_tricks=sum(play.loss_tricks for play in plays),
            expected_loss_points=(
                None if None in expected else sum(e for e in expected if e is not None)
            ),
            expected_loss_se=(
                None if None in errors else sqrt(sum(e * e for e in errors if e is not None))
            ),
            costliest=tuple(mistakes[:COSTLIEST]),
        )


@dataclass(frozen=True, slots=True)
class Analysis:
    """Every card of a finished match judged, and each hand's bids beside its par."""

    table_id: str
    rules: Rules
    #: Worlds sampled per decision, and the seed they were drawn from.
    worlds: int
    seed: bytes
    plays: tuple[PlayJudgement, ...]
    hands: tuple[HandBids, ...]

    def seat_summary(self, seat: int) -> Summary:
        return Summary.of([play for play in self.plays if play.seat == seat])

    def side_summary(self, side: int) -> Summary:
        seats = self.rules.sides[side]
        return Summary.of([play for play in self.plays if play.seat in seats])

    def hand_plays(self, hand: int) -> list[PlayJudgement]:
        return [play for play in self.plays if play.hand == hand]


def seat_letter(seat: int) -> str:
    return SEAT_LETTERS[seat]


def side_letters(seats: Sequence[int]) -> str:
    """``"NS"``, ``"EW"``, or one seat's letter in cutthroat."""
    return "".join(SEAT_LETTERS[seat] for seat in seats)


def analysis_json(analysis: Analysis) -> dict[str, Any]:
    """The analysis as one JSON object (docs/analysis.md describes every field)."""
    rules = analysis.rules
    return {
        "table_id": analysis.table_id,
        "worlds": analysis.worlds,
        "seed": analysis.seed.hex(),
        "hands": [_hand_json(hand, rules) for hand in analysis.hands],
        "plays": [_play_json(play) for play in analysis.plays],
        "seats": {
            seat_letter(seat): summary_json(analysis.seat_summary(seat))
            for seat in rules.seating.seats
        },
        "sides": {
            side_letters(seats): summary_json(analysis.side_summary(index))
            for index, seats in enumerate(rules.sides)
        },
    }


def _hand_json(hand: HandBids, rules: Rules) -> dict[str, Any]:
    return {
        "hand": hand.hand,
        "bids": {
            seat_letter(seat): None if bid is None else str(bid)
            for seat, bid in enumerate(hand.bids)
        },
        "par_tricks": {
            side_letters(seats): None if hand.par is None else hand.par.tricks[index]
            for index, seats in enumerate(rules.sides)
        },
        "tricks": {
            side_letters(seats): sum(hand.tricks_won[seat] for seat in seats)
            for seats in rules.sides
        },
    }


def _play_json(play: PlayJudgement) -> dict[str, Any]:
    return {
        "hand": play.hand,
        "trick": play.trick,
        "seat": seat_letter(play.seat),
        "card": str(play.card),
        "best": [str(card) for card in play.best],
        "values": {str(card): value for card, value in play.values.items()},
        "loss_points": play.loss_points,
        "loss_tricks": play.loss_tricks,
        "expected_loss_points": _rounded(play.expected_loss_points),
        "expected_loss_se": _rounded(play.expected_loss_se),
        "worlds": play.worlds,
        "timed_out": play.timed_out,
    }


def summary_json(summary: Summary) -> dict[str, Any]:
    return {
        "plays": summary.plays,
        "accuracy": round(summary.accuracy, 4),
        "hands": summary.hands,
        "loss_points": summary.loss_points,
        "loss_points_per_hand": round(summary.loss_points_per_hand, 3),
        "loss_tricks": summary.loss_tricks,
        "expected_loss_points": _rounded(summary.expected_loss_points),
        "expected_loss_se": _rounded(summary.expected_loss_se),
        "costliest": [
            {
                "hand": play.hand,
                "trick": play.trick,
                "seat": seat_letter(play.seat),
                "card": str(play.card),
                "best": [str(card) for card in play.best],
                "loss_points": play.loss_points,
            }
            for play in summary.costliest
        ],
    }


def _rounded(number: float | None) -> float | None:
    return None if number is None else round(number, 3)
