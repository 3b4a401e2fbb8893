"""The heuristic bot against the random bot, on the engine in this process (no server)."""

from __future__ import annotations

import hashlib

import pytest

from spades.bot import BotView, SeatTracker, run_local_match
from spades.engine import BID, Rules, parse_cards, seated_match
from spades_bots.heuristic import HeuristicBot, Powers, estimate_tricks, nil_shape
from spades_bots.random_bot import RandomBot


def test_heuristic_beats_random_by_a_clear_margin_in_duplicate() -> None:
    """20 deals, each played twice with the partnerships swapped (same cards, so luck cancels)."""
    rules = Rules(max_hands=4)
    margin = 0
    hands = 0
    wins = 0
    for number in range(20):
        seed = hashlib.sha256(f"duplicate {number}".encode()).digest()
        for heuristic_side in (0, 1):
            bots = [
                HeuristicBot() if seat in rules.sides[heuristic_side] else RandomBot(seat + number)
                for seat in range(4)
            ]
            final = run_local_match(bots, rules, seed)
            margin += final.scores[heuristic_side] - final.scores[1 - heuristic_side]
            hands += final.hand_number
            wins += final.scores[heuristic_side] > final.scores[1 - heuristic_side]
    assert wins >= 38
    assert margin / hands > 80  # points per hand


@pytest.mark.parametrize(
    "rules",
    [
        Rules(players=3, jokers=True, max_hands=3),
        Rules(jokers=True, max_hands=3),
        Rules(nil_allowed=False, max_hands=3),
        Rules(minimum_team_bid=5, blind_nil=True, blind_nil_deficit=0, max_hands=3),
        Rules(blind_nil=True, blind_nil_deficit=0, blind_nil_pass_cards=2, max_hands=3),
        Rules(two_of_clubs_leads=True, max_hands=3),
    ],
    ids=["cutthroat-jokers", "jokers", "no-nil", "board-5", "blind-nil-pass", "two-of-clubs"],
)
def test_heuristic_plays_every_variation_legally(
    rules: Rules, caplog: pytest.LogCaptureFixture
) -> None:
    final = run_local_match([HeuristicBot() for _ in range(rules.players)], rules, bytes(32))
    assert final.is_over
    assert not [record for record in caplog.records if record.name == "spades.bot"]
    if not rules.nil_allowed:
        assert not any(
            result.bid.is_nil
            for hand in final.hand_results
            for side in hand.sides
            for result in side.seat_results
        )


def _view_with(hand: str, rules: Rules | None = None, lowest_bid: int = 0) -> BotView:
    rules = rules or Rules()
    cards: list[int] = list(parse_cards(hand))
    rest = [card for card in range(52) if card not in cards]
    deal = [cards, rest[:13], rest[13:26], rest[26:39]]
    _, events = seated_match(rules, bytes(32), preset_deals=[deal])
    tracker = SeatTracker(0)
    for event in events:
        tracker.fold(event)
    return tracker.view([BID[tricks] for tricks in range(lowest_bid, 14)])  # North to bid


def test_trick_counting() -> None:
    powers = Powers(Rules())
    strong = parse_cards("AS KS QS 5S 3S AH KH AD 4D 3D 2C 3C 4C")
    assert 6.5 <= estimate_tricks(strong, Rules(), powers) <= 8.5
    weak = parse_cards("2S 3S 4H 5H 6H 7H 2D 3D 4D 5D 6C 7C 8C")
    assert estimate_tricks(weak, Rules(), powers) < 1
    assert nil_shape(weak, powers)
    assert not nil_shape(parse_cards("AC 3S 4H 5H 6H 7H 2D 3D 4D 5D 6C 7C 8C"), powers)


def test_the_heuristic_bot_is_deterministic_and_bids_nil_on_a_nil_hand() -> None:
    bot = HeuristicBot()
    weak = _view_with("2S 3S 4H 5H 6H 7H 2D 3D 4D 5D 6C 7C 8C")
    assert bot.bid(weak).answer == bot.bid(weak).answer == 0
    strong = _view_with("AS KS QS JS 3S AH KH AD 4D 3D 2C 3C 4C")
    assert 7 <= bot.bid(strong).answer <= 10
    no_nil = _view_with("2S 3S 4H 5H 6H 7H 2D 3D 4D 5D 6C 7C 8C", Rules(nil_allowed=False), 1)
    assert bot.bid(no_nil).answer == 1
