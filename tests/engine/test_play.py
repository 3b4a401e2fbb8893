"""Play: turn order, following suit, breaking spades, who wins a trick, and the end of a hand."""

from __future__ import annotations

import pytest

from spades.engine import (
    BID,
    PLAY,
    Direction,
    IllegalAction,
    MatchState,
    Phase,
    Play,
    PlayCard,
    Rules,
    act,
    apply,
    card,
    legal_actions,
    view,
)
from spades.engine import events as ev
from spades.engine.actions import Action

from .scenario import bid_round, play, play_hands, scripted_hand, table

#: West deals, so North leads. North holds both kinds of card; South only diamonds.
HANDS = {
    0: "AH KH QH 2C 3C 4C 5C 6C 7C 8C 9C 2S 3S",
    1: "JH TH 9H 8H TC JC QC KC AC 4S 5S 6S 7S",
    2: "2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD",
    3: "7H 6H 5H 4H 3H 2H 8S 9S TS JS QS KS AS",
}


def in_play(rules: Rules | None = None, dealer: int = 3) -> MatchState:
    return bid_round(table(rules, HANDS, dealer=dealer))


def legal_cards(state: MatchState) -> set[str]:
    return {
        str(a.card) for a in legal_actions(state, state.seat_to_act()) if isinstance(a, PlayCard)
    }


def refusal(state: MatchState, text: str, seat: int | None = None) -> str:
    with pytest.raises(IllegalAction) as refused:
        apply(state, state.seat_to_act() if seat is None else seat, PlayCard(card(text)))
    return refused.value.reason


def test_the_player_left_of_the_dealer_leads() -> None:
    for dealer in range(4):
        state = bid_round(table(dealer=dealer))
        assert state.phase is Phase.PLAYING
        assert state.turn == state.leader == (dealer + 1) % 4


def test_no_spade_lead_before_spades_are_broken() -> None:
    state = in_play()
    assert state.turn == 0
    assert legal_cards(state) == {"AH", "KH", "QH", *(f"{r}C" for r in "23456789")}
    assert refusal(state, "2S") == "spades are not broken yet, and you hold another suit to lead"


def test_a_leader_holding_only_spades_may_lead_one() -> None:
    state = bid_round(table(hands={0: "AS KS QS JS TS 9S 8S 7S 6S 5S 4S 3S 2S"}, dealer=3))
    assert len(legal_cards(state)) == 13
    state = play(state, "2S")
    assert state.spades_broken


def test_following_suit_is_compulsory_with_the_reason() -> None:
    state = play(in_play(), "QH")
    assert state.turn == 1
    assert legal_cards(state) == {"JH", "TH", "9H", "8H"}
    assert refusal(state, "TC") == "you hold a heart, so you must follow hearts"
    assert refusal(state, "4S") == "you hold a heart, so you must follow hearts"


def test_a_void_player_may_play_anything_and_the_highest_of_the_led_suit_wins() -> None:
    state = play(in_play(), "QH", "JH")
    assert len(legal_cards(state)) == 13  # South holds no heart
    state, events = apply(state, 2, PLAY[card("AD")])  # a higher card off suit does not win
    state, events = apply(state, 3, PLAY[card("7H")])
    assert events == [ev.CardPlayed(3, card("7H")), ev.TrickWon(1, 0, card("QH"))]
    assert state.turn == state.leader == 0  # the winner leads
    assert state.completed_tricks[0].cards == (card("QH"), card("JH"), card("AD"), card("7H"))
    assert state.tricks_won == [1, 0, 0, 0]
    assert not state.spades_broken


def test_a_spade_may_be_played_to_the_first_trick_and_wins_it_and_breaks_spades() -> None:
    state = play(in_play(), "2C", "TC", "3D")
    assert "8S" in legal_cards(state)  # West holds no club
    state, events = apply(state, 3, PLAY[card("8S")])
    assert events[-1] == ev.TrickWon(1, 3, card("8S"))
    assert state.spades_broken and state.turn == 3
    assert "AS" in legal_cards(state)  # now a spade may be led


def test_a_led_spade_must_be_followed_and_the_highest_spade_wins() -> None:
    state = play(in_play(), "2C", "TC", "3D", "8S", "AS")
    assert legal_cards(state) == {"2S", "3S"}
    assert refusal(state, "AH") == "you hold a spade, so you must follow spades"
    state = play(state, "3S", "7S", "4D")
    assert state.completed_tricks[-1].winner == 3


def test_the_highest_trump_beats_the_led_suit() -> None:
    state = play(in_play(), "2C", "AC", "3D", "8S")
    assert state.completed_tricks[-1].winner == 3
    state = play(state, "2H", "AH", "8H", "4D")
    assert state.completed_tricks[-1].winner == 0


