"""Scoring one hand for one side (RULES.md section 1, "Scoring a hand"), and whether the match
ends once the hand is scored ("Winning").

:func:`counting_tricks` says which tricks count toward a side's contract (a Nil bidder's
tricks do not, unless the table's rules count them for the partner); bots use it to know how
many tricks their side still needs. :func:`match_end` is the table's own rule for the end of the
match; the solver reads it too, to value a hand by the match it may decide.

>>> counting_tricks(Rules(), (0, 2), {0: Bid(0), 2: Bid(4)}, {0: 1, 2: 3})
3
>>> side = score_side(Rules(), (0, 2), {0: Bid(4), 2: Bid(3)}, {0: 5, 2: 4}, 0, 0)
>>> side.hand_points, side.bags
(72, 2)
>>> match_end(Rules(), [510, 480], hand_number=9)  # North-South (side 0) reached 500
(<EndReason.TARGET_SCORE: 'target score'>, 0)
>>> match_end(Rules(), [510, 510], hand_number=9) is None  # tied at the top: play on
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from spades.engine.actions import Bid
from spades.engine.events import EndReason, NilResult, SeatResult, SideResult
from spades.engine.rules import MAX_HAND_SIZE, Rules

NIL_POINTS: Final = 100
BLIND_NIL_POINTS: Final = 200
POINTS_PER_CONTRACT_TRICK: Final = 10


def counting_tricks(
    rules: Rules,
    seats: Sequence[int],
    bids: Mapping[int, Bid | None] | Sequence[Bid | None],
    tricks: Mapping[int, int] | Sequence[int],
) -> int:
    """The tricks ``seats`` (one side) took that count toward the side's contract: every
    seat's, but a Nil bidder's only when ``rules.nil_tricks_count_for_partner`` (otherwise
    they are bags). ``bids`` and ``tricks`` are per seat (a seat with no bid yet counts)."""
    if rules.nil_tricks_count_for_partner:
        return sum(tricks[seat] for seat in seats)
    total = 0
    for seat in seats:
        bid = bids[seat]
        if bid is None or bid.tricks:  # (not bid.is_nil: a plain field, read natively)
            total += tricks[seat]
    return total


def score_side(
    rules: Rules,
    seats: tuple[int, ...],
    bids: Mapping[int, Bid],
    tricks: Mapping[int, int],
    score_before: int,
    bags_before: int,
) -> SideResult:
    """The hand's result for one side, given each seat's bid and tricks and the side's totals."""
    # One pass over the side's seats (every hand scores here: plain loops, no generators).
    contract = team_tricks = nil_tricks = 0
    nil_seats: list[int] = []
    seat_results: list[SeatResult] = []
    for seat in seats:
        bid = bids[seat]
        taken = tricks[seat]
        contract += bid.tricks
        team_tricks += taken
        if not bid.tricks:  # (bid.is_nil, read as the field it is)
            nil_seats.append(seat)
            nil_tricks += taken
        seat_results.append(_seat_result(seat, bid, taken))
    # counting_tricks: a Nil bidder's tricks count only when the rules say so.
    nil_tricks_count = rules.nil_tricks_count_for_partner
    counted = team_tricks if nil_tricks_count else team_tricks - nil_tricks

    contract_points = 0
    contract_made = False
    bags = 0
    # Bags outside a made contract's overtricks are worth a point each on their own.
    loose_bags = 0
    if contract > 0:
        if counted >= contract:
            contract_made = True
            overtricks = counted - contract
            contract_points = POINTS_PER_CONTRACT_TRICK * contract + overtricks
            bags += overtricks
        else:
            contract_points = -POINTS_PER_CONTRACT_TRICK * contract
    elif nil_tricks_count:
        # No contract to count toward: every trick the side took is a bag.
        loose_bags += team_tricks
    if not nil_tricks_count:
        # A Nil bidder's tricks are bags whether or not the partner's contract was made.
        loose_bags += nil_tricks
    bags += loose_bags

    nil_results = []
    nil_points = 0
    for seat in nil_seats:
        value = BLIND_NIL_POINTS if bids[seat].blind else NIL_POINTS
        made = tricks[seat] == 0
        points = value if made else -value
        nil_points += points
        nil_results.append(_nil_result(seat, bids[seat].blind, tricks[seat], made, points))

    hand_points = contract_points + nil_points + loose_bags
    total_bags = bags_before + bags
    penalty = 0
    bag_limit = rules.bag_limit
    while total_bags >= bag_limit:
        total_bags -= bag_limit
        penalty -= rules.bag_penalty
    hand_points += penalty

    return SideResult(
        seats=seats,
        seat_results=tuple(seat_results),
        contract=contract,
        contract_tricks=counted,
        contract_made=contract_made,
        contract_points=contract_points,
        nil_results=tuple(nil_results),
        bags=bags,
        bag_penalty_points=penalty,
        hand_points=hand_points,
        total_score=score_before + hand_points,
        total_bags=total_bags,
    )


def match_end(
    rules: Rules, scores: Sequence[int], hand_number: int
) -> tuple[EndReason, int] | None:
    """Whether the match ends once hand ``hand_number`` is scored and the sides stand at
    ``scores``: why, and the winning side's index (into ``rules.sides``); None when it goes on,
    no end being reached or the highest scores being tied (another hand breaks the tie)."""
    if max(scores) >= rules.target_score:
        reason = EndReason.TARGET_SCORE
    elif rules.loss_threshold is not None and min(scores) <= rules.loss_threshold:
        reason = EndReason.LOSS_THRESHOLD
    elif rules.max_hands is not None and hand_number >= rules.max_hands:
        reason = EndReason.MAX_HANDS
    else:
        return None
    top = max(scores)
    leaders = [index for index, score in enumerate(scores) if score == top]
    if len(leaders) != 1:
        return None
    return reason, leaders[0]


# Every hand scores a result per seat (and per Nil): interned, as they repeat so often. Results
# are immutable values, so a shared one is the same as a new one. Tables are filled on first use.
_SEATS: Final = 4
_TRICKS: Final = MAX_HAND_SIZE + 1
_SEAT_RESULTS: Final[list[SeatResult | None]] = [None] * (_SEATS * 2 * _TRICKS * _TRICKS)
_NIL_RESULTS: Final[list[NilResult | None]] = [None] * (_SEATS * 2 * _TRICKS)


def _seat_result(seat: int, bid: Bid, tricks: int) -> SeatResult:
    if not (0 <= seat < _SEATS and 0 <= bid.tricks < _TRICKS and 0 <= tricks < _TRICKS):
        return SeatResult(seat, bid, tricks)
    index = ((seat * 2 + (1 if bid.blind else 0)) * _TRICKS + bid.tricks) * _TRICKS + tricks
    result = _SEAT_RESULTS[index]
    if result is None:
        result = _SEAT_RESULTS[index] = SeatResult(seat, bid, tricks)
    return result


def _nil_result(seat: int, blind: bool, tricks: int, made: bool, points: int) -> NilResult:
    # (made and points follow from blind and tricks)
    if not (0 <= seat < _SEATS and 0 <= tricks < _TRICKS):
        return NilResult(seat, blind, tricks, made, points)
    index = (seat * 2 + (1 if blind else 0)) * _TRICKS + tricks
    result = _NIL_RESULTS[index]
    if result is None:
        result = _NIL_RESULTS[index] = NilResult(seat, blind, tricks, made, points)
    return result
