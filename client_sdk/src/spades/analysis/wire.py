"""An analysis on the wire: :class:`~spades.analysis.Analysis` as the ``spades.v1.Analysis``
message the AnalysisService sends, and back.

The message carries what the JSON of docs/analysis.md carries (the plays, the hands with their
par, the totals per seat and per side) and the rules, so a client turns it back into the same
:class:`Analysis` it would have computed itself and prints it the same way
(``spades record analyse TABLE_ID --server``)::

    >>> from spades.engine import Rules
    >>> empty = Analysis("t-1", Rules(), worlds=0, seed=b"", plays=(), hands=())
    >>> analysis_from_proto(analysis_to_proto(empty)) == empty
    True
"""

from __future__ import annotations

from typing import Literal

from spades import protocol
from spades.analysis.judge import HandPar, PlayJudgement
from spades.analysis.report import Analysis, HandBids, Summary
from spades.analysis.tournament import (
    EntrantAnalysis,
    EntrantSide,
    Mistake,
    TournamentAnalysis,
    TournamentTable,
)
from spades.engine import Bid
from spades.v1 import analysis_pb2, view_pb2

__all__ = [
    "analysis_from_proto",
    "analysis_to_proto",
    "tournament_analysis_from_proto",
    "tournament_analysis_to_proto",
]


def analysis_to_proto(analysis: Analysis) -> analysis_pb2.Analysis:
    """The message of ``analysis`` (totals included, as the JSON has them)."""
    rules = analysis.rules
    message = analysis_pb2.Analysis(
        table_id=analysis.table_id,
        rules=protocol.rules_to_proto(rules),
        worlds=analysis.worlds,
        seed=analysis.seed,
    )
    for hand in analysis.hands:
        message.hands.append(_hand_to_proto(hand, analysis))
    message.plays.extend(_play_to_proto(play) for play in analysis.plays)
    for seat in rules.seating.seats:
        message.seats.append(_summary_to_proto(analysis.seat_summary(seat), (seat,)))
    for index, seats in enumerate(rules.sides):
        message.sides.append(_summary_to_proto(analysis.side_summary(index), seats))
    return message


def analysis_from_proto(message: analysis_pb2.Analysis) -> Analysis:
    """The :class:`Analysis` a message carries (its totals are computed again from the plays).
    Raises :class:`~spades.protocol.ProtocolError` for a message no analysis makes."""
    rules = protocol.rules_from_proto(message.rules)
    return Analysis(
        table_id=message.table_id,
        rules=rules,
        worlds=message.worlds,
        seed=message.seed,
        plays=tuple(_play_from_proto(play) for play in message.plays),
        hands=tuple(_hand_from_proto(hand, rules.players) for hand in message.hands),
    )


def _hand_to_proto(hand: HandBids, analysis: Analysis) -> analysis_pb2.AnalysedHand:
    message = analysis_pb2.AnalysedHand(hand=hand.hand, seat_tricks=hand.tricks_won)
    for seat, bid in enumerate(hand.bids):
        made = view_pb2.SeatBid(seat=protocol.seat_to_proto(seat))
        if bid is not None:
            made.bid.CopyFrom(protocol.bid_to_proto(bid))
        message.bids.append(made)
    for index, seats in enumerate(analysis.rules.sides):
        side = [protocol.seat_to_proto(seat) for seat in seats]
        par = message.par_tricks.add(seats=side)
        if hand.par is not None and (tricks := hand.par.tricks[index]) is not None:
            par.tricks = tricks
        message.tricks.add(seats=side, tricks=sum(hand.tricks_won[seat] for seat in seats))
    if hand.par is not None:
        message.leader = protocol.seat_to_proto(hand.par.leader)
    return message


def _hand_from_proto(message: analysis_pb2.AnalysedHand, players: int) -> HandBids:
    bids: list[Bid | None] = [None] * players
    for made in message.bids:
        if made.HasField("bid"):
            bids[protocol.seat_from_proto(made.seat)] = protocol.bid_from_proto(made.bid)
    par = None
    if message.leader:
        par = HandPar(
            hand=message.hand,
            leader=protocol.seat_from_proto(message.leader, "leader"),
            tricks=tuple(
                side.tricks if side.HasField("tricks") else None for side in message.par_tricks
            ),
        )
    return HandBids(message.hand, tuple(bids), par, tuple(message.seat_tricks))


def _play_to_proto(play: PlayJudgement) -> analysis_pb2.AnalysedPlay:
    message = analysis_pb2.AnalysedPlay(
        hand=play.hand,
        trick=play.trick,
        seat=protocol.seat_to_proto(play.seat),
        card=protocol.card_to_proto(play.card),
        best=protocol.cards_to_proto(play.best),
        loss_points=play.loss_points,
        loss_tricks=play.loss_tricks,
        worlds=play.worlds,
        timed_out=play.timed_out,
    )
    for card, points in play.values.items():
        message.values.add(card=protocol.card_to_proto(card), points=points)
    if play.expected_loss_points is not None:
        message.expected_loss_points = play.expected_loss_points
    if play.expected_loss_se is not None:
        message.expected_loss_se = play.expected_loss_se
    return message


