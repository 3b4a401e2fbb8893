"""Bidding: order, legal bids, Nil off, the board minimum, and Blind Nil with its card pass."""

from __future__ import annotations

import pytest

from spades.engine import (
    BID,
    BLIND,
    LOOK,
    Bid,
    Direction,
    IllegalAction,
    MakeBid,
    MatchState,
    PassCards,
    Phase,
    Rules,
    apply,
    automatic_action,
    card,
    legal_actions,
    pass_cards,
    redact,
    seated_match,
    time_out,
    view,
)
from spades.engine import events as ev

from .scenario import bid_round, card_pass, play_hands, scripted_hand, seed_with_dealer, table

BLIND_NIL_RULES = Rules(blind_nil=True)


def bids_of(state: MatchState) -> list[int]:
    return [a.tricks for a in legal_actions(state, state.seat_to_act()) if isinstance(a, MakeBid)]


def refuse(state: MatchState, seat: int, action: object) -> str:
    with pytest.raises(IllegalAction) as refused:
        apply(state, seat, action)  # type: ignore[arg-type]
    return refused.value.reason


# ---------------------------------------------------------------- order and legal bids


@pytest.mark.parametrize("dealer", range(4))
def test_bidding_starts_left_of_the_dealer_and_goes_clockwise(dealer: int) -> None:
    state = table(dealer=dealer)
    assert state.phase is Phase.BIDDING and state.dealer == dealer
    order = []
    while state.phase is Phase.BIDDING:
        order.append(state.seat_to_act())
        state, _ = apply(state, state.seat_to_act(), BID[2])
    assert order == [(dealer + k) % 4 for k in range(1, 5)]
    assert state.phase is Phase.PLAYING and state.turn == (dealer + 1) % 4


@pytest.mark.parametrize("dealer", range(4))
def test_counter_clockwise_bidding_starts_right_of_the_dealer(dealer: int) -> None:
    state = table(Rules(direction=Direction.COUNTER_CLOCKWISE), dealer=dealer)
    order = []
    while state.phase is Phase.BIDDING:
        order.append(state.seat_to_act())
        state, _ = apply(state, state.seat_to_act(), BID[2])
    assert order == [(dealer - k) % 4 for k in range(1, 5)]
    assert state.turn == (dealer - 1) % 4


def test_every_bid_from_nil_to_13_and_no_passing() -> None:
    state = table()
    assert bids_of(state) == list(range(14))
    assert len(legal_actions(state, state.seat_to_act())) == 14
    others = [seat for seat in range(4) if seat != state.turn]
    assert all(legal_actions(state, seat) == [] for seat in others)


def test_a_bid_out_of_turn_is_refused() -> None:
    state = table(dealer=0)  # East bids first
    assert refuse(state, 0, BID[3]) == "it is East's turn, not North's"


def test_a_bid_out_of_range_is_refused() -> None:
    state = table()
    assert (
        refuse(state, state.seat_to_act(), MakeBid(14))
        == "a bid is a number of tricks from 0 (Nil) to 13"
    )


def test_four_bids_may_sum_past_13() -> None:
    state = bid_round(table(), {seat: 13 for seat in range(4)})
    assert state.phase is Phase.PLAYING
    assert [bid.tricks for bid in state.bids if bid] == [13] * 4


def test_everyone_sees_every_earlier_bid() -> None:
    state = table(dealer=0)
    state, events = apply(state, 1, BID[4])
    assert events == [ev.BidMade(1, Bid(4))]
    assert all(redact(events[0], viewer) is events[0] for viewer in (0, 1, 2, 3, None))
    assert all(view(state, viewer).bids == (None, Bid(4), None, None) for viewer in (0, 2, None))


def test_nil_off_bids_are_1_to_13() -> None:
    state = table(Rules(nil_allowed=False))
    assert bids_of(state) == list(range(1, 14))
    assert refuse(state, state.seat_to_act(), BID[0]) == "Nil is not allowed at this table"