def test_a_card_not_held_or_out_of_turn_or_out_of_phase_is_refused() -> None:
    state = in_play()
    assert refusal(state, "AS") == "you do not hold the A♠"
    assert refusal(state, "JH", seat=1) == "it is North's turn, not East's"
    with pytest.raises(IllegalAction, match="it is time for playing a card, not to bid 3"):
        apply(state, 0, BID[3])
    bidding = table(hands=HANDS, dealer=3)
    with pytest.raises(IllegalAction, match="it is time for bidding, not to play QH"):
        apply(bidding, bidding.seat_to_act(), PLAY[card("QH")])
    with pytest.raises(IllegalAction, match="there is no seat 4"):
        apply(state, 4, PLAY[card("QH")])


def test_a_refused_action_changes_nothing() -> None:
    state = in_play()
    before = view(state, None), state.hands[:]
    for action in (PLAY[card("2S")], PLAY[card("AS")], BID[3]):
        with pytest.raises(IllegalAction):
            act(state, 0, action)
        assert (view(state, None), state.hands) == before


def test_act_changes_the_state_in_place_and_apply_does_not() -> None:
    state = in_play()
    copy = state.clone()
    new, events = apply(state, 0, PLAY[card("QH")])
    assert state.trick == [] and new.trick == [Play(0, card("QH"))]
    assert act(copy, 0, PLAY[card("QH")]) == events
    assert view(copy, None) == view(new, None)


@pytest.mark.parametrize("dealer", range(4))
def test_counter_clockwise_play_goes_to_the_right(dealer: int) -> None:
    state = bid_round(table(Rules(direction=Direction.COUNTER_CLOCKWISE), dealer=dealer))
    leader = (dealer - 1) % 4
    assert state.turn == leader
    order = []
    for _ in range(4):
        order.append(state.seat_to_act())
        state, _ = apply(state, state.seat_to_act(), legal_actions(state, state.seat_to_act())[0])
    assert order == [(leader - k) % 4 for k in range(4)]


def test_counter_clockwise_trick_winner_and_current_trick() -> None:
    state = in_play(Rules(direction=Direction.COUNTER_CLOCKWISE), dealer=1)  # North leads
    state = play(state, "QH", "7H")  # North, then West
    assert state.turn == 2
    assert state.current_trick() == [(0, card("QH")), (3, card("7H"))]
    state = play(state, "AD", "JH")  # South, then East
    assert state.completed_tricks[-1].winner == 0


def test_a_hand_is_13_tricks_then_scored_and_the_deal_passes_left() -> None:
    hand = scripted_hand([3, 3, 3, 3], [4, 3, 3, 3])
    state, events = play_hands([hand])
    won = [e for e in events if isinstance(e, ev.TrickWon)]
    assert [e.trick_number for e in won] == list(range(1, 14))
    kinds = [type(e) for e in events]
    scored_at = kinds.index(ev.HandScored)
    assert kinds[scored_at - 1] is ev.TrickWon and kinds[scored_at + 1] is ev.HandStarted
    started = [e for e in events if isinstance(e, ev.HandStarted)]
    assert started[1].dealer == (started[0].dealer + 1) % 4
    assert state.hand_number == 2 and state.phase is Phase.BIDDING
    assert state.turn == (started[1].dealer + 1) % 4
    assert state.tricks_won == [0, 0, 0, 0] and state.completed_tricks == ()
    assert not state.spades_broken
    assert all(len(state.hand_of(seat)) == 13 for seat in range(4))


def test_the_deal_passes_right_counter_clockwise() -> None:
    hand = scripted_hand([3, 3, 3, 3], [4, 3, 3, 3])
    _, events = play_hands([hand], Rules(direction=Direction.COUNTER_CLOCKWISE))
    started = [e for e in events if isinstance(e, ev.HandStarted)]
    assert started[1].dealer == (started[0].dealer - 1) % 4


def test_views_show_the_table_but_not_other_hands() -> None:
    state = play(in_play(), "QH", "JH")
    north, spectator = view(state, 0), view(state, None)
    assert north.hand == tuple(state.hand_of(0))
    assert spectator.hand is None
    assert north.current_trick == spectator.current_trick == ((0, card("QH")), (1, card("JH")))
    assert spectator.hand_sizes == (12, 12, 13, 13)
    assert north.legal_actions == () and spectator.legal_actions == ()
    south_actions: tuple[Action, ...] = view(state, 2).legal_actions
    assert len(south_actions) == 13
