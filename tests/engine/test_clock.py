"""The table's clock: what the engine does for a seat whose time ran out (RULES.md section 3)."""

from __future__ import annotations

import pytest

from spades.engine import (
    BID,
    LOOK,
    PLAY,
    Bid,
    IllegalAction,
    MatchState,
    Play,
    Rules,
    apply,
    automatic_action,
    card,
    legal_actions,
    new_match,
    time_out,
    view,
)
from spades.engine import events as ev

from .scenario import bid_round, play, table

HANDS = {
    0: "AH KH QH 2C 3C 4C 5C 6C 7C 8C 9C 2S 3S",
    1: "JH TH 9H 8H TC JC QC KC AC 4S 5S 6S 7S",
    2: "2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD",
    3: "7H 6H 5H 4H 3H 2H 8S 9S TS JS QS KS AS",
}


def in_play(rules: Rules | None = None) -> MatchState:
    return bid_round(table(rules, HANDS, dealer=3))  # North leads


def test_a_timed_out_bid_is_1() -> None:
    state = table()
    seat = state.seat_to_act()
    assert automatic_action(state) == BID[1]
    new, events = time_out(state)
    assert events == [ev.TurnTimedOut(seat, BID[1]), ev.BidMade(seat, Bid(1))]
    assert new.timeouts == 1 and state.timeouts == 0
    assert new.turn == (seat + 1) % 4


def test_a_timed_out_bid_with_nil_off_is_1() -> None:
    assert automatic_action(table(Rules(nil_allowed=False))) == BID[1]


def test_a_timed_out_bid_under_a_board_is_the_lowest_that_reaches_it() -> None:
    state = table(Rules(minimum_team_bid=5), dealer=0)
    state, _ = apply(state, 1, BID[4])
    state, _ = apply(state, 2, BID[2])
    assert automatic_action(state) == BID[1]  # West: East's 4 + 1
    state, _ = apply(state, 3, BID[4])
    assert automatic_action(state) == BID[3]  # North: South's 2 + 3


def test_a_timed_out_blind_nil_choice_is_look() -> None:
    state = table(Rules(blind_nil=True, blind_nil_deficit=0))
    assert automatic_action(state) == LOOK


def test_a_timed_out_lead_is_the_lowest_non_spade() -> None:
    state = in_play()
    assert automatic_action(state) == PLAY[card("2C")]


def test_a_timed_out_follow_is_the_lowest_of_the_led_suit() -> None:
    state = play(in_play(), "QH")
    assert automatic_action(state) == PLAY[card("8H")]


def test_a_timed_out_void_player_discards_low_rather_than_trumps() -> None:
    state = play(in_play(), "2C", "TC", "2D")
    assert state.turn == 3  # West: hearts and spades, no club
    assert automatic_action(state) == PLAY[card("2H")]


def test_a_timed_out_player_with_only_spades_plays_the_lowest_spade() -> None:
    state = bid_round(table(hands={0: "AS KS QS JS TS 9S 8S 7S 6S 5S 4S 3S 2S"}, dealer=3))
    assert automatic_action(state) == PLAY[card("2S")]


def test_with_jokers_the_lowest_trump_is_the_three_of_spades() -> None:
    hands = {0: "BJ LJ 2S AS KS QS JS TS 9S 8S 7S 6S 3S"}
    state = bid_round(table(Rules(jokers=True), hands, dealer=3))
    assert automatic_action(state) == PLAY[card("3S")]


def test_the_lowest_rank_across_suits() -> None:
    state = bid_round(table(hands={0: "9C 5D KH 2S 3S 4S 5S 6S 7S 8S 9S TS JS"}, dealer=3))
    assert automatic_action(state) == PLAY[card("5D")]


def test_a_timed_out_play_is_recorded_then_played() -> None:
    state = in_play()
    new, events = time_out(state)
    assert events[0] == ev.TurnTimedOut(0, PLAY[card("2C")])
    assert events[1] == ev.CardPlayed(0, card("2C"))
    assert new.trick == [Play(0, card("2C"))]
    assert view(new, None).current_trick == ((0, card("2C")),)


def test_a_whole_match_can_be_played_by_the_clock() -> None:
    state = table(Rules(max_hands=2))
    steps = 0
    while not state.is_over:
        state, _ = time_out(state)
        steps += 1
    assert state.hand_number >= 2 and state.timeouts == steps


def test_no_turn_to_time_out_before_the_start() -> None:
    state, _ = new_match(Rules(), bytes(32))
    with pytest.raises(IllegalAction, match="no one is to act"):
        automatic_action(state)
    with pytest.raises(IllegalAction):
        time_out(state)


def test_the_seat_on_turn_may_claim_its_extension_once_per_turn() -> None:
    from spades.engine import CLAIM_EXTENSION, IllegalAction, seated_match
    from spades.engine import events as ev_

    state, _ = seated_match(Rules(), seed=bytes(32))
    seat = state.seat_to_act()
    other = (seat + 1) % 4
    with pytest.raises(IllegalAction, match="turn"):
        apply(state, other, CLAIM_EXTENSION)
    state, events = apply(state, seat, CLAIM_EXTENSION)
    assert events == [ev_.ExtensionClaimed(seat)]
    with pytest.raises(IllegalAction, match="already claimed"):
        apply(state, seat, CLAIM_EXTENSION)
    state, _ = apply(state, seat, legal_actions(state, seat)[1])
    state, events = apply(state, state.seat_to_act(), CLAIM_EXTENSION)
    assert events == [ev_.ExtensionClaimed(state.seat_to_act())]


def test_no_extension_to_claim_when_the_clock_has_none() -> None:
    from spades.engine import CLAIM_EXTENSION, Clock, IllegalAction, seated_match

    state, _ = seated_match(Rules(clock=Clock(1000, 0)), seed=bytes(32))
    with pytest.raises(IllegalAction, match="no extension"):
        apply(state, state.seat_to_act(), CLAIM_EXTENSION)