# ---------------------------------------------------------------- the board minimum


def board_table(minimum: int = 5, nil_allowed: bool = True) -> MatchState:
    # North deals: East, South, West, North bid in that order; South's partner North bids last.
    return table(Rules(minimum_team_bid=minimum, nil_allowed=nil_allowed), dealer=0)


def test_board_the_first_bidder_of_a_team_may_bid_anything() -> None:
    state = board_table()
    assert bids_of(state) == list(range(14))  # East
    state, _ = apply(state, 1, BID[2])
    assert bids_of(state) == list(range(14))  # South


def test_board_the_second_bidder_must_bring_the_team_to_the_minimum() -> None:
    state = board_table()
    state, _ = apply(state, 1, BID[2])  # East
    state, _ = apply(state, 2, BID[4])  # South
    assert state.turn == 3
    assert bids_of(state) == list(range(3, 14))  # West: 2 + 3 reaches 5, Nil is closed
    assert refuse(state, 3, BID[2]) == (
        "your team must bid at least 5: your partner bid 2, so you must bid at least 3"
    )
    assert refuse(state, 3, BID[0]) == (
        "Nil is open only when your partner's bid reaches the table minimum of 5, "
        "and your partner bid 2"
    )
    state, _ = apply(state, 3, BID[3])
    assert bids_of(state) == list(range(1, 14))  # North: South's 4 + 1 reaches 5
    assert refuse(state, 0, BID[0]).startswith("Nil is open only when")


def test_board_nil_is_open_when_the_partners_bid_alone_reaches_the_minimum() -> None:
    state = board_table()
    state, _ = apply(state, 1, BID[5])
    state, _ = apply(state, 2, BID[6])
    assert bids_of(state) == list(range(14))  # West: East's 5 reaches 5
    state, _ = apply(state, 3, BID[0])
    assert bids_of(state) == list(range(14))  # North: South's 6
    state, _ = apply(state, 0, BID[0])
    assert state.phase is Phase.PLAYING


def test_board_after_a_partners_nil_the_second_bidder_bids_the_whole_minimum() -> None:
    state = board_table(minimum=7)
    state, _ = apply(state, 1, BID[0])
    state, _ = apply(state, 2, BID[1])
    assert bids_of(state) == list(range(7, 14))


def test_board_with_nil_off() -> None:
    state = board_table(minimum=4, nil_allowed=False)
    assert bids_of(state) == list(range(1, 14))
    state, _ = apply(state, 1, BID[9])
    state, _ = apply(state, 2, BID[1])
    assert bids_of(state) == list(range(1, 14))  # no Nil even though 9 >= 4
    state, _ = apply(state, 3, BID[1])
    assert bids_of(state) == list(range(3, 14))


# ---------------------------------------------------------------- Blind Nil


def trailing_table(rules: Rules, ns_points_behind: int) -> tuple[MatchState, list[ev.Event]]:
    """A match after one or two scripted hands, North-South trailing East-West."""
    hands = {
        30: [scripted_hand([3, 4, 2, 4], [3, 4, 2, 4])],  # 50 vs 80
        90: [scripted_hand([1, 6, 1, 5], [1, 6, 1, 5])],  # 20 vs 110
        100: [  # 50 vs 80, then 30 vs 100
            scripted_hand([3, 4, 2, 4], [3, 4, 2, 4]),
            scripted_hand([2, 5, 1, 5], [2, 5, 1, 5]),
        ],
    }[ns_points_behind]
    state, events = play_hands(hands, rules)
    assert state.scores[1] - state.scores[0] == ns_points_behind
    return state, events


