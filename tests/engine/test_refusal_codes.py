"""The engine decides each refusal's reason code where it decides the refusal."""

from __future__ import annotations

import pytest

from spades.engine import (
    BID,
    CLAIM_EXTENSION,
    PLAY,
    Clock,
    IllegalAction,
    InvalidRules,
    MakeBid,
    MatchState,
    PassCards,
    Phase,
    Rules,
    act,
    apply,
    apply_seat,
    close,
    leave_seat,
    legal_actions,
    new_match,
    seated_match,
)
from spades.engine import events as ev
from spades.engine.cards import CARDS
from spades.reasons import Reason

from .scenario import table


def refusal(state: MatchState, seat: int, action: object) -> IllegalAction:
    with pytest.raises(IllegalAction) as refused:
        apply(state, seat, action)  # type: ignore[arg-type]
    return refused.value


def test_bidding_refusals() -> None:
    state, _ = seated_match(Rules(nil_allowed=False), seed=bytes(32))
    turn = state.seat_to_act()
    other = (turn + 1) % 4
    assert refusal(state, other, BID[3]).code is Reason.NOT_YOUR_TURN
    assert refusal(state, turn, PLAY[0]).code is Reason.WRONG_PHASE
    assert refusal(state, turn, MakeBid(0)).code is Reason.NIL_NOT_ALLOWED
    too_many = refusal(state, turn, MakeBid(14))
    assert (too_many.code, too_many.field) == (Reason.BID_OUT_OF_RANGE, "bid.tricks")
    # No table deals 1,000,000 cards: impossible whoever's turn it is, checked first.
    for seat in (turn, other):
        impossible = refusal(state, seat, MakeBid(1_000_000))
        assert (impossible.code, impossible.field) == (Reason.IMPOSSIBLE_BID, "bid.tricks")
    card = CARDS[0]
    for cards in ((card,), (card, card), (card, CARDS[1], CARDS[2])):
        impossible = refusal(state, other, PassCards(cards))
        assert (impossible.code, impossible.field) == (Reason.IMPOSSIBLE_PASS, "card_pass.cards")


def test_play_refusals() -> None:
    state, _ = seated_match(Rules(clock=Clock(extension_millis=0)), seed=bytes(32))
    while state.phase is not Phase.PLAYING:
        act(state, state.seat_to_act(), BID[1])
    leader = state.seat_to_act()
    hand = state.hand_of(leader)
    assert refusal(state, leader, CLAIM_EXTENSION).code is Reason.NO_EXTENSION
    spades = [card for card in hand if card.suit == 3]
    assert spades and len(spades) < len(hand)  # (the seed's leader holds both)
    assert refusal(state, leader, PLAY[spades[0]]).code is Reason.SPADES_NOT_BROKEN
    missing = next(card for card in CARDS[:52] if card not in hand)
    not_held = refusal(state, leader, PLAY[missing])
    assert (not_held.code, not_held.field) == (Reason.CARD_NOT_HELD, "play_card")
    led = next(card for card in hand if card.suit != 3)
    act(state, leader, PLAY[led])
    second = state.seat_to_act()
    second_hand = state.hand_of(second)
    off_suit = [card for card in second_hand if card.suit != led.suit]
    assert off_suit and len(off_suit) < len(second_hand)  # (the seed's second seat can follow)
    refused = refusal(state, second, PLAY[off_suit[0]])
    assert refused.code is Reason.MUST_FOLLOW_SUIT
    assert refused.reason.startswith("you hold a")


def test_the_two_of_clubs_lead() -> None:
    state, _ = seated_match(Rules(two_of_clubs_leads=True), seed=bytes(32))
    while state.phase is not Phase.PLAYING:
        act(state, state.seat_to_act(), BID[1])
    leader = state.seat_to_act()
    other = next(card for card in state.hand_of(leader) if card != 0)  # 0 is the 2♣
    assert refusal(state, leader, PLAY[other]).code is Reason.MUST_LEAD_TWO_OF_CLUBS


