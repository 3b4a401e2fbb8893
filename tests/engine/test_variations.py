"""The variations of RULES.md section 2, each on a hand-built deal, and how a match ends."""

from __future__ import annotations

import pytest

from spades.engine import (
    BID,
    CONCEDE,
    Bid,
    IllegalAction,
    MatchState,
    Phase,
    PlayCard,
    Rules,
    apply,
    automatic_action,
    card,
    close,
    legal_actions,
    new_match,
    score_side,
    seated_match,
    time_out,
    view,
)
from spades.engine import events as ev

from .scenario import (
    bid_round,
    deal_with,
    hand_scores,
    match_end,
    play,
    play_hands,
    scripted_hand,
    seed_with_dealer,
    table,
)


def legal_cards(state: MatchState) -> set[str]:
    return {
        str(a.card) for a in legal_actions(state, state.seat_to_act()) if isinstance(a, PlayCard)
    }


def refusal(state: MatchState, text: str) -> str:
    with pytest.raises(IllegalAction) as refused:
        apply(state, state.seat_to_act(), PlayCard(card(text)))
    return refused.value.reason


# ---------------------------------------------------------------- 2♣ leads

TWO_OF_CLUBS_HANDS = {
    0: "AH KH QH JH TH 9H 8H 7H 6H 5H 4H 3H 2H",
    1: "AS KS QS JS TS 9S 8S 7S 6S 5S 4S 3S 2S",
    2: "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
}


def test_two_of_clubs_the_holder_leads_it_whoever_deals() -> None:
    rules = Rules(two_of_clubs_leads=True)
    state = bid_round(table(rules, TWO_OF_CLUBS_HANDS, dealer=0))  # East would lead
    assert state.turn == state.leader == 2
    assert legal_cards(state) == {"2C"}
    assert refusal(state, "AC") == "the holder of the 2♣ must lead it to the first trick"


def test_two_of_clubs_a_void_player_may_trump_the_first_trick_which_breaks_spades() -> None:
    rules = Rules(two_of_clubs_leads=True)
    state = play(bid_round(table(rules, TWO_OF_CLUBS_HANDS, dealer=0)), "2C")
    assert state.turn == 3  # West holds only diamonds
    state = play(state, "2D", "2H")
    assert len(legal_cards(state)) == 13  # East: any spade
    state = play(state, "2S")
    assert state.completed_tricks[0].winner == 1 and state.spades_broken
    assert "AS" in legal_cards(state)  # East, all spades, leads one


def test_two_of_clubs_leads_every_hand() -> None:
    rules = Rules(two_of_clubs_leads=True)
    first = deal_with(TWO_OF_CLUBS_HANDS)  # South holds the 2♣
    second = deal_with({3: "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC"})  # then West
    state, _ = seated_match(rules, seed_with_dealer(0), preset_deals=[first, second])
    leaders = []
    while state.hand_number < 3:
        if state.phase is Phase.PLAYING and not state.completed_tricks and not state.trick:
            leaders.append(state.seat_to_act())
            assert legal_cards(state) == {"2C"}
        state, _ = time_out(state)
    assert leaders == [2, 3]  # whoever deals (North, then East)


# ---------------------------------------------------------------- jokers

JOKER_HANDS = {
    0: "BJ 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
    1: "LJ 3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH",
    2: "2S 2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD",
    3: "AS KS QS JS TS 9S 8S 7S 6S 5S 4S 3S AD",
}


def test_jokers_replace_the_two_of_clubs_and_the_two_of_hearts() -> None:
    state = table(Rules(jokers=True), JOKER_HANDS)
    dealt = {c for seat in range(4) for c in state.hand_of(seat)}
    assert len(dealt) == 52
    assert card("2C") not in dealt and card("2H") not in dealt
    assert {card("BJ"), card("LJ")} <= dealt


def test_jokers_the_order_of_trumps_is_bj_lj_2s_as() -> None:
    # West deals; North leads clubs: East, South and West are void and trump.
    rules = Rules(jokers=True)
    state = bid_round(table(rules, JOKER_HANDS, dealer=3))
    state = play(state, "3C", "LJ", "2S", "AS")
    assert state.completed_tricks[0].winner == 1  # LJ > 2♠ > A♠
    state = bid_round(table(rules, JOKER_HANDS, dealer=3))
    state = play(state, "4C", "3H", "2S", "AS")
    assert state.completed_tricks[0].winner == 2  # 2♠ > A♠


def test_jokers_are_spades_for_leading_following_and_breaking() -> None:
    rules = Rules(jokers=True)
    # North holds the Big Joker and clubs: the joker may not be led before spades break.
    state = bid_round(table(rules, JOKER_HANDS, dealer=3))
    assert "BJ" not in legal_cards(state)
    assert refusal(state, "BJ") == "spades are not broken yet, and you hold another suit to lead"
    # East leads hearts; South discards; West (no heart) trumps low; North, void in hearts
    # too, may play the Big Joker as a spade, which wins and breaks spades.
    state = bid_round(table(rules, JOKER_HANDS, dealer=0))
    state = play(state, "3H", "2D")
    assert state.turn == 3
    state = play(state, "3S")
    assert "BJ" in legal_cards(state)
    state = play(state, "BJ")
    assert state.completed_tricks[0].winner == 0 and state.spades_broken