def test_blind_nil_needs_the_team_to_trail_by_the_deficit() -> None:
    state, events = trailing_table(BLIND_NIL_RULES, 100)
    started = [e for e in events if isinstance(e, ev.HandStarted)]
    assert [e.blind_nil_eligible for e in started[:2]] == [(), ()]  # level, then 30 behind
    eligible = started[-1].blind_nil_eligible
    assert sorted(eligible) == [0, 2]
    # In bidding order, from the dealer's left.
    dealer = state.dealer
    assert dealer is not None
    assert list(eligible) == [s for s in ((dealer + k) % 4 for k in (1, 2, 3, 4)) if s % 2 == 0]
    assert state.phase is Phase.BLIND_NIL_CHOICE and state.turn == eligible[0]
    assert legal_actions(state, state.seat_to_act()) == [BLIND, LOOK]


def test_blind_nil_trailing_by_less_is_not_eligible() -> None:
    state, _ = trailing_table(BLIND_NIL_RULES, 90)
    assert state.phase is Phase.BIDDING and state.blind_pending == ()
    assert BID[0] in legal_actions(state, state.seat_to_act())


def test_blind_nil_deficit_is_configurable() -> None:
    state, _ = trailing_table(Rules(blind_nil=True, blind_nil_deficit=30), 30)
    assert sorted(state.blind_pending) == [0, 2]
    state, _ = trailing_table(Rules(blind_nil=True, blind_nil_deficit=31), 30)
    assert state.blind_pending == ()


def test_blind_nil_deficit_zero_makes_everyone_eligible_at_the_start() -> None:
    state = table(Rules(blind_nil=True, blind_nil_deficit=0), dealer=2)
    assert state.blind_pending == (3, 0, 1, 2)


def test_blind_nil_off_nobody_is_asked() -> None:
    state, _ = trailing_table(Rules(), 100)
    assert state.phase is Phase.BIDDING


def test_an_eligible_seat_sees_no_cards_until_it_chooses() -> None:
    state, events = seated_match(Rules(blind_nil=True, blind_nil_deficit=0), seed_with_dealer(3))
    for seat in range(4):
        assert view(state, seat).hand is None
        assert view(state, seat).hand_sizes == (13, 13, 13, 13)
        dealt = next(e for e in events if isinstance(e, ev.CardsDealt) and e.seat == seat)
        assert dealt.face_down
        hidden = redact(dealt, seat)
        assert isinstance(hidden, ev.CardsDealt) and hidden.cards is None
    assert state.turn == 0
    assert view(state, 0).legal_actions == (BLIND, LOOK)
    reason = refuse(state, 0, BID[3])
    assert reason == "it is time for the Blind Nil choice (bid Blind Nil or look), not to bid 3"


def test_looking_shows_the_cards_and_gives_up_blind_nil_but_not_nil() -> None:
    state = table(Rules(blind_nil=True, blind_nil_deficit=0), dealer=3)
    hand = tuple(state.hand_of(0))
    state, events = apply(state, 0, LOOK)
    assert events == [ev.BlindNilChosen(0, False), ev.CardsShown(0, hand)]
    assert redact(events[1], 1) == ev.CardsShown(0, None)
    assert redact(events[1], None) == ev.CardsShown(0, None)
    assert view(state, 0).hand == hand
    assert view(state, 1).hand is None  # East still has to choose
    for seat in (1, 2, 3):
        state, _ = apply(state, seat, LOOK)
    assert state.phase is Phase.BIDDING and state.turn == 0
    assert bids_of(state) == list(range(14))  # Nil is still open
    state, events = apply(state, 0, BID[0])
    assert events[0] == ev.BidMade(0, Bid.NIL)