def test_seating_and_ending_refusals() -> None:
    state, _ = new_match(Rules(), seed=bytes(32))
    state, _ = apply_seat(state, 0, "north")
    with pytest.raises(IllegalAction) as taken:
        apply_seat(state, 0, "again")
    assert taken.value.code is Reason.SEAT_TAKEN
    with pytest.raises(IllegalAction) as empty:
        leave_seat(state, 1)
    assert empty.value.code is Reason.SEAT_EMPTY
    assert refusal(state, 0, BID[3]).code is Reason.MATCH_NOT_STARTED
    played, _ = seated_match(Rules(), seed=bytes(32))
    ended, _ = close(played)
    assert refusal(ended, 0, BID[3]).code is Reason.MATCH_OVER
    with pytest.raises(IllegalAction) as over:
        close(ended)
    assert over.value.code is Reason.MATCH_OVER


def test_rules_and_deals_refusals_name_their_code() -> None:
    with pytest.raises(InvalidRules) as rules:
        Rules(target_score=50)
    assert (rules.value.code, rules.value.field) == (Reason.INVALID_RULES, "target_score")
    with pytest.raises(InvalidRules) as deals:
        new_match(Rules(), preset_deals=[[range(13)] * 4])
    assert deals.value.code is Reason.INVALID_DEALS


def test_a_turn_action_without_a_turn_says_why_in_words() -> None:
    waiting, _ = new_match(Rules(), seed=bytes(32))
    not_started = refusal(waiting, 0, BID[3])
    assert (not_started.code, not_started.reason) == (
        Reason.MATCH_NOT_STARTED,
        "the match has not started: seats are still free",
    )
    played, _ = seated_match(Rules(), seed=bytes(32))
    ended, _ = close(played)
    over = refusal(ended, 0, BID[3])
    assert (over.code, over.reason) == (Reason.MATCH_OVER, "the match is over")
    # A state folded from a log that stops after a trick's last card, before its TrickWon (as a
    # reader of the log may hold): a hand in play with no seat on turn.
    state, events = seated_match(Rules(), seed=bytes(32))
    while not state.completed_tricks:
        seat = state.seat_to_act()
        state, made = apply(state, seat, legal_actions(state, seat)[0])
        events += made
    last_card = max(i for i, event in enumerate(events) if isinstance(event, ev.CardPlayed))
    between = MatchState.from_events(events[: last_card + 1])
    assert between.phase is Phase.PLAYING and between.turn is None
    nobody = refusal(between, 0, PLAY[0])
    assert (nobody.code, nobody.reason) == (Reason.NO_ONE_TO_ACT, "no one is to act now")


def test_a_bid_below_the_team_minimum_says_the_lowest_bid_left() -> None:
    state = table(Rules(minimum_team_bid=5), dealer=0)  # East bids first, West (partner) third
    state, _ = apply(state, 1, MakeBid(2))
    state, _ = apply(state, 2, MakeBid(3))
    low = refusal(state, 3, MakeBid(1))
    assert (low.code, low.reason) == (
        Reason.BID_BELOW_TEAM_MINIMUM,
        "your team must bid at least 5: your partner bid 2, so you must bid at least 3",
    )
    nil = refusal(state, 3, MakeBid(0))
    assert (nil.code, nil.reason) == (
        Reason.NIL_NOT_ALLOWED,
        "Nil is open only when your partner's bid reaches the table minimum of 5, and your "
        "partner bid 2",
    )


def test_a_bid_of_the_largest_hand_is_possible_and_only_out_of_range_elsewhere() -> None:
    largest, _ = seated_match(Rules(players=3, jokers=True), seed=bytes(32))
    assert largest.game.hand_size == 18
    apply(largest, largest.seat_to_act(), MakeBid(18))  # every trick of an 18-card hand
    standard, _ = seated_match(Rules(), seed=bytes(32))
    assert refusal(standard, standard.seat_to_act(), MakeBid(18)).code is Reason.BID_OUT_OF_RANGE
    assert refusal(standard, standard.seat_to_act(), MakeBid(19)).code is Reason.IMPOSSIBLE_BID