def test_jokers_a_led_joker_must_be_followed_with_a_spade() -> None:
    rules = Rules(jokers=True, spades_must_be_broken=False)
    state = bid_round(table(rules, JOKER_HANDS, dealer=0))  # East leads
    state = play(state, "LJ")
    assert state.turn == 2
    assert legal_cards(state) == {"2S"}
    assert refusal(state, "2D") == "you hold a spade, so you must follow spades"
    state = play(state, "2S")
    assert legal_cards(state) == {f"{r}S" for r in "AKQJT98765 43".replace(" ", "")}
    state = play(state, "AS")
    assert legal_cards(state) == {"BJ"}  # North's only "spade" is the Big Joker
    state = play(state, "BJ")
    assert state.completed_tricks[0].winner == 0


# ---------------------------------------------------------------- spades any time


def test_spades_may_be_led_any_time_when_the_variation_is_on() -> None:
    hands = {0: "2S 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC"}
    state = bid_round(table(Rules(spades_must_be_broken=False), hands, dealer=3))
    assert "2S" in legal_cards(state)
    state = bid_round(table(Rules(), hands, dealer=3))
    assert "2S" not in legal_cards(state)


# ---------------------------------------------------------------- cutthroat


def test_cutthroat_deals_17_each_and_leaves_one_card_out() -> None:
    state, events = play_hands([], Rules(players=3))
    dealt = [e for e in events if isinstance(e, ev.CardsDealt)]
    assert [len(e.cards or ()) for e in dealt] == [17, 17, 17]
    assert len({c for e in dealt for c in e.cards or ()}) == 51
    assert legal_actions(state, state.seat_to_act())[-1] == BID[17]


def test_cutthroat_with_jokers_deals_all_54_cards_18_each() -> None:
    state, _ = play_hands([], Rules(players=3, jokers=True))
    assert [len(state.hand_of(seat)) for seat in range(3)] == [18, 18, 18]
    assert len({c for seat in range(3) for c in state.hand_of(seat)}) == 54


def test_cutthroat_tricks_of_three_each_player_scored_alone() -> None:
    rules = Rules(players=3, max_hands=1)
    state, events = play_hands([], rules)
    order: list[int] = []
    while state.phase is not Phase.ENDED:
        if state.phase is Phase.PLAYING and len(order) < 3:
            order.append(state.seat_to_act())
        action = BID[1] if state.phase is Phase.BIDDING else automatic_action(state)
        state, more = apply(state, state.seat_to_act(), action)
        events.extend(more)
    dealer = state.dealer
    assert dealer is not None
    assert order == [(dealer + k) % 3 for k in range(1, 4)]
    won = [e for e in events if isinstance(e, ev.TrickWon)]
    assert len(won) == 17
    (scored,) = hand_scores(events)
    assert [side.seats for side in scored.sides] == [(0,), (1,), (2,)]
    assert sum(r.tricks for side in scored.sides for r in side.seat_results) == 17
    for side in scored.sides:
        (seat_result,) = side.seat_results
        expected = score_side(
            rules, side.seats, {side.seats[0]: Bid(1)}, {side.seats[0]: seat_result.tricks}, 0, 0
        )
        assert side.hand_points == expected.hand_points


# ---------------------------------------------------------------- bags


def test_other_bag_limit_and_penalty() -> None:
    rules = Rules(bag_limit=5, bag_penalty=50)
    result = score_side(rules, (0, 2), {0: Bid(2), 2: Bid(2)}, {0: 4, 2: 3}, 100, 3)
    assert (result.bags, result.bag_penalty_points, result.total_bags) == (3, -50, 1)
    assert result.hand_points == 43 - 50


def test_bags_past_the_limit_twice_in_one_hand() -> None:
    rules = Rules(bag_limit=3, bag_penalty=100)
    result = score_side(rules, (0, 2), {0: Bid(1), 2: Bid(1)}, {0: 5, 2: 3}, 0, 2)
    assert (result.bags, result.bag_penalty_points, result.total_bags) == (6, -200, 2)


def test_both_partners_nil_all_their_tricks_are_bags() -> None:
    result = score_side(Rules(), (0, 2), {0: Bid.NIL, 2: Bid.NIL}, {0: 0, 2: 3}, 0, 0)
    assert (result.contract, result.contract_points, result.bags) == (0, 0, 3)
    assert result.hand_points == 100 - 100 + 3
    counted = score_side(
        Rules(nil_tricks_count_for_partner=True),
        (0, 2),
        {0: Bid.NIL, 2: Bid.NIL},
        {0: 0, 2: 3},
        0,
        0,
    )
    assert (counted.bags, counted.hand_points) == (3, 3)


def test_failed_blind_nil_costs_200_and_its_tricks_are_bags() -> None:
    result = score_side(
        Rules(blind_nil=True), (0, 2), {0: Bid.BLIND_NIL, 2: Bid(3)}, {0: 1, 2: 3}, 0, 0
    )
    assert result.nil_results[0].points == -200
    assert (result.bags, result.hand_points) == (1, -200 + 30 + 1)