def _play_from_proto(message: analysis_pb2.AnalysedPlay) -> PlayJudgement:
    return PlayJudgement(
        hand=message.hand,
        trick=message.trick,
        seat=protocol.seat_from_proto(message.seat),
        card=protocol.card_from_proto(message.card),
        values={protocol.card_from_proto(value.card): value.points for value in message.values},
        best=protocol.cards_from_proto(message.best, "best"),
        loss_points=message.loss_points,
        loss_tricks=message.loss_tricks,
        expected_loss_points=_optional(message, "expected_loss_points"),
        expected_loss_se=_optional(message, "expected_loss_se"),
        worlds=message.worlds,
        timed_out=message.timed_out,
    )


def _summary_to_proto(summary: Summary, seats: tuple[int, ...]) -> analysis_pb2.AnalysisSummary:
    message = analysis_pb2.AnalysisSummary(
        seats=[protocol.seat_to_proto(seat) for seat in seats],
        plays=summary.plays,
        accuracy=summary.accuracy,
        hands=summary.hands,
        loss_points=summary.loss_points,
        loss_points_per_hand=summary.loss_points_per_hand,
        loss_tricks=summary.loss_tricks,
        costliest=[_play_to_proto(play) for play in summary.costliest],
    )
    if summary.expected_loss_points is not None:
        message.expected_loss_points = summary.expected_loss_points
    if summary.expected_loss_se is not None:
        message.expected_loss_se = summary.expected_loss_se
    return message


def _optional(
    message: analysis_pb2.AnalysedPlay | analysis_pb2.AnalysisSummary,
    field: Literal["expected_loss_points", "expected_loss_se"],
) -> float | None:
    """An optional number of a play or a summary: None where the message leaves it unset."""
    return getattr(message, field) if message.HasField(field) else None


def _summary_from_proto(message: analysis_pb2.AnalysisSummary) -> Summary:
    return Summary(
        plays=message.plays,
        perfect=round(message.accuracy * message.plays),
        hands=message.hands,
        loss_points=message.loss_points,
        loss_tricks=message.loss_tricks,
        expected_loss_points=_optional(message, "expected_loss_points"),
        expected_loss_se=_optional(message, "expected_loss_se"),
        costliest=tuple(_play_from_proto(play) for play in message.costliest),
    )


def tournament_analysis_to_proto(analysis: TournamentAnalysis) -> analysis_pb2.TournamentAnalysis:
    """The message of a tournament's analysis (each entrant's costliest plays name their
    table)."""
    message = analysis_pb2.TournamentAnalysis(
        tournament_id=analysis.tournament_id, worlds=analysis.worlds
    )
    for table in analysis.tables:
        message.tables.add(
            table_id=table.table_id,
            round=table.round,
            pairing=table.pairing,
            leg=table.leg,
            home_account_id=table.home_account_id,
            away_account_id=table.away_account_id,
            worlds=analysis.table_worlds.get(table.table_id, 0),
        )
    for entrant in analysis.entrants:
        total = _summary_to_proto(entrant.total, ())
        for play, mistake in zip(total.costliest, entrant.costliest, strict=True):
            play.table_id = mistake.table_id
        message.entrants.add(
            account_id=entrant.account_id,
            name=entrant.name,
            rank=entrant.rank,
            total=total,
            sides=[
                analysis_pb2.EntrantSide(
                    table_id=side.table_id, summary=_summary_to_proto(side.summary, side.seats)
                )
                for side in entrant.sides
            ],
        )
    return message


def tournament_analysis_from_proto(message: analysis_pb2.TournamentAnalysis) -> TournamentAnalysis:
    """The :class:`TournamentAnalysis` a message carries (its totals as sent). Raises
    :class:`~spades.protocol.ProtocolError` for a message no analysis makes."""
    tables = tuple(
        TournamentTable(
            table.table_id,
            table.round,
            table.pairing,
            table.leg,
            table.home_account_id,
            table.away_account_id,
        )
        for table in message.tables
    )
    entrants = []
    for entrant in message.entrants:
        total = _summary_from_proto(entrant.total)
        entrants.append(
            EntrantAnalysis(
                account_id=entrant.account_id,
                name=entrant.name,
                rank=entrant.rank,
                sides=tuple(
                    EntrantSide(
                        side.table_id,
                        tuple(protocol.seat_from_proto(seat) for seat in side.summary.seats),
                        _summary_from_proto(side.summary),
                    )
                    for side in entrant.sides
                ),
                total=total,
                costliest=tuple(
                    Mistake(sent.table_id, play)
                    for sent, play in zip(entrant.total.costliest, total.costliest, strict=True)
                ),
            )
        )
    return TournamentAnalysis(
        tournament_id=message.tournament_id,
        worlds=message.worlds,
        tables=tables,
        table_worlds={table.table_id: table.worlds for table in message.tables},
        entrants=tuple(entrants),
    )
