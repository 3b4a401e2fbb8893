"""Scoring one hand for one side (RULES.md section 1, "Scoring a hand").

>>> side = score_side(Rules(), (0, 2), {0: Bid(4), 2: Bid(3)}, {0: 5, 2: 4}, 0, 0)
>>> side.hand_points, side.bags
(72, 2)
"""

from __future__ import annotations

from collections.abc import Mapping

from spades.engine.actions import Bid
from spades.engine.events import NilResult, SeatResult, SideResult
from spades.engine.rules import Rules

NIL_POINTS = 100
BLIND_NIL_POINTS = 200
POINTS_PER_CONTRACT_TRICK = 10


def score_side(
    rules: Rules,
    seats: tuple[int, ...],
    bids: Mapping[int, Bid],
    tricks: Mapping[int, int],
    score_before: int,
    bags_before: int,
) -> SideResult:
    """The hand's result for one side, given each seat's bid and tricks and the side's totals."""
    contract = sum(bids[seat].tricks for seat in seats)
    nil_seats = [seat for seat in seats if bids[seat].is_nil]
    team_tricks = sum(tricks[seat] for seat in seats)
    nil_tricks = sum(tricks[seat] for seat in nil_seats)
    counting_tricks = (
        team_tricks if rules.nil_tricks_count_for_partner else team_tricks - nil_tricks
    )

    contract_points = 0
    contract_made = False
    bags = 0
    # Bags outside a made contract's overtricks are worth a point each on their own.
    loose_bags = 0
    if contract > 0:
        if counting_tricks >= contract:
            contract_made = True
            overtricks = counting_tricks - contract
            contract_points = POINTS_PER_CONTRACT_TRICK * contract + overtricks
            bags += overtricks
        else:
            contract_points = -POINTS_PER_CONTRACT_TRICK * contract
    elif rules.nil_tricks_count_for_partner:
        # No contract to count toward: every trick the side took is a bag.
        loose_bags += team_tricks
    if not rules.nil_tricks_count_for_partner:
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
        nil_results.append(NilResult(seat, bids[seat].blind, tricks[seat], made, points))

    hand_points = contract_points + nil_points + loose_bags
    total_bags = bags_before + bags
    penalty = 0
    while total_bags >= rules.bag_limit:
        total_bags -= rules.bag_limit
        penalty -= rules.bag_penalty
    hand_points += penalty

    return SideResult(
        seats=seats,
        seat_results=tuple(SeatResult(seat, bids[seat], tricks[seat]) for seat in seats),
        contract=contract,
        contract_tricks=counting_tricks,
        contract_made=contract_made,
        contract_points=contract_points,
        nil_results=tuple(nil_results),
        bags=bags,
        bag_penalty_points=penalty,
        hand_points=hand_points,
        total_score=score_before + hand_points,
        total_bags=total_bags,
    )