# ---------------------------------------------------------------- the end of a match


def test_reaching_the_target_wins() -> None:
    state, events = play_hands([scripted_hand([5, 2, 5, 1], [5, 2, 5, 1])], Rules(target_score=100))
    end = match_end(events)
    assert end == ev.MatchEnded(ev.EndReason.TARGET_SCORE, (0, 2), (100, 30))
    assert state.is_over and state.turn is None
    assert isinstance(events[-1], ev.SeedRevealed) and events[-1].seed == bytes(32)
    assert view(state, None).seed == bytes(32)


def test_both_past_the_target_and_equal_another_hand_is_played() -> None:
    rules = Rules(target_score=100, bag_limit=20)
    tie = scripted_hand([Bid.NIL, Bid.NIL, Bid(1), Bid(2)], [0, 0, 11, 2])  # 120 each
    state, events = play_hands([tie], rules)
    assert state.scores == [120, 120]
    assert match_end(events) is None and state.hand_number == 2
    state, more = play_hands([tie, scripted_hand([3, 3, 3, 3], [4, 3, 3, 3])], rules)
    end = match_end(more)
    assert end is not None and end.winners == (0, 2) and end.final_scores == (181, 180)


def test_the_loss_threshold_ends_the_match() -> None:
    rules = Rules(loss_threshold=-100)
    set_hand = scripted_hand([5, 5, 5, 6], [1, 5, 1, 6])  # NS -100, EW 110
    state, events = play_hands([set_hand], rules)
    assert match_end(events) == ev.MatchEnded(ev.EndReason.LOSS_THRESHOLD, (1, 3), (-100, 110))
    just_above = scripted_hand([5, 5, 4, 6], [1, 5, 1, 6])  # NS -90
    state, events = play_hands([just_above], rules)
    assert match_end(events) is None and state.scores == [-90, 110]


def test_max_hands_the_higher_score_wins_after_the_last_hand() -> None:
    rules = Rules(max_hands=1)
    _, events = play_hands([scripted_hand([3, 3, 3, 3], [3, 4, 3, 3])], rules)
    assert match_end(events) == ev.MatchEnded(ev.EndReason.MAX_HANDS, (1, 3), (60, 61))


def test_max_hands_a_tie_plays_another_hand() -> None:
    rules = Rules(max_hands=1)
    tie = scripted_hand([5, 5, 5, 5], [3, 3, 3, 4])  # both set: -100 each
    state, events = play_hands([tie], rules)
    assert state.scores == [-100, -100] and match_end(events) is None
    assert state.hand_number == 2
    state, events = play_hands([tie, scripted_hand([3, 3, 3, 3], [4, 3, 3, 3])], rules)
    assert match_end(events) == ev.MatchEnded(ev.EndReason.MAX_HANDS, (0, 2), (-39, -40))


def test_concession_before_the_start_is_refused() -> None:
    state, _ = new_match(Rules(), bytes(32))
    with pytest.raises(IllegalAction) as refused:
        apply(state, 0, CONCEDE)
    assert refused.value.reason == "the match has not started, so there is nothing to concede"


def test_concession_gives_the_match_to_the_other_team_at_once() -> None:
    state = table(dealer=0)
    assert state.turn == 1
    state, events = apply(state, 2, CONCEDE)  # South, not on turn
    assert events[:2] == [
        ev.Conceded(2),
        ev.MatchEnded(ev.EndReason.CONCESSION, (1, 3), (0, 0)),
    ]
    assert isinstance(events[2], ev.SeedRevealed)
    assert state.is_over
    with pytest.raises(IllegalAction, match="the match is over"):
        apply(state, 1, CONCEDE)
    with pytest.raises(IllegalAction, match="the match is over"):
        apply(state, 1, BID[3])


def test_concession_in_cutthroat_goes_to_the_best_of_the_others() -> None:
    state = table(Rules(players=3))
    state, events = apply(state, 0, CONCEDE)
    end = match_end(events)
    assert end is not None and end.winners == (1, 2)  # level at 0: both others


def test_no_action_after_the_end() -> None:
    state, _ = play_hands([scripted_hand([5, 2, 5, 1], [5, 2, 5, 1])], Rules(target_score=100))
    assert state.turn is None and all(legal_actions(state, seat) == [] for seat in range(4))
    with pytest.raises(IllegalAction):
        automatic_action(state)


def test_the_operator_can_close_a_match_and_no_side_wins() -> None:
    from spades.engine import IllegalAction, MatchState, Phase, seated_match
    from spades.engine import events as ev_

    state, events = seated_match(Rules(), seed=bytes(32))
    closed, more = close(state)
    assert more[0] == ev_.MatchEnded(ev_.EndReason.CLOSED, (), (0, 0))
    assert more[1] == ev_.SeedRevealed(bytes(32))
    assert closed.phase is Phase.ENDED and state.phase is not Phase.ENDED
    assert MatchState.from_events(events + more).end == closed.end
    with pytest.raises(IllegalAction, match="already over"):
        close(closed)