def test_blind_nil_is_a_bid_made_before_seeing_the_cards() -> None:
    state = table(Rules(blind_nil=True, blind_nil_deficit=0), dealer=3)
    hand = tuple(state.hand_of(0))
    state, events = apply(state, 0, BLIND)
    assert events == [ev.BlindNilChosen(0, True), ev.BidMade(0, Bid.BLIND_NIL)]
    for seat in (1, 2, 3):
        state, _ = apply(state, seat, LOOK)
    assert view(state, 0).hand is None  # still blind while the others bid
    assert state.turn == 1  # North has bid; East bids next
    while state.phase is Phase.BIDDING:
        state, events = apply(state, state.seat_to_act(), BID[3])
    assert ev.CardsShown(0, hand) in events  # bidding over: the Blind Nil bidder sees
    assert view(state, 0).hand == hand
    assert state.bids[0] == Bid.BLIND_NIL


def test_the_clock_looks_for_a_seat_that_does_not_choose() -> None:
    state = table(Rules(blind_nil=True, blind_nil_deficit=0), dealer=3)
    assert automatic_action(state) == LOOK
    state, events = time_out(state)
    assert events[0] == ev.TurnTimedOut(0, LOOK)
    assert events[1] == ev.BlindNilChosen(0, False)


# ---------------------------------------------------------------- the Blind Nil card pass


def card_pass_table() -> MatchState:
    """North (blind) and South to pass; East and West looked and everyone has bid."""
    return card_pass(
        Rules(blind_nil=True, blind_nil_deficit=0, blind_nil_pass_cards=2),
        {
            0: "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
            2: "AS KS QS JS TS 9S 8S 7S 6S 5S 4S 3S 2S",
        },
    )


def test_card_pass_the_partner_passes_first_then_the_blind_bidder_sees_and_passes_back() -> None:
    state = card_pass_table()
    assert state.phase is Phase.PASSING and state.turn == 2
    assert view(state, 0).hand is None
    partner_options = legal_actions(state, 2)
    assert len(partner_options) == 78  # 13 choose 2
    assert all(isinstance(option, PassCards) for option in partner_options)

    state, events = apply(state, 2, pass_cards("AS", "KS"))
    passed = ev.CardsPassed(2, 0, (card("KS"), card("AS")), 2)
    assert events[0] == passed
    assert isinstance(events[1], ev.CardsShown) and events[1].seat == 0
    assert card("AS") in state.hand_of(0) and len(state.hand_of(0)) == 15
    assert len(state.hand_of(2)) == 11
    assert view(state, 0).hand == tuple(state.hand_of(0))
    for viewer in (1, 3, None):
        assert redact(passed, viewer) == ev.CardsPassed(2, 0, None, 2)
    assert redact(passed, 0) is passed and redact(passed, 2) is passed

    assert state.turn == 0 and state.phase is Phase.PASSING
    state, events = apply(state, 0, pass_cards("2C", "3C"))
    assert events[0] == ev.CardsPassed(0, 2, (card("2C"), card("3C")), 2)
    assert set(state.hand_of(2)) >= {card("2C"), card("3C")}
    assert card("2C") not in state.hand_of(0) and card("KS") in state.hand_of(0)
    assert [len(state.hand_of(seat)) for seat in range(4)] == [13] * 4
    assert state.phase is Phase.PLAYING and state.turn == 0  # North leads (left of West)


def test_card_pass_refusals() -> None:
    state = card_pass_table()
    assert refuse(state, 2, pass_cards("AS")) == "pass exactly 2 different cards"
    assert refuse(state, 2, PassCards((card("AS"), card("AS")))) == "pass exactly 2 different cards"
    assert refuse(state, 2, pass_cards("AS", "2C")) == "you do not hold the 2♣"
    assert refuse(state, 0, pass_cards("2C", "3C")) == "it is South's turn, not North's"


def test_card_pass_the_clock_passes_the_lowest_cards() -> None:
    state = card_pass_table()
    assert automatic_action(state) == pass_cards("2S", "3S")  # South holds only spades
    state, _ = apply(state, 2, pass_cards("AS", "KS"))
    # North now holds all the clubs and two spades: the two lowest clubs, not a spade.
    assert automatic_action(state) == pass_cards("2C", "3C")


