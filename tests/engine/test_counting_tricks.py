"""Which tricks count toward a side's contract: a Nil bidder's do not, unless the rules say."""

from __future__ import annotations

from spades.engine import Bid, Rules, counting_tricks, score_side

BIDS = {0: Bid(0), 2: Bid(5), 1: Bid.BLIND_NIL, 3: Bid(4)}
TRICKS = {0: 2, 2: 4, 1: 0, 3: 7}


def test_a_nil_bidders_tricks_do_not_count_by_default() -> None:
    assert counting_tricks(Rules(), (0, 2), BIDS, TRICKS) == 4
    assert counting_tricks(Rules(), (1, 3), BIDS, TRICKS) == 7


def test_they_count_when_the_rules_give_them_to_the_partner() -> None:
    rules = Rules(nil_tricks_count_for_partner=True)
    assert counting_tricks(rules, (0, 2), BIDS, TRICKS) == 6


def test_a_seat_without_a_bid_yet_counts_and_sequences_work_too() -> None:
    bids = (Bid(0), None, Bid(3), None)
    assert counting_tricks(Rules(), (0, 2), bids, (1, 0, 2, 0)) == 2
    assert counting_tricks(Rules(), (1, 3), bids, (1, 3, 2, 4)) == 7
    assert counting_tricks(Rules(players=3), (1,), bids, (1, 3, 2, 4)) == 3


def test_scoring_uses_the_same_count() -> None:
    for rules in (Rules(), Rules(nil_tricks_count_for_partner=True)):
        side = score_side(rules, (0, 2), BIDS, TRICKS, 0, 0)
        assert side.contract_tricks == counting_tricks(rules, (0, 2), BIDS, TRICKS)


def test_a_side_of_two_nil_bids_has_no_contract_to_make_and_its_tricks_are_bags() -> None:
    bids = {0: Bid(0), 2: Bid(0)}
    for rules in (Rules(), Rules(nil_tricks_count_for_partner=True)):
        side = score_side(rules, (0, 2), bids, {0: 1, 2: 0}, 0, 0)
        assert (side.contract, side.contract_made, side.contract_points) == (0, False, 0)
        # North's Nil fails (-100), South's is made (+100), North's trick is a bag (+1).
        assert (side.bags, side.hand_points) == (1, 1)


def test_each_seats_result_names_its_seat_and_says_whether_its_bid_was_blind() -> None:
    rules = Rules(blind_nil=True)
    for north in (Bid(0), Bid.BLIND_NIL, Bid(0)):
        side = score_side(rules, (0, 2), {0: north, 2: Bid(4)}, {0: 0, 2: 4}, 0, 0)
        assert [(result.seat, result.bid) for result in side.seat_results] == [
            (0, north),
            (2, Bid(4)),
        ]
        assert side.nil_results[0].blind is north.blind
