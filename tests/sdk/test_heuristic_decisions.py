"""The heuristic bot's Nil and bag decisions, on views built from real deals and plays."""

from __future__ import annotations

import dataclasses

from spades.bot import BotView
from spades.engine import (
    BID,
    PLAY,
    Card,
    MatchState,
    Phase,
    Rules,
    apply,
    legal_actions,
    parse_cards,
    seated_match,
)
from spades.engine.shuffle import first_dealer
from spades_bots.heuristic import HeuristicBot, Plan, Situation, choose_plan

NORTH, EAST, SOUTH, WEST = range(4)


def table(hands: dict[int, str], dealer: int) -> MatchState:
    """A match whose first hand ``dealer`` deals with ``hands`` (unlisted seats get the rest)."""
    given = {seat: list(parse_cards(text)) for seat, text in hands.items()}
    rest = [n for n in range(52) if all(n not in cards for cards in given.values())]
    deal = []
    for seat in range(4):
        cards: list[int] = list(given.get(seat, []))
        while len(cards) < 13:
            cards.append(rest.pop(0))
        deal.append(cards)
    seed = next(bytes([b]) * 32 for b in range(256) if first_dealer(bytes([b]) * 32, 4) == dealer)
    state, _ = seated_match(Rules(), seed, preset_deals=[deal])
    return state


def bid_round(state: MatchState, bids: dict[int, int]) -> MatchState:
    while state.phase is Phase.BIDDING:
        seat = state.seat_to_act()
        state, _ = apply(state, seat, BID[bids[seat]])
    return state


def play(state: MatchState, *cards: str) -> MatchState:
    for text in cards:
        state, _ = apply(state, state.seat_to_act(), PLAY[Card.parse(text)])
    return state


def _view(state: MatchState) -> BotView:
    seat = state.seat_to_act()
    return BotView(state, seat, legal_actions(state, seat))


def _east_nil_after(north_leads: str, hands: dict[int, str]) -> BotView:
    """West deals, so North leads; East bid Nil, the others 4; North has led ``north_leads``."""
    state = bid_round(table(hands, dealer=WEST), {NORTH: 4, EAST: 0, SOUTH: 4, WEST: 4})
    return _view(play(state, north_leads))


BEATABLE = {
    NORTH: "2H 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
    EAST: "9H KH 2D 3D 4D 5D 6D 7D 8D 9D TD JD QD",
    SOUTH: "QH AH 2S 3S 4S 5S 6S 7S 8S 9S TS JS KD",
    WEST: "3H 4H 5H 6H 7H 8H TH JH QS KS AS AD 2C",
}


def test_a_nil_bidder_forced_over_the_lead_plays_its_lowest_winner() -> None:
    # Every heart East holds beats the 2H, but South and West hold higher hearts: the 9H gives
    # them the most room to take the trick (the old bot played the KH and took it).
    view = _east_nil_after("2H", BEATABLE)
    assert view.seat == EAST and sorted(view.legal_cards) == [Card.parse("9H"), Card.parse("KH")]
    assert HeuristicBot().play(view) == Card.parse("9H")


def test_a_nil_bidder_sure_to_take_the_trick_sheds_its_highest_card() -> None:
    # East holds the KH and the AH and nobody else has a heart above the KH: the trick is
    # East's whatever it plays, so it sheds the ace, the card most likely to take a trick later.
    view = _east_nil_after(
        "2H",
        {
            NORTH: "2H 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
            EAST: "KH AH 2D 3D 4D 5D 6D 7D 8D 9D TD JD QD",
            SOUTH: "3H 4H 2S 3S 4S 5S 6S 7S 8S 9S TS JS KD",
            WEST: "5H 6H 7H 8H 9H TH JH QH QS KS AS AD 2C",
        },
    )
    assert HeuristicBot().play(view) == Card.parse("AH")


def test_a_nil_bidder_last_to_play_sheds_its_highest_winner() -> None:
    state = bid_round(
        table(
            {
                NORTH: "2H 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
                EAST: "3H 4H 2D 3D 4D 5D 6D 7D 8D 9D TD JD QD",
                SOUTH: "5H 6H 2S 3S 4S 5S 6S 7S 8S 9S TS JS KD",
                WEST: "9H KH 7H 8H TH JH QH AH QS KS AS AD 2C",
            },
            dealer=WEST,
        ),
        {NORTH: 4, EAST: 4, SOUTH: 4, WEST: 0},
    )
    # West (Nil) is last: North 2H, East 4H, South 6H; all West's hearts win, so the highest goes.
    view = _view(play(state, "2H", "4H", "6H"))
    assert view.seat == WEST
    assert HeuristicBot().play(view) == Card.parse("AH")


SETTABLE = Situation(
    my_bid=None,
    partner=2,
    partner_bid=None,
    team_need=0,  # our contract is made
    opponents_need=4,
    tricks_left=5,  # we must take 2 of the last 5 tricks to set them
    clean_nil_partner=False,
    clean_nil_opponents=(),
    bag_room=6,
    opponents_contract=4,
    bag_penalty=100,
)


def test_with_room_for_the_bags_a_made_side_still_tries_to_set_the_opponents() -> None:
    view = _east_nil_after("2H", BEATABLE)  # (choose_plan reads only the situation)
    assert choose_plan(view, SETTABLE) is Plan.MAKE


def test_near_the_bag_penalty_a_made_side_ducks_rather_than_set_a_small_contract() -> None:
    view = _east_nil_after("2H", BEATABLE)
    near = dataclasses.replace(SETTABLE, bag_room=2)
    assert choose_plan(view, near) is Plan.DUCK
    # A big contract is worth a bag penalty: setting 6 costs them 120 points.
    assert choose_plan(view, dataclasses.replace(near, opponents_contract=6)) is Plan.MAKE