def test_card_pass_a_timed_out_pass_is_not_shown_to_the_others() -> None:
    # RULES.md: the cards are passed face down; the TurnTimedOut event carries them.
    state = card_pass_table()
    _, events = time_out(state)
    timed_out = events[0]
    assert isinstance(timed_out, ev.TurnTimedOut)
    for viewer in (1, 3, None):
        shown = redact(timed_out, viewer)
        assert not (
            isinstance(shown, ev.TurnTimedOut)
            and isinstance(shown.automatic_action, PassCards)
            and shown.automatic_action.cards
        ), f"viewer {viewer} sees {shown}"


def test_no_card_pass_when_both_partners_bid_blind_nil() -> None:
    state = table(Rules(blind_nil=True, blind_nil_deficit=0, blind_nil_pass_cards=2), dealer=3)
    for seat in (0, 1, 2, 3):
        state, _ = apply(state, seat, BLIND if seat in (0, 2) else LOOK)
    state = bid_round(state)
    assert state.phase is Phase.PLAYING
    assert view(state, 0).hand is not None and view(state, 2).hand is not None


def test_card_pass_for_blind_nil_bidders_on_both_sides() -> None:
    # Deficit 0: North and East both bid Blind Nil. Each must pass with its partner, and
    # each must see its cards before play.
    state = table(Rules(blind_nil=True, blind_nil_deficit=0, blind_nil_pass_cards=2), dealer=3)
    for seat in (0, 1, 2, 3):
        state, _ = apply(state, seat, BLIND if seat in (0, 1) else LOOK)
    state = bid_round(state)
    passes = []
    while state.phase is Phase.PASSING:
        passes.append(state.seat_to_act())
        state, _ = apply(state, state.seat_to_act(), automatic_action(state))
    assert sorted(passes) == [0, 1, 2, 3]
    assert state.phase is Phase.PLAYING
    for seat in range(4):
        assert view(state, seat).hand is not None, f"{seat} plays without seeing its cards"


def test_board_minimum_two_blind_nils_cannot_leave_the_team_under_it() -> None:
    # With a board of 5, a team's contract must reach 5: once North bids Blind Nil, South may
    # not bid Blind Nil too (Nil for the second bidder only if the partner's bid reaches 5).
    rules = Rules(blind_nil=True, blind_nil_deficit=0, minimum_team_bid=5)
    state = table(rules, dealer=3)
    state, _ = apply(state, 0, BLIND)
    state, _ = apply(state, 1, LOOK)
    assert state.turn == 2
    assert legal_actions(state, 2) == [LOOK]
    with pytest.raises(IllegalAction, match="minimum of 5"):
        apply(state, 2, BLIND)
    state, _ = apply(state, 2, LOOK)
    state, _ = apply(state, 3, LOOK)
    assert bids_of(state) == list(range(14))  # East bids first (West dealt)
    state, _ = apply(state, 1, BID[3])
    assert bids_of(state) == list(range(5, 14))  # South must carry the whole minimum


def test_card_pass_blind_nil_partners_see_their_cards_after_the_other_sides_pass() -> None:
    # Deficit 0: North and South both bid Blind Nil (no pass between them), East bids Blind
    # Nil and passes with West. Once the passing is over, North and South must see their cards.
    state = table(Rules(blind_nil=True, blind_nil_deficit=0, blind_nil_pass_cards=2), dealer=3)
    for seat in (0, 1, 2, 3):
        state, _ = apply(state, seat, LOOK if seat == 3 else BLIND)
    state = bid_round(state)
    passes = []
    while state.phase is Phase.PASSING:
        passes.append(state.seat_to_act())
        state, _ = apply(state, state.seat_to_act(), automatic_action(state))
    assert passes == [3, 1]
    assert state.phase is Phase.PLAYING
    for seat in range(4):
        assert view(state, seat).hand is not None, f"{seat} plays without seeing its cards"
