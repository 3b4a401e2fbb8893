"""One order for the cheapest cards to give away: the clock, the SDK default and the bots.

With jokers the 2♠ is the third-highest trump (RULES.md section 2), so it is given away after
the A♠, never as the "lowest spade" (the SDK's and the heuristic's own orders used to give it
away first).
"""

from __future__ import annotations

from spades.bot import Bot, BotView
from spades.engine import (
    PLAY,
    Card,
    MatchState,
    Phase,
    Rules,
    automatic_action,
    cheapest_cards,
    parse_cards,
    pass_cards,
)
from spades_bots.heuristic import HeuristicBot

from .scenario import bid_round, card_pass, table

ALL_TRUMPS_BUT_FOUR_AND_FIVE = "BJ LJ AS KS QS JS TS 9S 8S 7S 6S 3S 2S"


def names(cards: list[Card]) -> list[str]:
    return [str(c) for c in cards]


def test_other_suits_by_rank_then_trumps_by_power() -> None:
    hand = parse_cards("AS 2S 3S KH 2H 2D 3C")
    assert names(cheapest_cards(Rules(), hand)) == ["2D", "2H", "3C", "KH", "2S", "3S", "AS"]


def test_with_jokers_the_two_of_spades_is_a_high_trump() -> None:
    hand = parse_cards("BJ LJ AS 2S 3S KH")
    assert names(cheapest_cards(Rules(jokers=True), hand)) == ["KH", "3S", "AS", "2S", "LJ", "BJ"]


def test_every_card_has_its_own_place() -> None:
    for rules in (Rules(), Rules(jokers=True), Rules(players=3, jokers=True)):
        places = rules.game.cheapness
        assert sorted(places) == list(range(54))
        deck = cheapest_cards(rules, rules.game.deck)
        assert [places[c] for c in deck] == sorted(places[c] for c in deck)


def test_the_clock_plays_the_cheapest_legal_card_with_jokers() -> None:
    # East holds only trumps, the lowest by rank being the 2♠ and by power the 5♠.
    hand = "BJ LJ AS KS QS JS TS 9S 8S 7S 6S 5S 2S"
    state = bid_round(table(Rules(jokers=True), {1: hand}, dealer=0))
    assert state.phase is Phase.PLAYING and state.turn == 1
    assert automatic_action(state) == PLAY[Card.parse("5S")]


def jokers_card_pass() -> MatchState:
    """North bid Blind Nil; South, holding only trumps, passes first."""
    rules = Rules(jokers=True, blind_nil=True, blind_nil_deficit=0, blind_nil_pass_cards=2)
    return card_pass(rules, {2: ALL_TRUMPS_BUT_FOUR_AND_FIVE})


def test_the_clock_the_sdk_default_and_the_heuristic_pass_the_same_cards() -> None:
    state = jokers_card_pass()
    assert state.phase is Phase.PASSING and state.turn == 2
    view = BotView(state, 2)
    assert len(view.hand) == 13
    expected = ["3S", "6S"]
    assert automatic_action(state) == pass_cards(*expected)
    assert names(Bot().pass_cards(view)) == expected
    assert names(HeuristicBot().pass_cards(view)) == expected
